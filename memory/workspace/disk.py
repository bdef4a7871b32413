"""The disk's primitives every writer uses: a write the disk refuses as a domain error,
temp files beside their target, the atomic replace, fsync of files and directories, the
app's machinery folders, and the volume's clock.

A full disk is DiskFull (507); a read-only or unwritable workspace is WorkspaceReadOnly
(503), naming the file that was not written; reads keep working on a read-only workspace.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat as stat_module
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memory.errors import DiskFull, PathRefused, WorkspaceReadOnly
from memory.workspace.paths import LOCK_DIR, root

# The name of a write's temp file: `.<name>.<16 hex>.tmp` (made by temp_beside,
# recognised by memory.workspace.upkeep when a killed write left one behind).
TEMP_RE = re.compile(r"^\..+\.[0-9a-f]{16}\.tmp$")
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_DENIED = {errno.EACCES, errno.EPERM}
FSYNC_THREADS = 8  # fsyncs of one batch run together (memory.workspace.batches)
_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _translated(exc: OSError, rel: str) -> Exception:
    """The domain error an OSError of a write means, or the OSError itself."""
    if exc.errno in _FULL:
        return DiskFull(
            f"The workspace's disk is full: nothing was written to {rel}. Free some space "
            "and try again.",
            path=rel,
        )
    if exc.errno == errno.EROFS:
        return WorkspaceReadOnly(
            f"The workspace is read-only (its file system is mounted read-only): nothing "
            f"was written to {rel}. Reading still works.",
            path=rel,
        )
    if exc.errno in _DENIED:
        return WorkspaceReadOnly(
            f"The workspace is not writable by this server (permission denied): nothing "
            f"was written to {rel}. Reading still works.",
            path=rel,
        )
    if exc.errno == errno.ENAMETOOLONG:
        return PathRefused(f"The file name is too long: {rel!r}.")
    if exc.errno in (errno.ENOTDIR, errno.EISDIR):
        return PathRefused(f"Something that is not a folder (or is one) is in the way: {rel!r}.")
    return exc


@contextlib.contextmanager
def storage(rel: str) -> Iterator[None]:
    """Around every write: a full, read-only or unwritable disk becomes a domain error
    that says so (DiskFull 507 / WorkspaceReadOnly 503), naming the file; a name too long
    or a file where a folder should be is PathRefused. Other OSErrors pass unchanged."""
    try:
        yield
    except OSError as exc:
        translated = _translated(exc, rel)
        if translated is exc:
            raise
        raise translated from exc


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_all(fds: list[int]) -> None:
    """fsync every descriptor; concurrently when there are several, so the filesystem
    commits them together (one journal commit instead of one per file)."""
    global _pool
    if len(fds) < 2:
        for fd in fds:
            os.fsync(fd)
        return
    with _pool_lock:
        # A pool made before a fork has no threads in the child: make one per process.
        if _pool is None or _pool[0] != os.getpid():
            pool = ThreadPoolExecutor(max_workers=FSYNC_THREADS, thread_name_prefix="fsync")
            _pool = (os.getpid(), pool)
        pool = _pool[1]
    for future in [pool.submit(os.fsync, fd) for fd in fds]:
        future.result()


def temp_beside(path: Path, *, mode: int | None) -> tuple[int, Path]:
    """A new temp file beside `path` (`.<name>.<16 hex>.tmp`, TEMP_RE), open for
    writing: created 0666 & ~umask (the kernel applies the umask, as for any new file),
    then set to `mode` exactly when given (a rewrite's). Makes the missing folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    if mode is not None:
        try:
            os.fchmod(fd, mode)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
    return fd, tmp


def write_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write `data` to a temp file beside `path`, fsync, rename over it, fsync the dir:
    a reader sees the old bytes or the new, never half. The temp file is created
    0666 & ~umask; `mode` (a rewrite's) is then set exactly. Nothing is left behind on
    failure. The caller holds the file's lock."""
    fd, tmp = temp_beside(path, mode=mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def ensure_machinery_dir(directory: Path, *, mode: int | None = None) -> None:
    """A directory of the app's machinery (the lock pool, the derived state) with its
    `.gitignore` (`*`: never in the owner's git); with `mode`, the directory has exactly
    that mode (the derived state's 0700: what it says of the memory is nobody else's).
    Only writers call this."""
    if not directory.is_dir():
        directory.mkdir(parents=True, exist_ok=True)
    if mode is not None and stat_module.S_IMODE(os.lstat(directory).st_mode) != mode:
        os.chmod(directory, mode)
    ignore = directory / ".gitignore"
    if not ignore.exists():
        try:
            fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:  # another writer made it just now
            return
        with os.fdopen(fd, "w") as handle:
            handle.write("*\n")


def volume_now_ns() -> int:
    """The workspace volume's clock now, in ns: the time its filesystem stamps on a change
    made at this moment (set on a file under the lock directory and read back). The
    ctimes a scan compares come from this clock — on a network volume the server's, not
    this host's — so "changed since" is asked in one clock. DiskFull / WorkspaceReadOnly
    when the lock directory cannot be written."""
    lock_dir = root() / LOCK_DIR
    with storage(LOCK_DIR):
        try:
            fd = os.open(lock_dir / "clock", os.O_RDWR | os.O_CREAT, 0o666)
        except FileNotFoundError:
            ensure_machinery_dir(lock_dir)
            fd = os.open(lock_dir / "clock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        os.utime(fd)
        return os.fstat(fd).st_ctime_ns
    finally:
        os.close(fd)
