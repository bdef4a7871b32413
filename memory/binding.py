"""The database belongs to one workspace (SPEC §1).

Rows (proposals, runs, cursors, tokens) describe files of one workspace: a proposal's base
hash is of a file there, a cursor counts bytes of a note there. Run against another
workspace, the same rows are wrong — a proposal that can never be approved, cursors that
skip notes. So the database records the workspace it serves (the first start claims it) and
every way in refuses another one with a message that says what to do:

- `memory_init` (what `make run` starts with), `memory_demo`, `memory_worker` and `mcp`
  check before they do anything;
- a web process checks on its first request (WorkspaceCheckMiddleware), and answers 503
  with the message while they differ.

The check is one indexed read, cached per process and workspace root.
"""

from __future__ import annotations

import threading

from django.core.management.base import CommandError
from django.db import IntegrityError, transaction
from django.utils import timezone

from memory import workspace
from memory.errors import DomainError
from memory.models import WorkspaceBinding

_checked: set[str] = set()
_lock = threading.Lock()


class WrongWorkspace(DomainError):
    status_code = 503
    code = "wrong_workspace"


def bound_root() -> str | None:
    """The workspace this database serves, or None before the first start."""
    row = WorkspaceBinding.objects.filter(pk=1).first()
    return row.path if row else None


def check_workspace(*, claim: bool = True) -> str:
    """The workspace root, when this database serves it. With `claim`, a database that
    serves none yet is recorded as serving it. Raises WrongWorkspace otherwise."""
    root = str(workspace.root())
    if root in _checked:
        return root
    with _lock:
        bound = bound_root()
        if bound is None and claim:
            try:
                with transaction.atomic():
                    WorkspaceBinding.objects.create(pk=1, path=root, claimed_at=timezone.now())
            except IntegrityError:  # another process claimed it first
                pass
            bound = bound_root()
        if bound is not None and bound != root:
            raise WrongWorkspace(mismatch_message(bound, root), bound=bound, root=root)
        if bound == root:
            _checked.add(root)
    return root


def mismatch_message(bound: str, root: str) -> str:
    return (
        f"This database serves the workspace {bound}, but MY_AGENT_HOME is {root}. Its "
        "proposals, runs and cursors describe the files of the other workspace, so nothing "
        f"runs against this one. Use MY_AGENT_HOME={bound}, or give this workspace its own "
        "database (DATABASE_URL, e.g. sqlite:////path/to/its.sqlite3), or — if the "
        "workspace moved — run `python manage.py memory_workspace --rebind`."
    )


def rebind() -> tuple[str | None, str]:
    """Record that this database now serves the current workspace (after a move). Returns
    (the old root, the new one)."""
    root = str(workspace.root())
    old = bound_root()
    WorkspaceBinding.objects.update_or_create(
        pk=1, defaults={"path": root, "claimed_at": timezone.now()}
    )
    _checked.clear()
    return old, root


def forget_checks() -> None:
    """Drop the per-process cache (tests point MY_AGENT_HOME at a new directory)."""
    _checked.clear()


def require_own_workspace() -> str:
    """check_workspace() for a management command: CommandError (exit 1) with the message."""
    try:
        return check_workspace()
    except WrongWorkspace as exc:
        raise CommandError(exc.message) from None
