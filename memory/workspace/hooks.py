"""Who hears of a change: the change log first, then the `on_change` hooks.

Every write, append and delete ends in `notify`, inside the file's lock: the path goes to
the change log (memory.workspace.changes), then each hook registered with `on_change` (the
file history records versions from them) gets the `Change` with who made it — the
attribution the operations and interfaces set with `memory.attribution.attributed(...)`.
Nothing here imports a model.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from memory.attribution import Attribution, current_attribution
from memory.workspace import changes
from memory.workspace.locks import locked
from memory.workspace.paths import is_hidden, resolve

logger = logging.getLogger(__name__)


class Fingerprint(NamedTuple):
    """What the file looked like to stat(): any write, rename or chmod changes its ctime, so
    an unchanged fingerprint means an unchanged file without reading it."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int

    def __str__(self) -> str:
        return f"{self.size}:{self.mtime_ns}:{self.ctime_ns}:{self.ino}"


@dataclass(frozen=True)
class Change:
    """One change of one file, told to the `on_change` hooks under the file's lock.

    `op`: "write" (whole new text), "append", "delete", or "adopt" (nothing written now:
    the caller states that the file as it is was made by the current attribution — an
    approval that finds its bytes already on disk after a crash). `before`: the bytes
    before a write or delete (None: absent); for an append and an adopt None, not read
    (`before_fingerprint` says whether the file changed since it was last seen, and the
    bytes before an append are the first `offset` bytes of the file). `data`: the bytes
    written (write), appended (append), or None. `offset`: the size before an append.
    """

    path: str
    op: str
    before: bytes | None
    before_fingerprint: Fingerprint | None
    data: bytes | None
    offset: int
    after_fingerprint: Fingerprint | None
    attribution: Attribution


_hooks: dict[str, Callable[[Change], None]] = {}


def on_change(callback: Callable[[Change], None]) -> Callable[[Change], None]:
    """Call `callback(change)` after every change of a file below the root (not hidden
    paths like `.memory-locks/`), inside the file's lock, in the writing thread. Registered
    by its qualified name, so registering again (an app's ready() run twice) replaces it.
    A hook that raises is logged; the change itself has happened and is never undone."""
    _hooks[f"{callback.__module__}.{callback.__qualname__}"] = callback
    return callback


def listening(rel: str) -> bool:
    """Whether a hook will hear of a change of `rel`: only then does a writer read the
    bytes before its change (`Change.before`)."""
    return bool(_hooks) and not is_hidden(rel)


def fingerprint(rel: str) -> Fingerprint | None:
    """The file's fingerprint, or None when it does not exist."""
    try:
        st = os.stat(resolve(rel), follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return Fingerprint(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def notify(
    rel: str,
    op: str,
    *,
    before: bytes | None = None,
    before_fingerprint: Fingerprint | None = None,
    data: bytes | None = None,
    offset: int = 0,
) -> None:
    """Tell the change log and the hooks that `rel` changed. The caller holds its lock.
    Never raises for a change log or a hook that fails (logged): the file has changed."""
    if is_hidden(rel):
        return
    # Every change goes to the change log first (search indexes on every host learn of it
    # at their next query), then to the in-process hooks (the file history). The file has
    # changed already: a change log that cannot take the line (a disk that just filled up)
    # is logged, never turned into an error for a write that happened.
    try:
        changes.record(rel)
    except OSError as exc:
        logger.error("the change log could not record %s: %s", rel, exc)
    if not _hooks:
        return
    change = Change(
        rel,
        op,
        before,
        before_fingerprint,
        data,
        offset,
        fingerprint(rel),
        current_attribution(),
    )
    for name, hook in list(_hooks.items()):
        try:
            hook(change)
        except Exception:  # the file has changed; a hook must not make the write fail
            logger.exception("on_change hook %s failed for %s", name, rel)


def adopt(rel: str) -> None:
    """Tell the hooks that the file as it is now was made by the current attribution
    (nothing is written). Under the file's lock."""
    with locked(rel):
        notify(rel, "adopt", before_fingerprint=fingerprint(rel))
