"""The only code that touches the disk under MY_AGENT_HOME.

Everyone else passes workspace-relative POSIX paths ("users/owner/USER.md",
"agents/helper/memory/2026-11-30.md"). This module

- resolves each path and refuses any that escapes the root, also through symlinks
  (PathRefused, nothing read or written);
- writes atomically: a temp file in the same directory, fsync, os.replace, fsync of the
  directory — a reader sees the old text or the new, never half;
- serialises every change of one file with a cross-process lock (fcntl.flock on a lock
  file under `.memory-locks/`). Appends open the file *after* taking the lock, and
  rewrites take the same lock, so an append racing a rewrite is never lost. The lock is
  re-entrant within a thread, so `with locked(path): ... write(path, ...)` works;
- returns content hashes (sha256 of the UTF-8 text) so callers can detect a changed base;
- tells every change to the hooks registered with `on_change` (the file history records
  versions from them), inside the file's lock, with who made it: the `Attribution` the
  operations and interfaces set with `attributed(...)` (a context variable, so it follows
  the request, the task or the thread that writes). Nothing here imports a model.
- records every write, append and delete in the change log (`.memory-changes/`, below),
  so a search index on any host that mounts the workspace learns of it at its next query.

All text is UTF-8 with "\\n" line endings.
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import hashlib
import logging
import os
import re
import stat as stat_module
import tempfile
import threading
import unicodedata
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from django.conf import settings

from memory.errors import Conflict, PathRefused

LOCK_DIR = ".memory-locks"
CHANGES_DIR = ".memory-changes"
CHANGES_SEGMENT_BYTES = 1 << 20  # a segment of the change log is closed past this size
CHANGES_KEEP = 16  # segments kept; a reader further behind rescans everything
ABSENT = "absent"  # the hash of a file that does not exist

_held = threading.local()
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FileInfo:
    path: str  # workspace-relative
    size: int
    mtime: float


def root() -> Path:
    """The workspace root, read from settings on every call (tests point it at tmp_path)."""
    return Path(settings.MY_AGENT_HOME).expanduser().resolve()


def hash_text(text: str | None) -> str:
    """sha256 of the text, or ABSENT for a file that does not exist."""
    if text is None:
        return ABSENT
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_relative(rel: str) -> str:
    if not isinstance(rel, str) or not rel:
        raise PathRefused("Empty path.")
    if "\x00" in rel:
        raise PathRefused("Path contains a NUL byte.")
    # Fullwidth dots and slashes fold to ASCII ones under NFKC; refuse them instead of
    # letting another layer interpret them later.
    if unicodedata.normalize("NFKC", rel) != rel:
        raise PathRefused(f"Path has characters that are not plain: {rel!r}.")
    if "\\" in rel or rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        raise PathRefused(f"Path must be relative to the workspace: {rel!r}.")
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise PathRefused(f"Path may not contain empty, '.' or '..' parts: {rel!r}.")
    return rel


def resolve(rel: str) -> Path:
    """The absolute path of `rel`, refusing anything outside the workspace.

    Raises PathRefused for absolute paths, `..`, NUL, non-NFKC-stable characters, any
    path whose real location (symlinks followed) is not below the root, and any path that
    goes through a symbolic link below the root: a link inside one agent's dir must not
    become a way into another agent's files (the root itself may be a link).
    """
    _check_relative(rel)
    base = root()
    candidate = base / rel
    real = Path(os.path.realpath(candidate))
    if real != base and base not in real.parents:
        raise PathRefused(f"Path leaves the workspace: {rel!r}.")
    if real != candidate:
        raise PathRefused(f"Path goes through a symbolic link: {rel!r}.")
    return candidate


def relative(path: Path) -> str:
    return path.relative_to(root()).as_posix()


# --- who changes files, and who hears of it ------------------------------------------


@dataclass(frozen=True)
class Attribution:
    """Who makes the changes done in the current context, as plain values.

    `actor`: "owner" (or the owner's username), "agent:<id>", "job:<id>", "auto:<agent>";
    `source`: the presence source of the write (SPEC §5: web, http, telegram, job:<id>…);
    `via`: the interface (api, pages, admin, tool, task, command); `proposal` / `run`:
    the ids of the proposal or run behind it; `note`: a short why ("undo of proposal 4",
    "restore of version 12"); `restored_from`: the version id a restore brings back.
    """

    actor: str = ""
    source: str = ""
    via: str = ""
    proposal: int | None = None
    run: int | None = None
    note: str = ""
    restored_from: int | None = None
    extra: dict = field(default_factory=dict)


_FIELDS = tuple(name for name in Attribution.__dataclass_fields__ if name != "extra")
# Layers, outermost first: dicts of fields, or callables answering one (a request's user is
# known only after authentication, so the HTTP layer registers a resolver).
_attribution: contextvars.ContextVar[tuple] = contextvars.ContextVar("attribution", default=())


@contextlib.contextmanager
def attributed(resolve: Callable[[], dict] | None = None, **fields) -> Iterator[None]:
    """Attribute the changes made inside the block. Inner blocks override the fields they
    set (empty values are left out); `resolve` is called when a change happens and answers
    fields too (overridden by explicit ones of the same and inner layers)."""
    unknown = set(fields) - set(_FIELDS)
    if unknown:
        raise TypeError(f"Unknown attribution fields: {sorted(unknown)}")
    layer: tuple = ((resolve,) if resolve is not None else ()) + (
        {key: value for key, value in fields.items() if value not in (None, "")},
    )
    token = _attribution.set(_attribution.get() + layer)
    try:
        yield
    finally:
        _attribution.reset(token)


def current_attribution() -> Attribution:
    """The attribution of a change made now (resolvers called, errors in them ignored)."""
    merged: dict = {}
    for layer in _attribution.get():
        if callable(layer):
            try:
                found = layer() or {}
            except Exception:  # a resolver must never stop a write
                logger.exception("attribution resolver failed")
                found = {}
            merged.update({k: v for k, v in found.items() if k in _FIELDS and v not in (None, "")})
        else:
            merged.update(layer)
    return replace(Attribution(), **merged)


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


def _is_hidden(rel: str) -> bool:
    return any(part.startswith(".") for part in rel.split("/"))


def fingerprint(rel: str) -> Fingerprint | None:
    """The file's fingerprint, or None when it does not exist."""
    try:
        st = os.stat(resolve(rel), follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return Fingerprint(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _notify(
    rel: str,
    op: str,
    *,
    before: bytes | None = None,
    before_fingerprint: Fingerprint | None = None,
    data: bytes | None = None,
    offset: int = 0,
) -> None:
    if _is_hidden(rel):
        return
    # Every change goes to the change log first (search indexes on every host learn of it
    # at their next query), then to the in-process hooks (the file history).
    _changed(rel)
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


def _raw(rel: str) -> bytes | None:
    return read_bytes_from(rel, 0)


def adopt(rel: str) -> None:
    """Tell the hooks that the file as it is now was made by the current attribution
    (nothing is written). Under the file's lock."""
    with locked(rel):
        _notify(rel, "adopt", before_fingerprint=fingerprint(rel))


# --- locking -------------------------------------------------------------------------


def _lock_file_for(rel: str) -> Path:
    digest = hashlib.sha1(rel.encode("utf-8")).hexdigest()
    lock_dir = root() / LOCK_DIR
    lock_dir.mkdir(parents=True, exist_ok=True)
    return lock_dir / f"{digest}.lock"


@contextlib.contextmanager
def locked(rel: str) -> Iterator[None]:
    """Hold the cross-process lock of one workspace file.

    Re-entrant within a thread. Other threads and processes wait. Every write, append and
    delete of the file takes it, so a read-check-write done inside is atomic with respect
    to every other writer.
    """
    resolve(rel)
    held: set[str] = getattr(_held, "paths", None) or set()
    _held.paths = held
    key = f"{root()}::{rel}"
    if key in held:
        yield
        return
    fd = os.open(_lock_file_for(rel), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        held.add(key)
        try:
            yield
        finally:
            held.discard(key)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# --- reading -------------------------------------------------------------------------


def read(rel: str) -> str | None:
    """The text of a file, or None when it does not exist (a missing file is absent,
    never an error)."""
    path = resolve(rel)
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def read_with_hash(rel: str) -> tuple[str | None, str]:
    """The text of a file and the hash of exactly that text, from one read under the
    file's lock — what an editor opens and later sends back as `base_hash`. Two reads
    (text, then hash) could pair an old text with a newer hash, and a write checked
    against that hash would erase what was appended in between."""
    with locked(rel):
        text = read(rel)
    return text, hash_text(text)


def read_bytes_from(rel: str, offset: int) -> bytes | None:
    """The bytes of a file from `offset` on (None when missing)."""
    path = resolve(rel)
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            return handle.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def file_hash(rel: str) -> str:
    return hash_text(read(rel))


def exists(rel: str) -> bool:
    return resolve(rel).is_file()


def stat(rel: str) -> FileInfo | None:
    path = resolve(rel)
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return FileInfo(rel, st.st_size, st.st_mtime)


Stamp = tuple[int, int, int, int]  # (size, mtime_ns, ctime_ns, inode)


def stamp(rel: str) -> Stamp | None:
    """(size, mtime_ns, ctime_ns, inode) of a file or directory, symlinks not followed;
    None when it does not exist. No write keeps all four: an atomic rewrite gets a new
    inode, an in-place one a new ctime (which no user can set back)."""
    path = resolve(rel)
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def list_files(rel_dir: str, *, suffix: str = ".md", recursive: bool = False) -> list[FileInfo]:
    """Regular files below a workspace directory whose names end in `suffix`.

    Symlinks are left out (they could point anywhere), and so is the lock directory.
    Sorted by path. A missing directory lists nothing.
    """
    base = resolve(rel_dir) if rel_dir else root()
    if not base.is_dir():
        return []
    found: list[FileInfo] = []
    walker = os.walk(base) if recursive else [(str(base), [], os.listdir(base))]
    for dirpath, dirnames, filenames in walker:
        dirnames[:] = [d for d in dirnames if d != LOCK_DIR and not d.startswith(".")]
        for name in filenames:
            if not name.endswith(suffix) or name.startswith("."):
                continue
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                continue
            try:
                st = os.stat(full)
            except FileNotFoundError:
                continue
            if not os.path.isfile(full):
                continue
            rel = Path(full).relative_to(root()).as_posix()
            found.append(FileInfo(rel, st.st_size, st.st_mtime))
    found.sort(key=lambda info: info.path)
    return found


def list_names(rel_dir: str, *, suffix: str = ".md") -> list[str]:
    """The names of the files `list_files` would list directly in `rel_dir`, without a
    stat of each: the directory entry's type says whether it is a regular file (on the
    rare filesystem that does not record it, scandir falls back to an lstat per entry).
    What a count or one page of a listing needs (stat only the page: `file_infos`).
    Symlinks and hidden names are left out. Unsorted; a missing directory lists nothing.
    """
    base = resolve(rel_dir) if rel_dir else root()
    try:
        with os.scandir(base) as entries:
            return [
                name
                for entry in entries
                if (name := entry.name).endswith(suffix)
                and name[0] != "."
                and entry.is_file(follow_symlinks=False)
            ]
    except (FileNotFoundError, NotADirectoryError):
        return []


def file_infos(rel_dir: str, names: list[str]) -> list[FileInfo]:
    """FileInfo of each named file directly in `rel_dir`, in the order given: one lstat
    per name relative to the opened directory. A name that is gone, or is no longer a
    regular file (swapped for a symlink), is left out."""
    base = os.path.realpath(resolve(rel_dir)) if rel_dir else str(root())
    prefix = f"{rel_dir}/" if rel_dir else ""
    try:
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:  # missing, not a directory, or a symlink
        return []
    found = []
    try:
        for name in names:
            if "/" in name or name in ("", ".", ".."):
                raise PathRefused(f"Not a file name: {name!r}.")
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                continue
            if stat_module.S_ISREG(st.st_mode):
                found.append(FileInfo(prefix + name, st.st_size, st.st_mtime))
    finally:
        os.close(fd)
    return found


class ScannedFile(NamedTuple):
    """One file as `scan_files` saw it: enough to tell a changed file from an unchanged
    one (an atomic rewrite gets a new inode, any write a new ctime) and to read it again.
    A named tuple: scans make thousands of these per call, and a frozen dataclass costs
    several times more to build."""

    path: str  # workspace-relative
    abspath: str
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int


def scan_files(rel_dir: str, *, suffix: str = ".md", recursive: bool = False) -> list[ScannedFile]:
    """The files `list_files` would list, with nanosecond times and the inode, cheaply.

    Made for callers that re-check every file on every call (search re-stats each file
    so it never serves stale text): the directory is resolved once, then each directory is
    opened (O_NOFOLLOW) and its files are lstat'ed by name relative to that descriptor —
    a third cheaper than a stat by full path, which walks every component again. Symlinks
    (files or directories) are never followed, so nothing below the directory can lead
    out. Hidden entries are skipped. Unsorted; a missing directory lists nothing.
    """
    # The directory itself may be a symlink that stays inside (resolve checked): start
    # from where it really is; below it, nothing is followed.
    base = os.path.realpath(resolve(rel_dir)) if rel_dir else str(root())
    prefix = f"{rel_dir}/" if rel_dir else ""
    return _scan_tree(base, prefix, suffix=suffix, recursive=recursive)


def _scan_tree(base: str, prefix: str, *, suffix: str, recursive: bool) -> list[ScannedFile]:
    """scan_files below the absolute directory `base`, each file's path `prefix` + its
    path below base. Nothing below base is followed if it is a symlink."""
    found: list[ScannedFile] = []
    make = tuple.__new__  # ScannedFile(...) without the generated __new__'s Python call
    is_regular = stat_module.S_ISREG
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        base_fd = os.open(base, flags)
    except (FileNotFoundError, NotADirectoryError):
        return found
    except OSError:  # ELOOP: the directory itself is a symlink
        return found
    pending = [(base_fd, f"{base}/", prefix)]
    while pending:
        fd, abs_prefix, rel_prefix = pending.pop()
        try:
            with os.scandir(fd) as iterator:
                for entry in iterator:
                    name = entry.name
                    if name[0] == ".":
                        continue
                    # d_type answers these without a syscall; neither follows a symlink.
                    if not entry.is_file(follow_symlinks=False):
                        if recursive and entry.is_dir(follow_symlinks=False):
                            try:
                                child = os.open(name, flags, dir_fd=fd)
                            except OSError:  # vanished, or swapped for a symlink
                                continue
                            pending.append((child, f"{abs_prefix}{name}/", f"{rel_prefix}{name}/"))
                        continue
                    if not name.endswith(suffix):
                        continue
                    try:
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if not is_regular(st.st_mode):
                        continue
                    found.append(
                        make(
                            ScannedFile,
                            (
                                rel_prefix + name,
                                abs_prefix + name,
                                st.st_size,
                                st.st_mtime_ns,
                                st.st_ctime_ns,
                                st.st_ino,
                            ),
                        )
                    )
        finally:
            os.close(fd)
    return found


def scan_one(rel: str) -> ScannedFile | None:
    """The ScannedFile of one path (an lstat), as scan_files would have found it; None
    when it does not exist or is not a regular file (a symlink is never followed)."""
    path = resolve(rel)
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat_module.S_ISREG(st.st_mode):
        return None
    return ScannedFile(rel, str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def read_scanned(scanned: ScannedFile) -> str | None:
    """The text of a file `scan_files` found, or None when it is gone or has become a
    symlink since (O_NOFOLLOW: the scan's guarantee that nothing leads out still holds)."""
    try:
        fd = os.open(scanned.abspath, os.O_RDONLY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError:  # ELOOP: replaced by a symlink
        return None
    # os.read rather than a text-mode open: half the cost per file, and a vault load or
    # a search reads thousands of files.
    try:
        # One read of the size the scan saw, plus a byte: fewer bytes means the end of
        # the file was reached (a file that grew since is read on to its end).
        data = os.read(fd, scanned.size + 1)
        if len(data) > scanned.size:
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            data = b"".join(chunks)
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


# --- writing -------------------------------------------------------------------------


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
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
    _fsync_dir(path.parent)


def write(rel: str, text: str) -> str:
    """Replace a file's text atomically, under its lock. Returns the new hash."""
    write_raw(rel, text.encode("utf-8"))
    return hash_text(text)


def write_raw(rel: str, data: bytes) -> str:
    """Replace a file's bytes atomically, under its lock (write() for text already encoded,
    or for restoring bytes exactly as they were). Returns the sha256 of the bytes."""
    path = resolve(rel)
    with locked(rel):
        watched = bool(_hooks) and not _is_hidden(rel)
        before = _raw(rel) if watched else None
        before_fp = fingerprint(rel) if watched else None
        _write_atomic(path, data)
        _notify(rel, "write", before=before, before_fingerprint=before_fp, data=data)
    return hashlib.sha256(data).hexdigest()


def bytes_hash(rel: str) -> str:
    """sha256 of the file's bytes (ABSENT when missing): file_hash() for a file that may
    hold bytes that are not UTF-8."""
    data = _raw(rel)
    return ABSENT if data is None else hashlib.sha256(data).hexdigest()


def write_raw_if_unchanged(rel: str, data: bytes | None, *, base_hash: str) -> str:
    """write_if_unchanged() for bytes (None deletes), the base compared with bytes_hash().
    Raises Conflict when the file changed since base_hash was read."""
    with locked(rel):
        if bytes_hash(rel) != base_hash:
            raise Conflict(f"{rel} changed since it was read.")
        if data is None:
            delete(rel)
            return ABSENT
        return write_raw(rel, data)


def write_checked(rel: str, text: str, *, base_hash: str | None = None) -> str:
    """write(), or with a base_hash write_if_unchanged(): an editor that read the file
    passes the hash it read, so a change made meanwhile (an agent's memory_save, another
    tab) is a Conflict instead of being erased."""
    if base_hash is None:
        return write(rel, text)
    return write_if_unchanged(rel, text, base_hash=base_hash)


def write_if_unchanged(rel: str, text: str | None, *, base_hash: str) -> str:
    """Write (or, with text None, delete) only when the file still hashes to base_hash.

    Raises memory.errors.Conflict otherwise, leaving the file as it is. Returns the new hash.
    """
    with locked(rel):
        current = file_hash(rel)
        if current != base_hash:
            raise Conflict(f"{rel} changed since it was read.")
        if text is None:
            delete(rel)
            return ABSENT
        return write(rel, text)


def append(rel: str, text: str, *, create_with: str = "") -> None:
    """Append text to a file under its lock; a missing (or empty) file starts with
    `create_with` first. The text starts on a line of its own: a file whose last line has
    no newline (a hand edit, a textarea) gets one first. Only the file's last byte is
    read, never its text: the cost does not grow with the file (no hash is returned —
    it would need the whole text).

    The file is opened only after the lock is held, so an append never writes into a file
    that a concurrent rewrite has just replaced.
    """
    path = resolve(rel)
    with locked(rel):
        last = _last_byte(path)
        before_fp = fingerprint(rel)
        if not last:
            data = (create_with + text).encode("utf-8")
            _write_atomic(path, data)
            _notify(
                rel,
                "write",
                before=b"" if last == b"" else None,
                before_fingerprint=before_fp,
                data=data,
            )
            return None
        if last != b"\n":
            text = "\n" + text
        offset = before_fp.size if before_fp else 0
        with open(path, "a", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        _notify(
            rel, "append", before_fingerprint=before_fp, data=text.encode("utf-8"), offset=offset
        )
        return None


def _last_byte(path: Path) -> bytes | None:
    """The last byte of a file: b"" when it is empty, None when it does not exist. All an
    append needs to know of what is there (a newline is one byte in UTF-8 and never part
    of another character), so appending to a 2 MB note costs what appending to an empty
    one does."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if not size:
                return b""
            handle.seek(size - 1)
            return handle.read(1)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def delete(rel: str) -> bool:
    """Remove a file under its lock. Returns False when it did not exist."""
    path = resolve(rel)
    with locked(rel):
        watched = bool(_hooks) and not _is_hidden(rel)
        before = _raw(rel) if watched else None
        before_fp = fingerprint(rel) if watched else None
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        _fsync_dir(path.parent)
        _notify(rel, "delete", before=before, before_fingerprint=before_fp)
    return True


def ensure_dir(rel: str) -> None:
    resolve(rel).mkdir(parents=True, exist_ok=True)


def create(rel: str, text: str = "") -> bool:
    """Write a file only when it does not exist yet (under its lock). Returns True when it
    was created; an existing file is left exactly as it is."""
    with locked(rel):
        if resolve(rel).exists():
            return False
        write(rel, text)
    return True


# --- several files at once, and derived state -------------------------------------------

WRITE_MANY_GROUP = 128  # files staged (locks and descriptors held) at once
_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _fsync_all(fds: list[int]) -> None:
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
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=8, thread_name_prefix="fsync"))
        pool = _pool[1]
    for future in [pool.submit(os.fsync, fd) for fd in fds]:
        future.result()


def write_many(
    texts: dict[str, str | bytes], *, base_hashes: dict[str, str] | None = None
) -> list[str]:
    """Replace several files, each atomically, under all their locks (taken in path
    order). Returns the paths written, in the order given.

    Every new text is written to a temp file beside its target and all of them are
    fsynced (concurrently) before the first rename; then each is renamed over its target
    and each directory is fsynced once. So a failure while writing — a full disk —
    changes none of the files, and a crash leaves each file whole, old or new (not the
    group: a crash between two renames can leave one file new and the other old). More
    than WRITE_MANY_GROUP files are written a group at a time (a failure leaves the
    groups before it written).

    A text may be given as UTF-8 bytes. With `base_hashes`, a path listed there is
    written only when its current text still hashes to its base; one that changed since
    it was read (a hand edit) is left exactly as it is and is not in the result.
    """
    if len(texts) > WRITE_MANY_GROUP:
        # Thousands of files (a first rebuild) would hold as many locks and descriptors.
        items = list(texts.items())
        written: list[str] = []
        for start in range(0, len(items), WRITE_MANY_GROUP):
            group = dict(items[start : start + WRITE_MANY_GROUP])
            written += write_many(group, base_hashes=base_hashes)
        return written
    paths = {rel: resolve(rel) for rel in texts}
    with contextlib.ExitStack() as stack:
        for rel in sorted(texts):
            stack.enter_context(locked(rel))
        todo = [
            rel
            for rel in texts
            if base_hashes is None or rel not in base_hashes or file_hash(rel) == base_hashes[rel]
        ]
        staged: list[tuple[str, str, int]] = []  # (rel, temp path, open descriptor)
        try:
            for rel in todo:
                path = paths[rel]
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
                staged.append((rel, tmp, fd))
                data = texts[rel]
                view = memoryview(data.encode("utf-8") if isinstance(data, str) else data)
                while view:
                    view = view[os.write(fd, view) :]
            _fsync_all([fd for _, _, fd in staged])
        except BaseException:
            for _, tmp, fd in staged:
                os.close(fd)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            raise
        for _, _, fd in staged:
            os.close(fd)
        # What each file held, for the change hooks (the history), read under the locks.
        before = {
            rel: (_raw(rel), fingerprint(rel)) for rel in todo if _hooks and not _is_hidden(rel)
        }
        directories: dict[Path, None] = {}
        for rel, tmp, _ in staged:
            os.replace(tmp, paths[rel])
            directories[paths[rel].parent] = None
        dir_fds = [os.open(directory, os.O_RDONLY) for directory in directories]
        try:
            _fsync_all(dir_fds)
        finally:
            for fd in dir_fds:
                os.close(fd)
        for rel in todo:
            data = texts[rel]
            old_data, old_fp = before.get(rel, (None, None))
            _notify(
                rel,
                "write",
                before=old_data,
                before_fingerprint=old_fp,
                data=data.encode("utf-8") if isinstance(data, str) else data,
            )
    return todo


def write_unsynced(rel: str, text: str) -> None:
    """Replace a file atomically (temp file and rename, under its lock) without fsync:
    only for derived state that its readers check and can rebuild — after a crash it may
    hold an older text (or, on some filesystems, be empty), never a mix. The facts
    index's state and the wiki's list of changes are written so."""
    path = resolve(rel)
    with locked(rel):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def volume_now_ns() -> int:
    """The workspace volume's clock now, in ns: the time its filesystem stamps on a change
    made at this moment (set on a file under the lock directory and read back). The
    ctimes a scan compares come from this clock — on a network volume the server's, not
    this host's — so "changed since" is asked in one clock."""
    lock_dir = root() / LOCK_DIR
    lock_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_dir / "clock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.utime(fd)
        return os.fstat(fd).st_ctime_ns
    finally:
        os.close(fd)


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


# --- extra paths: more Markdown to read, outside the agents' memory (read-only) --------------
#
# OpenClaw's memorySearch.extraPaths: folders or single files of Markdown that memory_search
# and memory_get read beside an agent's own memory. Configured in MEMORY_EXTRA_PATHS,
# absolute or relative to the home. Read-only: no write function here takes such a path.
# The same traversal rules as scan_files: symlinks (files or folders, the configured path
# itself too) are skipped, hidden entries are skipped, only `.md` files are read. Each is
# shown under its own prefix, `extra/<name>/...` (a folder) or `extra/<name>.md` (a file),
# <name> taken from the path's last part.

EXTRA_PREFIX = "extra"
_NAME_SPECIALS = re.compile(r"[^A-Za-z0-9_-]+")


class ExtraRoot(NamedTuple):
    """One configured extra path: the name it is shown under, the absolute path, whether
    it is one file, and why it is not read ("" when it is)."""

    name: str
    path: str
    is_file: bool
    problem: str


def _extra_name(last_part: str, *, is_file: bool, taken: set[str]) -> str:
    stem = last_part[:-3] if is_file and last_part.endswith(".md") else last_part
    stem = _NAME_SPECIALS.sub("-", unicodedata.normalize("NFKC", stem)).strip("-") or "extra"
    name, number = stem, 1
    while (f"{name}.md" if is_file else name) in taken:
        number += 1
        name = f"{stem}-{number}"
    return f"{name}.md" if is_file else name


def extra_roots() -> list[ExtraRoot]:
    """The configured extra paths, in the order given, each with its shown name and why
    it is not read ("" when it is: a folder, or a regular `.md` file, and not a link)."""
    found: list[ExtraRoot] = []
    taken: set[str] = set()
    seen: set[str] = set()
    for raw in getattr(settings, "MEMORY_EXTRA_PATHS", []) or []:
        value = os.path.expanduser(str(raw).strip())
        if not value:
            continue
        path = os.path.normpath(value if os.path.isabs(value) else os.path.join(root(), value))
        if path in seen:
            continue
        seen.add(path)
        problem = ""
        is_file = False
        try:
            st = os.lstat(path)
        except OSError:
            problem = "does not exist"
        else:
            if stat_module.S_ISLNK(st.st_mode):
                problem = "is a symbolic link (skipped, as OpenClaw skips them)"
            elif stat_module.S_ISREG(st.st_mode):
                is_file = True
                if not path.endswith(".md"):
                    problem = "is not a Markdown (.md) file"
            elif not stat_module.S_ISDIR(st.st_mode):
                problem = "is neither a folder nor a file"
        if problem:  # never read, so never shown: named as it is
            found.append(ExtraRoot(os.path.basename(path), path, is_file, problem))
            continue
        name = _extra_name(os.path.basename(path), is_file=is_file, taken=taken)
        taken.add(name)
        found.append(ExtraRoot(name, path, is_file, problem))
    return found


def scan_extra() -> list[ScannedFile]:
    """Every Markdown file of the usable extra paths, as scan_files lists files, with its
    shown path (`extra/<name>/<path below>`, or `extra/<name>.md`) as `path` and the real
    one as `abspath`. read_scanned reads them (O_NOFOLLOW). Unsorted."""
    found: list[ScannedFile] = []
    for extra in extra_roots():
        if extra.problem:
            continue
        if extra.is_file:
            try:
                st = os.stat(extra.path, follow_symlinks=False)
            except OSError:
                continue
            if stat_module.S_ISREG(st.st_mode):
                found.append(
                    ScannedFile(
                        f"{EXTRA_PREFIX}/{extra.name}",
                        extra.path,
                        st.st_size,
                        st.st_mtime_ns,
                        st.st_ctime_ns,
                        st.st_ino,
                    )
                )
            continue
        found += _scan_tree(
            extra.path, f"{EXTRA_PREFIX}/{extra.name}/", suffix=".md", recursive=True
        )
    return found


def is_extra_path(path: str) -> bool:
    return isinstance(path, str) and path.startswith(f"{EXTRA_PREFIX}/")


def read_extra_keyed(shown: str) -> tuple[str, tuple[int, int, int, int]] | None:
    """The text of an extra file by its shown path with its key (as read_keyed gives it),
    or None when there is no such file.

    PathRefused for a path that is not `extra/<name>/<...>.md` / `extra/<name>.md` of a
    configured, usable extra path, has `..`, empty or hidden parts, or goes through a
    symbolic link below the configured path. Reading only: nothing here writes. Bytes
    that are not UTF-8 are replaced (and the text still reads)."""
    _check_relative(shown)
    parts = shown.split("/")
    if parts[0] != EXTRA_PREFIX or len(parts) < 2 or not shown.endswith(".md"):
        raise PathRefused(f"Not an extra path: {shown!r}.")
    if any(part.startswith(".") for part in parts):
        raise PathRefused(f"Hidden files are not read: {shown!r}.")
    by_name = {extra.name: extra for extra in extra_roots() if not extra.problem}
    extra = by_name.get(parts[1])
    if extra is None:
        raise PathRefused(f"No extra path is shown as {EXTRA_PREFIX}/{parts[1]}.")
    if extra.is_file:
        if len(parts) != 2:
            raise PathRefused(f"{EXTRA_PREFIX}/{extra.name} is one file, not a folder.")
        candidate = extra.path
    else:
        if len(parts) < 3:
            raise PathRefused(f"{EXTRA_PREFIX}/{extra.name} is a folder: name a file in it.")
        candidate = os.path.join(extra.path, *parts[2:])
        if os.path.realpath(candidate) != os.path.join(os.path.realpath(extra.path), *parts[2:]):
            raise PathRefused(f"Path goes through a symbolic link: {shown!r}.")
    try:
        fd = os.open(candidate, os.O_RDONLY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError:  # ELOOP: the file itself is a symlink
        raise PathRefused(f"Path is a symbolic link: {shown!r}.") from None
    st = os.fstat(fd)
    if not stat_module.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    with open(fd, encoding="utf-8", newline="", errors="replace") as handle:
        return handle.read(), (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def read_extra(shown: str) -> str | None:
    """The text of an extra file by its shown path (read_extra_keyed without the key)."""
    found = read_extra_keyed(shown)
    return None if found is None else found[0]


# --- a survey, for the doctor: everything as it is, nothing followed or changed ------------


class Entry(NamedTuple):
    """One directory entry as found: its workspace-relative path, what it is ("file",
    "dir", "symlink" or "other"), its size (files), and whether its name is hidden."""

    path: str
    kind: str
    size: int
    hidden: bool


def survey(rel_dir: str = "", *, recursive: bool = True) -> list[Entry]:
    """Every entry below a workspace directory, hidden ones and symbolic links included —
    links are reported, never followed; hidden directories are reported, not entered; the
    lock directory is left out. Reads no file and writes nothing. Sorted by path; a
    missing directory gives nothing."""
    base = resolve(rel_dir) if rel_dir else root()
    found: list[Entry] = []
    pending = [(str(base), f"{rel_dir}/" if rel_dir else "")]
    while pending:
        directory, prefix = pending.pop()
        try:
            iterator = os.scandir(directory)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        with iterator:
            for item in iterator:
                if not prefix and item.name == LOCK_DIR:
                    continue
                rel = prefix + item.name
                hidden = item.name.startswith(".")
                if item.is_symlink():
                    found.append(Entry(rel, "symlink", 0, hidden))
                elif item.is_dir(follow_symlinks=False):
                    found.append(Entry(rel, "dir", 0, hidden))
                    if recursive and not hidden:
                        pending.append((item.path, rel + "/"))
                elif item.is_file(follow_symlinks=False):
                    size = item.stat(follow_symlinks=False).st_size
                    found.append(Entry(rel, "file", size, hidden))
                else:
                    found.append(Entry(rel, "other", 0, hidden))
    found.sort(key=lambda entry: entry.path)
    return found


def undecodable_at(rel: str) -> int | None:
    """The offset of the first byte of a file that is not UTF-8, or None when all of it
    is (or the file is gone). Reads only."""
    data = read_bytes_from(rel, 0)
    if data is None:
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start
    return None


def is_dir(rel: str = "") -> bool:
    """Whether a workspace path ("" the root) is a directory, not a link to one."""
    path = resolve(rel) if rel else root()
    return path.is_dir() and not path.is_symlink()


# --- the change log ----------------------------------------------------------------------
#
# Every write, append and delete above ends by appending its path to the change log, a
# directory of numbered segments (`.memory-changes/0000000001.log`, one path a line) on the
# workspace volume itself. A search index (one per host, rebuildable from the files) keeps
# how far it has read and re-reads just the files named since, so a change made through
# the app on any host is in the very next query on every host. It lives with the files, not
# in the database: it is written when the file is (never rolled back with a transaction
# after the file already changed), needs no database to write, and reaches other hosts as
# the files and their locks do. The log says only "look at this path again": the file is
# the truth, so a line read twice or a path changed again since costs a re-read, nothing
# more. Appends take the segment's flock (O_APPEND alone is not atomic on NFS); a segment
# past CHANGES_SEGMENT_BYTES is closed and the next one started; the oldest are removed
# past CHANGES_KEEP (a reader that far behind rescans every file instead).

ChangesPosition = tuple[int, int]  # (segment number, byte offset in it)


def _changes_dir() -> Path:
    return root() / CHANGES_DIR


def _segment_path(directory: Path, number: int) -> Path:
    return directory / f"{number:010d}.log"


def _segments(directory: Path) -> list[int]:
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(int(name[:-4]) for name in names if name.endswith(".log") and name[:-4].isdigit())


def _changed(rel: str) -> None:
    """Append `rel` to the change log (after its file changed)."""
    directory = _changes_dir()
    directory.mkdir(exist_ok=True)
    line = (rel + "\n").encode("utf-8")
    while True:
        numbers = _segments(directory)
        number = numbers[-1] if numbers else 1
        fd = os.open(
            _segment_path(directory, number), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
        )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_size < CHANGES_SEGMENT_BYTES:
                os.write(fd, line)
                return
        finally:
            os.close(fd)
        # Full: start the next segment (another writer may have just done so) and retry.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(_segment_path(directory, number + 1), os.O_CREAT | os.O_EXCL, 0o644))
        for old in numbers[: max(0, len(numbers) + 1 - CHANGES_KEEP)]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(_segment_path(directory, old))


def changes_position() -> ChangesPosition:
    """Where the change log ends now: read from here to learn of later changes only."""
    directory = _changes_dir()
    numbers = _segments(directory)
    if not numbers:
        return (1, 0)
    try:
        return (numbers[-1], os.stat(_segment_path(directory, numbers[-1])).st_size)
    except FileNotFoundError:
        return (numbers[-1], 0)


def changes_since(position: ChangesPosition) -> tuple[list[str], ChangesPosition] | None:
    """The paths changed since `position`, in order (repeats possible), and the position
    after them. None when the log no longer reaches back that far (its segment was removed):
    the caller must look at every file instead. Costs one open and fstat when nothing is new.
    """
    directory = _changes_dir()
    number, offset = position
    paths: list[str] = []
    while True:
        try:
            with open(_segment_path(directory, number), "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size > offset:
                    handle.seek(offset)
                    data = handle.read(size - offset)
                    # Only whole lines: a writer may be half-way through one.
                    end = data.rfind(b"\n") + 1
                    paths += data[:end].decode("utf-8", errors="replace").splitlines()
                    offset += end
        except FileNotFoundError:
            numbers = _segments(directory)
            if any(n > number for n in numbers) or (numbers and number < numbers[0]):
                return None  # removed while we were behind
            return paths, (number, offset)
        if offset < CHANGES_SEGMENT_BYTES:
            return paths, (number, offset)
        # This segment is full: the rest is in the next one (when it exists yet).
        if not _segment_path(directory, number + 1).exists():
            return paths, (number, offset)
        number, offset = number + 1, 0


def list_dirs(rel_dir: str) -> list[str]:
    """Names of the subdirectories of a workspace directory: no symlinks, nothing hidden.
    A missing directory lists nothing."""
    base = resolve(rel_dir) if rel_dir else root()
    try:
        with os.scandir(base) as iterator:
            return sorted(
                entry.name
                for entry in iterator
                if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
            )
    except (FileNotFoundError, NotADirectoryError):
        return []


def read_keyed(rel: str) -> tuple[str, tuple[int, int, int, int]] | None:
    """The text of a file with the key scan_files gives it, (size, mtime_ns, ctime_ns,
    inode), taken from the open file itself; None when it is missing, or is not a regular
    file, or any part of its path is a symlink."""
    return read_keyed_many([rel]).get(rel)


def read_keyed_many(rels: list[str]) -> dict[str, tuple[str, tuple[int, int, int, int]] | None]:
    """read_keyed for several files (extra paths too, by their shown `extra/…` path), the
    root resolved once. Each path is opened one part
    at a time below the root, every part with O_NOFOLLOW: a symlink anywhere below the root
    makes the file None, exactly as `resolve` refuses it — without a realpath per file."""
    base = root()
    found: dict[str, tuple[str, tuple[int, int, int, int]] | None] = {}
    for rel in rels:
        try:
            _check_relative(rel)
        except PathRefused:
            found[rel] = None
            continue
        if is_extra_path(rel):
            try:
                found[rel] = read_extra_keyed(rel)
            except PathRefused:
                found[rel] = None
            continue
        found[rel] = _read_below(base, rel.split("/"))
    return found


def _read_below(base: Path, parts: list[str]) -> tuple[str, tuple[int, int, int, int]] | None:
    flags = os.O_RDONLY | os.O_NOFOLLOW
    try:
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            child = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        file_fd = os.open(parts[-1], flags, dir_fd=fd)
    except OSError:  # missing, not a directory, or a symlink (ELOOP)
        return None
    finally:
        os.close(fd)
    st = os.fstat(file_fd)
    if not stat_module.S_ISREG(st.st_mode):
        os.close(file_fd)
        return None
    with open(file_fd, encoding="utf-8", newline="", errors="replace") as handle:
        return handle.read(), (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
