"""Cleanup and health: what start-up does to make the workspace ready for writers, and
whether it can take writes (looked at, never written)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat as stat_module
import time
from pathlib import Path
from typing import NamedTuple

from memory.workspace.disk import TEMP_RE, ensure_machinery_dir, storage
from memory.workspace.locks import FILE_STRIPES, GUARD_STRIPES, lock_dir, stripe_name
from memory.workspace.paths import LOCK_DIR, STATE_DIR, STATE_DIR_MODE, STATE_FILE_MODE, root

logger = logging.getLogger(__name__)

# A temp file of a write is renamed over its target once written and fsynced: within
# milliseconds, seconds for tens of megabytes on a slow network volume. One older than two
# minutes was left by a write that was killed: the kernel itself calls a write stalled
# that long hung (`hung_task_timeout_secs`, 120 s), and two minutes also cover the clock
# drift between hosts that write to one volume. Start-up and the worker's supervisor every
# five minutes (memory.maintenance) remove them.
STALE_TEMP_SECONDS = 120


def prepare() -> None:
    """Make the workspace ready for writers (called at start-up by memory_init): the lock
    pool's directory with its `.gitignore` and every stripe, so readers always find the
    stripe they share; lock files of older versions (one per path) are removed; the
    derived-state directory with its `.gitignore`, 0700, its files 0600. Raises DiskFull /
    WorkspaceReadOnly when the workspace cannot be written."""
    directory = lock_dir()
    wanted = {stripe_name("f", n) for n in range(FILE_STRIPES)}
    wanted |= {stripe_name("g", n) for n in range(GUARD_STRIPES)}
    with storage(STATE_DIR):
        state = root() / STATE_DIR
        ensure_machinery_dir(state, mode=STATE_DIR_MODE)
        for entry in os.scandir(state):  # files an older version left 0644
            if entry.is_file(follow_symlinks=False) and entry.name != ".gitignore":
                os.chmod(entry.path, STATE_FILE_MODE)
    with storage(LOCK_DIR):
        ensure_machinery_dir(directory)
        present = set(os.listdir(directory))
        for name in sorted(wanted - present):
            os.close(os.open(directory / name, os.O_RDWR | os.O_CREAT, 0o666))
        for name in sorted(present - wanted - {".gitignore"}):
            if re.fullmatch(r"[0-9a-f]{40}\.lock", name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(directory / name)


def remove_stale_temp_files(*, older_than: float = STALE_TEMP_SECONDS) -> list[str]:
    """Remove the temp files (`.<name>.<16 hex>.tmp`) that writes killed before their
    rename left behind, when older than `older_than` seconds (a live write renames its
    temp file within milliseconds; another host may be writing right now). Symlinks are
    not followed; the lock directory is skipped. Returns the paths removed; a file that
    cannot be removed (a read-only workspace) is logged and left."""
    base = root()
    removed: list[str] = []
    cutoff = time.time() - older_than
    if not base.is_dir():
        return removed
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if d != LOCK_DIR]
        for name in filenames:
            if not TEMP_RE.match(name):
                continue
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                continue
            if not stat_module.S_ISREG(st.st_mode) or st.st_mtime > cutoff:
                continue
            rel = Path(full).relative_to(base).as_posix()
            try:
                os.unlink(full)
            except FileNotFoundError:
                continue
            except OSError as exc:  # a read-only workspace: nothing to clean then
                logger.warning("could not remove the stale temp file %s: %s", rel, exc)
                continue
            removed.append(rel)
    return removed


class Health(NamedTuple):
    path: str
    exists: bool
    writable: bool
    read_only_mount: bool
    free_bytes: int


def health() -> Health:
    """Can the workspace take writes? Looked at without writing anything: the root exists,
    this process may write in it (os.access, which also says no on a read-only mount), the
    mount is not read-only, and the bytes free to this user."""
    base = root()
    try:
        info = os.statvfs(base)
    except OSError:
        return Health(str(base), False, False, False, 0)
    read_only = bool(info.f_flag & os.ST_RDONLY)
    writable = base.is_dir() and os.access(base, os.W_OK | os.X_OK) and not read_only
    return Health(str(base), base.is_dir(), writable, read_only, info.f_bavail * info.f_frsize)
