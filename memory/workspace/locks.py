"""Locks: every change of one file is serialised by a cross-process lock (fcntl.flock).

Locks are a fixed pool of stripe files under `.memory-locks/` (a file's stripe is a hash
of its path), so the directory never grows with the number of files: FILE_STRIPES for
files, GUARD_STRIPES for groups of files (`guarded`: the facts and INDEX.md, a wiki vault).
Two paths on one stripe merely wait for each other. Appends open the file *after* taking
the lock, and rewrites take the same lock, so an append racing a rewrite is never lost.
Re-entrant within a thread. See `locked` for the order rules that keep two stripes from
deadlocking. Readers never create a lock file (a read-only workspace still reads).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from memory.errors import WorkspaceBusy
from memory.workspace.disk import ensure_machinery_dir, storage
from memory.workspace.paths import LOCK_DIR, check_relative, resolve, root

# The lock pool: FILE_STRIPES locks for files, GUARD_STRIPES for groups of files. The
# directory holds at most these files (plus .gitignore and the volume's clock), however
# many memory files there are.
FILE_STRIPES = 256
GUARD_STRIPES = 16
# A thread that holds a file stripe and needs a lower one may not wait for it blindly
# (another thread may hold that one and wait for ours): it polls for this long, then
# gives up with WorkspaceBusy. Never reached by the code here (see `locked`).
OUT_OF_ORDER_WAIT_SECONDS = 30.0

_held = threading.local()


def stripe(kind: str, key: str) -> int:
    """The stripe of a path: "f" (a file's) or "g" (a group guard's)."""
    digest = hashlib.blake2b(key.encode("utf-8", errors="surrogatepass"), digest_size=4)
    count = FILE_STRIPES if kind == "f" else GUARD_STRIPES
    return int.from_bytes(digest.digest(), "big") % count


def stripe_name(kind: str, number: int) -> str:
    return f"{kind}-{number:03d}.lock"


def lock_dir() -> Path:
    return root() / LOCK_DIR


class _Held:
    __slots__ = ("fd", "shared", "count")

    def __init__(self, fd: int, shared: bool) -> None:
        self.fd = fd
        self.shared = shared
        self.count = 1


def _held_locks() -> dict[tuple[str, str, int], _Held]:
    held = getattr(_held, "locks", None)
    if held is None:
        held = _held.locks = {}
    return held


def _open_stripe(directory: Path, kind: str, number: int, *, shared: bool, rel: str) -> int | None:
    """A descriptor of the stripe's lock file; a reader (shared) never creates one and
    gets None when it does not exist (nobody has written under that stripe yet, or the
    workspace is read-only and was never initialised)."""
    path = directory / stripe_name(kind, number)
    if shared:
        try:
            return os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
    with storage(rel):
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except FileNotFoundError:
            ensure_machinery_dir(directory)
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)


def _flock_in_order(fd: int, operation: int, key: tuple[str, str, int]) -> None:
    """Take the flock, blocking only when that cannot close a circle: every other file
    stripe this thread holds is lower (all multi-file locking goes up), else poll."""
    held = _held_locks()
    kind = key[1]
    if kind == "f" and any(k[1] == "f" and k[0] == key[0] and k[2] > key[2] for k in held):
        deadline = time.monotonic() + OUT_OF_ORDER_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(fd, operation | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise WorkspaceBusy(
                        "The workspace is busy (a lock could not be taken in time); try again."
                    ) from None
                time.sleep(0.005)
    fcntl.flock(fd, operation)


@contextlib.contextmanager
def _stripe_lock(kind: str, number: int, *, shared: bool, rel: str) -> Iterator[None]:
    directory = lock_dir()
    key = (str(directory), kind, number)
    held = _held_locks()
    entry = held.get(key)
    if entry is not None:
        upgraded = entry.shared and not shared
        if upgraded:
            # flock converts in place (not atomically: the shared lock is dropped first).
            fcntl.flock(entry.fd, fcntl.LOCK_EX)
            entry.shared = False
        entry.count += 1
        try:
            yield
        finally:
            entry.count -= 1
            if upgraded:
                fcntl.flock(entry.fd, fcntl.LOCK_SH)
                entry.shared = True
        return
    if kind == "g" and any(k[1] == "f" for k in held):
        # A guard is taken before the files of its group, never while holding a file's
        # lock: that order is what makes guards unable to deadlock with file locks.
        raise RuntimeError("A group guard must be taken before any file lock.")
    if kind == "g" and any(k[1] == "g" for k in held):
        raise RuntimeError("One group guard at a time.")
    fd = _open_stripe(directory, kind, number, shared=shared, rel=rel)
    if fd is None:
        yield  # nothing to lock against: no writer has ever used this stripe
        return
    try:
        _flock_in_order(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX, key)
        held[key] = _Held(fd, shared)
        try:
            yield
        finally:
            del held[key]
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(rel: str, *, shared: bool = False) -> Iterator[None]:
    """Hold the cross-process lock of one workspace file (its stripe of the pool).

    Re-entrant within a thread. Other threads and processes wait. Every write, append and
    delete of the file takes it exclusively, so a read-check-write done inside is atomic
    with respect to every other writer. `shared=True` is for readers that must not see
    half an append: readers share the stripe, never create a lock file, and read
    unlocked where no writer has ever locked the stripe (a read-only workspace).
    PathRefused for a path `resolve` refuses.

    Order rules (what keeps stripes from deadlocking): several file locks are taken
    together with `locked_many` (in stripe order); a group guard (`guarded`) is taken
    before, never while holding, a file lock; a thread needing a stripe below one it holds
    polls instead of waiting (WorkspaceBusy after OUT_OF_ORDER_WAIT_SECONDS).
    """
    composed = check_relative(rel)
    resolve(rel)
    with _stripe_lock("f", stripe("f", composed), shared=shared, rel=composed):
        yield


@contextlib.contextmanager
def locked_many(paths: Iterable[str]) -> Iterator[None]:
    """Hold the locks of several files at once, taken in stripe order so two callers
    sharing files can never deadlock each other."""
    paths = list(paths)
    stripes = sorted({stripe("f", check_relative(rel)) for rel in paths})
    for rel in paths:
        resolve(rel)
    with contextlib.ExitStack() as stack:
        for number in stripes:
            stack.enter_context(_stripe_lock("f", number, shared=False, rel=", ".join(paths)))
        yield


@contextlib.contextmanager
def guarded(rel_dir: str) -> Iterator[None]:
    """Hold the guard of a group of files (a directory: the facts and their INDEX.md, a
    wiki vault), for operations that read several files of it and then write: every
    writer of the group takes it first. Re-entrant; taken before any file lock
    (RuntimeError otherwise, and for a second guard)."""
    composed = check_relative(rel_dir)
    with _stripe_lock("g", stripe("g", composed), shared=False, rel=composed):
        yield
