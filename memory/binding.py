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

The binding also records the owner's time zone (SPEC §4.2): the first start records
MEMORY_TIME_ZONE (else the server's), and from then on every process — web, worker, a stdio
MCP server a client started with another environment — takes "today" from the record, so
one moment is one day's note everywhere. `memory_workspace --time-zone` changes it.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.core.exceptions import SynchronousOnlyOperation
from django.core.management.base import CommandError
from django.db import DatabaseError, IntegrityError, connection, connections, transaction
from django.utils import timezone

from memory import workspace
from memory.errors import DomainError
from memory.models import WorkspaceBinding

_checked: set[str] = set()
_lock = threading.Lock()
# The recorded zone, per (root, configured zone): read again after ZONE_CACHE_SECONDS, so a
# change made with `memory_workspace --time-zone` reaches every running process that soon.
ZONE_CACHE_SECONDS = 10.0
_zones: dict[tuple[str, str], tuple[str, float]] = {}


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
                    WorkspaceBinding.objects.create(
                        pk=1, path=root, claimed_at=timezone.now(), time_zone=configured_zone()
                    )
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
    _zones.clear()


def configured_zone() -> str:
    """MEMORY_TIME_ZONE of this process (else the server's zone, settings names it): what a
    workspace records at its first start, never what a later process writes notes by."""
    return str(settings.MEMORY_TIME_ZONE or "UTC")


def time_zone() -> str:
    """The owner's time zone by name (SPEC §4.2): the one recorded with this database's
    workspace. A binding made before zones were recorded takes this process's configured
    zone once (a conditional update: the first process to ask records it for all). Before
    the first start (no binding yet) or without a database, the configured zone."""
    root = str(workspace.root())
    key = (root, configured_zone())
    cached = _zones.get(key)
    now = time.monotonic()
    if cached is not None and now - cached[1] < ZONE_CACHE_SECONDS:
        return cached[0]
    try:
        row = _recorded(root, key[1])
    except SynchronousOnlyOperation:  # asked from an event loop's thread: ask from another
        with ThreadPoolExecutor(max_workers=1) as pool:
            row = pool.submit(_recorded_in_thread, root, key[1]).result()
    name = row[1] if row is not None and row[0] == root and row[1] else key[1]
    _zones[key] = (name, now)
    return name


def database_missing() -> bool:
    """Whether the database is a SQLite file that does not exist yet: connecting would
    create it, and reading (the doctor, a zone asked before the first start) writes nothing."""
    name = str(connection.settings_dict.get("NAME") or "")
    if connection.vendor != "sqlite" or not name or name == ":memory:" or "mode=memory" in name:
        return False
    return not Path(name.removeprefix("file:").split("?", 1)[0]).exists()


def _recorded(root: str, configured: str) -> tuple[str, str] | None:
    if database_missing():
        return None  # before the first start: the configured zone, and no file made
    try:
        row = WorkspaceBinding.objects.filter(pk=1).values_list("path", "time_zone").first()
        if row is not None and row[0] == root and not row[1]:
            WorkspaceBinding.objects.filter(pk=1, time_zone="").update(time_zone=configured)
            row = WorkspaceBinding.objects.filter(pk=1).values_list("path", "time_zone").first()
    except (DatabaseError, RuntimeError):
        # No database yet (before migrate), or none this code may use (a unit test without
        # one): nothing is recorded, and the configured zone is what the first start records.
        return None
    return row


def _recorded_in_thread(root: str, configured: str) -> tuple[str, str] | None:
    try:
        return _recorded(root, configured)
    finally:
        connections.close_all()


def record_time_zone(name: str) -> tuple[str, str]:
    """Record `name` as the owner's time zone (`memory_workspace --time-zone`). Returns (the
    zone recorded before, the new one). Raises ValueError for a name that is not a zone."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"{name!r} is not a time zone name (e.g. Asia/Ho_Chi_Minh, Europe/Berlin, UTC)."
        ) from None
    check_workspace()
    old = WorkspaceBinding.objects.filter(pk=1).values_list("time_zone", flat=True).first()
    WorkspaceBinding.objects.filter(pk=1).update(time_zone=name)
    _zones.clear()
    return old or configured_zone(), name


def require_own_workspace() -> str:
    """check_workspace() for a management command: CommandError (exit 1) with the message."""
    try:
        return check_workspace()
    except WrongWorkspace as exc:
        raise CommandError(exc.message) from None
