"""Where this host keeps its search index, and how the processes of the host share it
without ever pulling a file from under one another (SPEC §6.1; docs/search.md).

Under MEMORY_SEARCH_DIR (a local disk, never the shared workspace volume), one folder per
workspace root, readable by this OS user only (0700, its files 0600: the index holds every
agent's words):

    <16 hex of the root>/
      current        the generation every reader uses ("g12"); replaced atomically — it is a
                     line of text, never an SQLite file
      g12.sqlite3    a generation: an SQLite database in WAL mode. Written in place by
                     small transactions; never replaced, renamed over or truncated while it
                     may be open
      g12.lock       every process that has g12 open holds a shared flock on it; a
                     generation is removed only by a process that takes it exclusively, so
                     never while anyone reads it
      build.lock     one builder at a time
      pointer.lock   held for the moment `current` changes
      keeper.lock    the host's keeper (memory.search_keeper): one per host
      state.json     what the keeper says: how hand edits are found, the build's progress,
                     its heartbeat

A rebuild (a missing, broken or outdated index, `manage.py memory_reindex`) writes a new
generation beside the current one and switches `current` to it when it is complete;
readers move to it at their next query and the old one is removed once the last of them
let go. A generation found broken is dropped from `current`: every reader stops using it at
its next query, and search answers from the files until the next one is built.

Nothing here is memory: delete the folder any time; the index is built again from the files.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from memory import workspace

GENERATION_RE = re.compile(r"^g(\d{1,9})$")
DB_SUFFIXES = ("", "-wal", "-shm", "-journal")
HEARTBEAT_SECONDS = 1.0  # how often a live keeper says so (state.json's mtime)
KEEPER_GONE_SECONDS = 5.0  # a keeper silent this long is taken for dead


def base_dir() -> Path:
    """MEMORY_SEARCH_DIR, refused inside the workspace (only memory.workspace touches files
    there, and an index on a shared workspace volume would be SQLite over NFS)."""
    base = Path(settings.MEMORY_SEARCH_DIR).expanduser().resolve()
    root = workspace.root()
    if base == root or root in base.parents:
        raise ImproperlyConfigured(
            f"MEMORY_SEARCH_DIR ({base}) is inside MY_AGENT_HOME ({root}): put the search "
            "index on a local disk outside the workspace."
        )
    return base


def store_dir() -> Path:
    """This workspace root's folder under MEMORY_SEARCH_DIR (not created here)."""
    digest = hashlib.sha256(str(workspace.root()).encode("utf-8")).hexdigest()[:16]
    return base_dir() / digest


def ensure_dir() -> Path:
    """The store's folder, made 0700 (MEMORY_SEARCH_DIR too, when this makes it); an
    existing folder that others may read is tightened."""
    directory = store_dir()
    if not directory.parent.is_dir():
        directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        directory.mkdir(mode=0o700)
    except FileExistsError:
        if directory.is_symlink() or not directory.is_dir():
            raise ImproperlyConfigured(
                f"{directory} is not a folder: the search index needs it as one."
            ) from None
    if os.stat(directory).st_mode & 0o077:
        os.chmod(directory, 0o700)
    return directory


def db_path(generation: str, directory: Path | None = None) -> Path:
    return (directory or store_dir()) / f"{generation}.sqlite3"


def _lock_path(generation: str, directory: Path) -> Path:
    return directory / f"{generation}.lock"


def _open_private(path: Path, flags: int) -> int:
    """A file of the store, 0600, never through a symbolic link."""
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


# --- which generation is current ------------------------------------------------------

_pointer_cache: dict[Path, tuple[tuple[int, int, int], str | None]] = {}


def current(directory: Path | None = None) -> str | None:
    """The generation readers use now, or None (none built yet, or the last one was found
    broken). One stat when it has not changed since this process last read it."""
    directory = directory or store_dir()
    pointer = directory / "current"
    try:
        st = os.stat(pointer, follow_symlinks=False)
    except FileNotFoundError:
        return None
    key = (st.st_ino, st.st_mtime_ns, st.st_size)
    cached = _pointer_cache.get(pointer)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        fd = _open_private(pointer, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    try:
        name = os.read(fd, 64).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    found = name if GENERATION_RE.match(name) else None
    _pointer_cache[pointer] = (key, found)
    return found


def _write_small(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Replace a small text file of the store atomically (a temp file renamed over it).
    Used for `current` and state.json only — never for an SQLite file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}")
    fd = _open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


@contextlib.contextmanager
def build_lock(directory: Path | None = None, *, wait: bool = True) -> Iterator[bool]:
    """The store's build lock (one builder, and every change of `current`). Yields whether
    it is held (with `wait=False`, False when another process holds it)."""
    directory = directory or ensure_dir()
    fd = _open_private(directory / "build.lock", os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # releases the flock


@contextlib.contextmanager
def _pointer_lock(directory: Path) -> Iterator[None]:
    # Held for the moment `current` changes (never for a build: that is build.lock).
    fd = _open_private(directory / "pointer.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _set_current(generation: str | None, directory: Path) -> None:
    pointer = directory / "current"
    if generation is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pointer)
    else:
        _write_small(pointer, f"{generation}\n".encode("ascii"))
    _pointer_cache.pop(pointer, None)


def switch(generation: str, directory: Path) -> None:
    """Make `generation` (complete) the one every reader uses from its next query on."""
    with _pointer_lock(directory):
        _set_current(generation, directory)


def drop_if_current(generation: str, directory: Path | None = None) -> bool:
    """Stop every reader from using `generation` (found broken or outdated): `current` no
    longer names it. Returns whether it did (another process may have done so, or switched
    to a newer one, already)."""
    directory = directory or store_dir()
    if not directory.is_dir():
        return False
    with _pointer_lock(directory):
        if current(directory) == generation:
            _set_current(None, directory)
            return True
    return False


# --- leases: a generation is open -----------------------------------------------------


@dataclass
class Lease:
    """A shared hold on one generation: while any process has one, the generation's file
    is not removed."""

    generation: str
    path: Path
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:  # a connection dropped without closing lets go of it too
        self.release()


def lease(generation: str, directory: Path | None = None) -> Lease | None:
    """Hold `generation` open (a shared flock on its lock file), or None when it is gone
    (removed meanwhile: the caller reads `current` again)."""
    directory = directory or store_dir()
    try:
        fd = _open_private(_lock_path(generation, directory), os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    fcntl.flock(fd, fcntl.LOCK_SH)
    path = db_path(generation, directory)
    # Removed between the open and the flock: the remover held it exclusively, then
    # unlinked it. The lock file is unlinked last, so a missing database means gone.
    if not path.is_file() or os.fstat(fd).st_nlink == 0:
        os.close(fd)
        return None
    return Lease(generation, path, fd)


def new_generation(directory: Path) -> Lease:
    """A new, empty generation (the caller holds the build lock): its database file
    (created 0600, empty) and its lock, held exclusively until the build ends (`release`)
    so nobody removes it meanwhile."""
    numbers = [0]
    for name in os.listdir(directory):
        stem = name.split(".", 1)[0]
        found = GENERATION_RE.match(stem)
        if found:
            numbers.append(int(found.group(1)))
    pointed = current(directory)
    if pointed:
        numbers.append(int(pointed[1:]))
    generation = f"g{max(numbers) + 1}"
    fd = _open_private(_lock_path(generation, directory), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    path = db_path(generation, directory)
    for suffix in DB_SUFFIXES:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
    os.close(_open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    return Lease(generation, path, fd)


def remove_generation(generation: str, directory: Path) -> None:
    """Remove a generation nobody may use again (a build that failed, under its own
    exclusive lock)."""
    path = db_path(generation, directory)
    for suffix in DB_SUFFIXES:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_lock_path(generation, directory))


def retire_unused(directory: Path | None = None) -> list[str]:
    """Remove every generation that is not current and that no process holds (a try of
    its lock, never waiting); also the files of the layout before generations. Returns the
    generations removed."""
    directory = directory or store_dir()
    if not directory.is_dir():
        return []
    keep = current(directory)
    removed = []
    names = {name.split(".", 1)[0] for name in os.listdir(directory)}
    for stem in sorted(names):
        if not GENERATION_RE.match(stem) or stem == keep:
            continue
        try:
            fd = _open_private(_lock_path(stem, directory), os.O_RDWR | os.O_CREAT)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # open somewhere, or being built
            if current(directory) == stem:
                continue  # switched to meanwhile
            remove_generation(stem, directory)
            removed.append(stem)
        finally:
            os.close(fd)
    _remove_old_layout(directory.parent, directory.name)
    return removed


def _remove_old_layout(base: Path, digest: str) -> None:
    # Before generations the index was one file, `index-<digest>.sqlite3`, replaced whole.
    old = [f"index-{digest}.sqlite3{suffix}" for suffix in DB_SUFFIXES]
    old.append(f"index-{digest}.lock")
    with contextlib.suppress(OSError):
        old += [n for n in os.listdir(base) if n.startswith(f"index-{digest}.sqlite3.building-")]
    for name in old:
        with contextlib.suppress(OSError):
            os.unlink(base / name)


# --- the keeper's lock and what it says ----------------------------------------------


def keeper_lock(directory: Path, *, wait: bool) -> int | None:
    """Take the host's keeper lock: its descriptor (held until closed, or the process
    ends), or None when another process keeps this index (with `wait=False`)."""
    fd = _open_private(directory / "keeper.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def write_state(state: dict, directory: Path) -> None:
    """What the keeper says (state.json; its mtime is the keeper's heartbeat)."""
    data = json.dumps(state, sort_keys=True).encode("utf-8")
    _write_small(directory / "state.json", data, sync=False)


def read_state(directory: Path | None = None) -> tuple[dict, float | None]:
    """(what the keeper last said, seconds since) — ({}, None) when no keeper ever ran."""
    directory = directory or store_dir()
    path = directory / "state.json"
    try:
        fd = _open_private(path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return {}, None
    try:
        st = os.fstat(fd)
        data = os.read(fd, 1 << 16)
    finally:
        os.close(fd)
    try:
        state = json.loads(data.decode("utf-8"))
    except ValueError:
        state = {}
    return (state if isinstance(state, dict) else {}), max(0.0, time.time() - st.st_mtime)


def keeper_alive(directory: Path | None = None) -> bool:
    """Whether a keeper said it is alive within KEEPER_GONE_SECONDS (one stat)."""
    directory = directory or store_dir()
    try:
        st = os.stat(directory / "state.json")
    except (FileNotFoundError, NotADirectoryError):
        return False
    return time.time() - st.st_mtime < KEEPER_GONE_SECONDS
