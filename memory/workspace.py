"""The only code that touches the disk under MY_AGENT_HOME.

Everyone else passes workspace-relative POSIX paths ("users/owner/USER.md",
"agents/helper/memory/2026-11-30.md"). This module

- resolves each path and refuses any that escapes the root, also through symlinks
  (PathRefused, nothing read or written). A name is one name whatever its Unicode
  spelling: macOS writes `sách.md` decomposed (NFD), a client sends it composed (NFC);
  both find the file that is there, and a new file is created composed;
- writes atomically: a temp file in the same directory, fsync, os.replace, fsync of the
  directory — a reader sees the old text or the new, never half. A rewrite keeps the
  file's mode; a new file gets 0666 & ~umask (the kernel applies the umask);
- appends whole or not at all: the line is encoded first and written with one write();
  a short write or an error (disk full) truncates the file back to its previous size
  under the lock, so no half line is ever left;
- serialises every change of one file with a cross-process lock (fcntl.flock). Locks are
  a fixed pool of stripe files under `.memory-locks/` (a file's stripe is a hash of its
  path), so the directory never grows with the number of files. Appends open the file
  *after* taking the lock, and rewrites take the same lock, so an append racing a
  rewrite is never lost. Re-entrant within a thread. Group guards (`guarded`) are a
  second, separate pool for operations over a set of files (the facts and INDEX.md, a
  wiki vault); see `locked` for the order rules that keep two stripes from deadlocking;
- keeps each file's style: text is handed out as str with "\\n" line endings and no
  byte-order mark; a file that has CRLF line endings or a BOM on disk keeps them on every
  rewrite and append (SPEC §1's "\\n" is what new files get and what the prompt reads);
- never fails a read on bytes that are not UTF-8: they read as U+FFFD, and read_file()
  says so (`invalid_utf8`), so interfaces can tell the person;
- turns a full disk into DiskFull (507) and a read-only or unwritable workspace into
  WorkspaceReadOnly (503), naming the file that was not written; reads keep working on a
  read-only workspace (they never create a lock file or anything else);
- returns content hashes so callers can detect a changed base: sha256 of the text as
  read (UTF-8, "\\n" endings, no BOM), or of the raw bytes for a file that is not UTF-8;
- tells every change to the hooks registered with `on_change` (the file history records
  versions from them), inside the file's lock, with who made it: the `Attribution` the
  operations and interfaces set with `attributed(...)` (a context variable, so it follows
  the request, the task or the thread that writes). Nothing here imports a model;
- records every write, append and delete in the change log (`.memory-changes/`, below),
  so a search index on any host that mounts the workspace learns of it at its next query.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import fcntl
import hashlib
import logging
import os
import re
import secrets
import stat as stat_module
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from django.conf import settings

from memory.errors import (
    Conflict,
    DiskFull,
    InvalidInput,
    PathRefused,
    WorkspaceBusy,
    WorkspaceReadOnly,
)

log = logging.getLogger(__name__)
logger = log

LOCK_DIR = ".memory-locks"
CHANGES_DIR = ".memory-changes"
STATE_DIR = ".memory-state"  # derived state (the facts index's, the wiki's change lists)
CHANGES_SEGMENT_BYTES = 1 << 20  # a segment of the change log is closed past this size
CHANGES_KEEP = 16  # segments kept; a reader further behind rescans everything
ABSENT = "absent"  # the hash of a file that does not exist
BOM = b"\xef\xbb\xbf"
# The lock pool: FILE_STRIPES locks for files, GUARD_STRIPES for groups of files. Two
# paths on one stripe merely wait for each other; the directory holds at most these
# files (plus .gitignore), however many memory files there are.
FILE_STRIPES = 256
GUARD_STRIPES = 16
# A thread that holds a file stripe and needs a lower one may not wait for it blindly
# (another thread may hold that one and wait for ours): it polls for this long, then
# gives up with WorkspaceBusy. Never reached by the code here (see `locked`).
OUT_OF_ORDER_WAIT_SECONDS = 30.0
# A temp file of a write is renamed over its target within milliseconds; one older than
# this was left by a write that was killed, and start-up removes it.
STALE_TEMP_SECONDS = 600
MAX_NAME_BYTES = 255  # one path component, as every Linux file system allows
MAX_PATH_BYTES = 3000  # the whole relative path (PATH_MAX is 4096 with the root)
STYLE_PEEK_BYTES = 64 * 1024  # how much of a file is read to learn its line endings

_TEMP_RE = re.compile(r"^\..+\.[0-9a-f]{16}\.tmp$")
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_DENIED = {errno.EACCES, errno.EPERM}

_held = threading.local()


@dataclass(frozen=True)
class FileInfo:
    path: str  # workspace-relative, composed (NFC)
    size: int
    mtime: float


class FileText(NamedTuple):
    """One file as read: `text` with "\\n" line endings and no BOM (bytes that are not
    UTF-8 as U+FFFD), its hash, and what the file looks like on disk."""

    text: str
    hash: str
    invalid_utf8: bool  # some bytes were not UTF-8 and read as U+FFFD
    bom: bool  # the file starts with a UTF-8 byte-order mark
    crlf: bool  # its line endings are CRLF (judged by its first line)


def root() -> Path:
    """The workspace root, read from settings on every call (tests point it at tmp_path)."""
    return Path(settings.MY_AGENT_HOME).expanduser().resolve()


def hash_text(text: str | None) -> str:
    """sha256 of the text, or ABSENT for a file that does not exist."""
    if text is None:
        return ABSENT
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


# --- paths -----------------------------------------------------------------------------


def _check_relative(rel: str) -> str:
    """The composed (NFC) spelling of a relative path, or PathRefused."""
    if not isinstance(rel, str) or not rel:
        raise PathRefused("Empty path.")
    if "\x00" in rel:
        raise PathRefused("Path contains a NUL byte.")
    composed = rel if rel.isascii() else unicodedata.normalize("NFC", rel)
    # Fullwidth dots and slashes fold to ASCII ones under NFKC; refuse them instead of
    # letting another layer interpret them later. (NFD and NFC spell the same name and
    # are both accepted: NFKC of either is the composed form.)
    if not rel.isascii() and unicodedata.normalize("NFKC", rel) != composed:
        raise PathRefused(f"Path has characters that are not plain: {rel!r}.")
    if "\\" in rel or rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        raise PathRefused(f"Path must be relative to the workspace: {rel!r}.")
    parts = composed.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise PathRefused(f"Path may not contain empty, '.' or '..' parts: {rel!r}.")
    try:
        encoded = [part.encode("utf-8") for part in parts]
    except UnicodeEncodeError:
        raise PathRefused(f"Path is not valid Unicode text: {rel!r}.") from None
    if any(len(part) > MAX_NAME_BYTES for part in encoded):
        raise PathRefused(
            f"A name in the path is longer than {MAX_NAME_BYTES} bytes: {rel[:80]!r}…."
        )
    if sum(len(part) + 1 for part in encoded) > MAX_PATH_BYTES:
        raise PathRefused(f"The path is longer than {MAX_PATH_BYTES} bytes.")
    return composed


def _spelled_on_disk(base: Path, composed: str) -> Path:
    """`base / composed` with each name spelled as it is on disk: a name that is not
    there as given but is there in another Unicode normalisation (NFD from macOS) is
    that entry. A name found nowhere stays composed (what a new file is called)."""
    if composed.isascii():
        return base / composed
    current = base
    for part in composed.split("/"):
        candidate = current / part
        if part.isascii() or os.path.lexists(candidate):
            current = candidate
            continue
        try:
            names = sorted(os.listdir(current))
        except OSError:  # missing, or not a directory: the name is new
            current = candidate
            continue
        match = next(
            (
                name
                for name in names
                if not name.isascii() and unicodedata.normalize("NFC", name) == part
            ),
            None,
        )
        current = current / match if match is not None else candidate
    return current


def _first_link(base: Path, candidate: Path) -> tuple[str, str] | None:
    """(the workspace-relative path of the first symbolic link on the way to candidate,
    where it points), or None when there is none."""
    current = base
    for part in candidate.relative_to(base).parts:
        current = current / part
        if os.path.islink(current):
            try:
                target = os.readlink(current)
            except OSError:
                target = "?"
            return current.relative_to(base).as_posix(), target
    return None


def resolve(rel: str) -> Path:
    """The absolute path of `rel` (as spelled on disk), refusing anything outside the
    workspace.

    Raises PathRefused for absolute paths, `..`, NUL, compatibility characters (fullwidth
    `．`), names over 255 bytes, any path whose real location (symlinks followed) is not
    below the root, and any path that goes through a symbolic link below the root: a link
    inside one agent's dir must not become a way into another agent's files (the root
    itself may be a link). The message names the link and where it points.
    """
    composed = _check_relative(rel)
    base = root()
    candidate = _spelled_on_disk(base, composed)
    real = Path(os.path.realpath(candidate))
    if real != candidate:
        link = _first_link(base, candidate)
        if link is not None:
            where, target = link
            raise PathRefused(
                f"{where} is a symbolic link (to {target}); links inside the workspace are "
                f"not followed, so {rel!r} cannot be used. Move the folder or file into the "
                "workspace instead (docs/openclaw.md, symbolic links)."
            )
    if real != base and base not in real.parents:
        raise PathRefused(f"Path leaves the workspace: {rel!r}.")
    if real != candidate:
        raise PathRefused(f"Path goes through a symbolic link: {rel!r}.")
    return candidate


def relative(path: Path) -> str:
    return path.relative_to(root()).as_posix()


def _composed(name: str) -> str:
    return name if name.isascii() else unicodedata.normalize("NFC", name)


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
    # at their next query), then to the in-process hooks (the file history). The file has
    # changed already: a change log that cannot take the line (a disk that just filled up)
    # is logged, never turned into an error for a write that happened.
    try:
        _changed(rel)
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


def _raw(rel: str) -> bytes | None:
    return read_bytes_from(rel, 0)


def adopt(rel: str) -> None:
    """Tell the hooks that the file as it is now was made by the current attribution
    (nothing is written). Under the file's lock."""
    with locked(rel):
        _notify(rel, "adopt", before_fingerprint=fingerprint(rel))


# --- storage errors --------------------------------------------------------------------


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
def _storage(rel: str) -> Iterator[None]:
    """Around every write: a full, read-only or unwritable disk becomes a domain error
    that says so (507 / 503), naming the file."""
    try:
        yield
    except OSError as exc:
        translated = _translated(exc, rel)
        if translated is exc:
            raise
        raise translated from exc


def _encode(text: str, rel: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (from JSON's "\ud800"): not text any file can hold.
        raise InvalidInput(
            f"The text for {rel} is not valid Unicode (a lone surrogate character)."
        ) from None


# --- locking -------------------------------------------------------------------------


def _stripe(kind: str, key: str) -> int:
    digest = hashlib.blake2b(key.encode("utf-8", errors="surrogatepass"), digest_size=4)
    count = FILE_STRIPES if kind == "f" else GUARD_STRIPES
    return int.from_bytes(digest.digest(), "big") % count


def _stripe_name(kind: str, number: int) -> str:
    return f"{kind}-{number:03d}.lock"


def _lock_dir() -> Path:
    return root() / LOCK_DIR


def _ensure_machinery_dir(directory: Path) -> None:
    """A directory of the app's machinery (the lock pool, the derived state) with its
    `.gitignore` (`*`: never in the owner's git). Only writers call this."""
    if not directory.is_dir():
        directory.mkdir(parents=True, exist_ok=True)
    ignore = directory / ".gitignore"
    if not ignore.exists():
        try:
            fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:  # another writer made it just now
            return
        with os.fdopen(fd, "w") as handle:
            handle.write("*\n")


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
    path = directory / _stripe_name(kind, number)
    if shared:
        try:
            return os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
    with _storage(rel):
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except FileNotFoundError:
            _ensure_machinery_dir(directory)
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
    directory = _lock_dir()
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

    Order rules (what keeps stripes from deadlocking): several file locks are taken
    together with `locked_many` (in stripe order); a group guard (`guarded`) is taken
    before, never while holding, a file lock; a thread needing a stripe below one it holds
    polls instead of waiting (WorkspaceBusy after OUT_OF_ORDER_WAIT_SECONDS).
    """
    composed = _check_relative(rel)
    resolve(rel)
    with _stripe_lock("f", _stripe("f", composed), shared=shared, rel=composed):
        yield


@contextlib.contextmanager
def locked_many(paths: Iterable[str]) -> Iterator[None]:
    """Hold the locks of several files at once, taken in stripe order so two callers
    sharing files can never deadlock each other."""
    paths = list(paths)
    stripes = sorted({_stripe("f", _check_relative(rel)) for rel in paths})
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
    writer of the group takes it first. Re-entrant; taken before any file lock."""
    composed = _check_relative(rel_dir)
    with _stripe_lock("g", _stripe("g", composed), shared=False, rel=composed):
        yield


# --- reading -------------------------------------------------------------------------


def _decode(data: bytes) -> FileText:
    bom = data.startswith(BOM)
    body = data[len(BOM) :] if bom else data
    try:
        text = body.decode("utf-8")
        invalid = False
    except UnicodeDecodeError:
        text = body.decode("utf-8", errors="replace")
        invalid = True
    first = body.find(b"\n")
    crlf = first > 0 and body[first - 1 : first] == b"\r"
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    digest = hashlib.sha256(data).hexdigest() if invalid else hash_text(text)
    return FileText(text, digest, invalid, bom, crlf)


def _read_path(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def read_file(rel: str) -> FileText | None:
    """The file as read (text, hash, whether it had undecodable bytes, BOM, CRLF), or
    None when it does not exist. Never raises on bytes that are not UTF-8."""
    data = _read_path(resolve(rel))
    return None if data is None else _decode(data)


def read(rel: str) -> str | None:
    """The text of a file ("\\n" line endings, no BOM; bytes that are not UTF-8 as
    U+FFFD), or None when it does not exist (a missing file is absent, never an
    error)."""
    data = _read_path(resolve(rel))
    return None if data is None else decode(data)


def read_with_hash(rel: str) -> tuple[str | None, str]:
    """The text of a file and the hash of exactly that text, from one read under the
    file's (shared) lock — what an editor opens and later sends back as `base_hash`. Two
    reads (text, then hash) could pair an old text with a newer hash, and a write checked
    against that hash would erase what was appended in between."""
    with locked(rel, shared=True):
        found = read_file(rel)
    if found is None:
        return None, ABSENT
    return found.text, found.hash


def read_file_locked(rel: str) -> FileText | None:
    """read_file() under the file's shared lock (never half an append)."""
    with locked(rel, shared=True):
        return read_file(rel)


def read_bytes_from(rel: str, offset: int) -> bytes | None:
    """The bytes of a file from `offset` on (None when missing)."""
    path = resolve(rel)
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            return handle.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def decode(data: bytes) -> str:
    """Bytes of a memory file as text, as read() hands it out: "\\n" line endings, no
    BOM, bytes that are not UTF-8 as U+FFFD (without the hash read_file computes)."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    text = data.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n") if "\r" in text else text


def file_hash(rel: str) -> str:
    found = read_file(rel)
    return ABSENT if found is None else found.hash


def exists(rel: str) -> bool:
    return resolve(rel).is_file()


def stat(rel: str) -> FileInfo | None:
    path = resolve(rel)
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return FileInfo(_check_relative(rel), st.st_size, st.st_mtime)


def is_link(rel: str) -> str | None:
    """Where `rel` points when it is itself a symbolic link, else None. Looks only (for
    reports: an agent dir that is a link cannot be used)."""
    composed = _check_relative(rel)
    path = _spelled_on_disk(root(), composed)
    if not os.path.islink(path):
        return None
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def kind_of(rel: str) -> str:
    """ "file", "dir", "link", "missing" or "other" for `rel`, without following a link
    (and without refusing one: for reports)."""
    composed = _check_relative(rel)
    path = _spelled_on_disk(root(), composed)
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    if stat_module.S_ISLNK(st.st_mode):
        return "link"
    if stat_module.S_ISDIR(st.st_mode):
        return "dir"
    if stat_module.S_ISREG(st.st_mode):
        return "file"
    return "other"


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
            rel = _composed(Path(full).relative_to(root()).as_posix())
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
                            pending.append(
                                (child, f"{abs_prefix}{name}/", f"{rel_prefix}{_composed(name)}/")
                            )
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
                                rel_prefix + (name if name.isascii() else _composed(name)),
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
    """The text of a file `scan_files` found (as read() hands it out), or None when it is
    gone or has become a symlink since (O_NOFOLLOW: the scan's guarantee that nothing
    leads out still holds)."""
    try:
        fd = os.open(scanned.abspath, os.O_RDONLY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError:  # ELOOP: replaced by a symlink
        return None
    # os.read rather than a buffered open: a vault load or a search reads thousands of
    # files. One read of the size the scan saw, plus a byte: fewer bytes means the end of
    # the file was reached (a file that grew since is read on to its end).
    try:
        data = os.read(fd, scanned.size + 1)
        if len(data) > scanned.size:
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            data = b"".join(chunks)
    finally:
        os.close(fd)
    return decode(data)


# --- writing -------------------------------------------------------------------------


class _Style(NamedTuple):
    mode: int  # permission bits to keep
    bom: bool
    crlf: bool
    size: int


def _style_of(path: Path) -> _Style | None:
    """How an existing file looks (mode, BOM, CRLF), from its first bytes; None when it
    does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return _style_at(fd)[0]
    finally:
        os.close(fd)


def _style_at(fd: int) -> tuple[_Style, os.stat_result]:
    """The style of the open file (its mode, whether it starts with a BOM, whether its
    first line ends in CRLF, its size), and the stat it was read from."""
    st = os.fstat(fd)
    head = os.pread(fd, STYLE_PEEK_BYTES, 0)
    first = head.find(b"\n")
    crlf = first > 0 and head[first - 1 : first] == b"\r"
    return _Style(stat_module.S_IMODE(st.st_mode), head.startswith(BOM), crlf, st.st_size), st


def _normalised(text: str) -> str:
    """Text as the workspace stores and hands it out: "\\n" line endings, no leading BOM
    (whether a file has CRLF or a BOM is the file's property, kept on disk)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n") if "\r" in text else text


def _encoded(text: str, style: _Style | None, rel: str) -> bytes:
    if style is not None and style.crlf:
        text = text.replace("\n", "\r\n")
    data = _encode(text, rel)
    return BOM + data if style is not None and style.bom else data


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_beside(path: Path, *, mode: int | None) -> tuple[int, Path]:
    """A new temp file beside `path` (`.<name>.<16 hex>.tmp`, what remove_stale_temp_files
    recognises), open for writing: created 0666 & ~umask (the kernel applies the umask,
    as for any new file), then set to `mode` exactly when given (a rewrite's)."""
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


def _write_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write `data` to a temp file beside `path`, fsync, rename over it, fsync the dir.
    The temp file is created 0666 & ~umask (the kernel applies the umask, as for any new
    file); `mode` (a rewrite's) is then set exactly. Nothing is left behind on failure."""
    fd, tmp = _temp_beside(path, mode=mode)
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


def _replace(rel: str, path: Path, data: bytes, *, mode: int | None) -> None:
    """Write `data` over the file atomically and tell the hooks. Caller holds the lock."""
    watched = bool(_hooks) and not _is_hidden(rel)
    before = _raw(rel) if watched else None
    before_fp = fingerprint(rel) if watched else None
    _write_atomic(path, data, mode=mode)
    _notify(rel, "write", before=before, before_fingerprint=before_fp, data=data)


def write(rel: str, text: str) -> str:
    """Replace a file's text atomically, under its lock; the file keeps its mode, its
    line endings (CRLF stays CRLF) and its BOM. Returns the new hash (of the text as it
    will read back). DiskFull / WorkspaceReadOnly when the disk refuses (the old text
    stays); InvalidInput for text that is not valid Unicode."""
    path = resolve(rel)
    text = _normalised(text)
    with locked(rel), _storage(rel):
        style = _style_of(path)
        data = _encoded(text, style, rel)
        _replace(rel, path, data, mode=style.mode if style else None)
    return hash_text(text)


def write_raw(rel: str, data: bytes) -> str:
    """Replace a file's bytes atomically, under its lock (write() for text already encoded,
    or for restoring bytes exactly as they were: no line endings or BOM are changed). The
    file keeps its mode. Returns the sha256 of the bytes. DiskFull / WorkspaceReadOnly as
    write()."""
    path = resolve(rel)
    with locked(rel), _storage(rel):
        style = _style_of(path)
        _replace(rel, path, data, mode=style.mode if style else None)
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
    no newline (a hand edit, a textarea) gets one first. A CRLF file gets CRLF lines.
    Only the file's first and last bytes are read, never its text: the cost does not
    grow with the file (no hash is returned — it would need the whole text).

    Whole or not at all: the bytes are encoded first and written with one write(); on a
    short write or any error the file is truncated back to its previous size (still under
    the lock) and DiskFull / WorkspaceReadOnly is raised. Only the new bytes are written:
    a file with bytes that are not UTF-8 keeps them, and still takes appends.

    The file is opened only after the lock is held, so an append never writes into a file
    that a concurrent rewrite has just replaced.
    """
    path = resolve(rel)
    text = _normalised(text)
    create_with = _normalised(create_with)
    with locked(rel), _storage(rel):
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW)
        except FileNotFoundError:
            data = _encode(create_with + text, rel)
            _write_atomic(path, data)
            _notify(rel, "write", before=None, before_fingerprint=None, data=data)
            return
        try:
            style, st = _style_at(fd)
            size = st.st_size
            before_fp = Fingerprint(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            if size == (len(BOM) if style.bom else 0):
                # Empty: start it as a new file would start, keeping its mode and BOM.
                os.close(fd)
                fd = -1
                data = _encoded(create_with + text, style, rel)
                _write_atomic(path, data, mode=style.mode)
                before = BOM if style.bom else b""
                _notify(rel, "write", before=before, before_fingerprint=before_fp, data=data)
                return
            if os.pread(fd, 1, size - 1) != b"\n":
                text = "\n" + text
            data = _encoded(text, style._replace(bom=False), rel)  # the BOM is there already
            try:
                written = os.write(fd, data)
                if written != len(data):
                    raise OSError(errno.ENOSPC, f"short write ({written} of {len(data)} bytes)")
                os.fsync(fd)
            except BaseException:
                # Never leave part of the line: back to exactly what was there.
                os.ftruncate(fd, size)
                with contextlib.suppress(OSError):
                    os.fsync(fd)
                raise
            _notify(rel, "append", before_fingerprint=before_fp, data=data, offset=size)
        finally:
            if fd >= 0:
                os.close(fd)


def delete(rel: str) -> bool:
    """Remove a file under its lock. Returns False when it did not exist."""
    path = resolve(rel)
    with locked(rel), _storage(rel):
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
    path = resolve(rel)
    with _storage(rel):
        path.mkdir(parents=True, exist_ok=True)


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
    """Replace several files, each atomically, under all their locks (locked_many).
    Returns the paths written, in the order given. Each file keeps its mode, its line
    endings and its BOM, as with write().

    Every new text is written to a temp file beside its target and all of them are
    fsynced (concurrently) before the first rename; then each is renamed over its target
    and each directory is fsynced once. So a failure while writing — a full disk —
    changes none of the files, and a crash leaves each file whole, old or new (not the
    group: a crash between two renames can leave one file new and the other old). More
    than WRITE_MANY_GROUP files are written a group at a time (a failure leaves the
    groups before it written). DiskFull / WorkspaceReadOnly when the disk refuses.

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
    names = sorted(texts)
    named = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    with locked_many(texts), _storage(named):
        todo = [
            rel
            for rel in texts
            if base_hashes is None or rel not in base_hashes or file_hash(rel) == base_hashes[rel]
        ]
        staged: list[tuple[str, Path, int]] = []  # (rel, temp path, open descriptor)
        encoded: dict[str, bytes] = {}
        try:
            for rel in todo:
                path = paths[rel]
                data = texts[rel]
                style = _style_of(path)
                if isinstance(data, str):
                    data = _encoded(_normalised(data), style, rel)
                encoded[rel] = data
                fd, tmp = _temp_beside(path, mode=style.mode if style else None)
                staged.append((rel, tmp, fd))
                view = memoryview(data)
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
            old_data, old_fp = before.get(rel, (None, None))
            _notify(rel, "write", before=old_data, before_fingerprint=old_fp, data=encoded[rel])
    return todo


def write_unsynced(rel: str, text: str) -> None:
    """Replace a file atomically (temp file and rename, under its lock) without fsync:
    only for derived state that its readers check and can rebuild — after a crash it may
    hold an older text (or, on some filesystems, be empty), never a mix. The facts
    index's state and the wiki's list of changes are written so."""
    path = resolve(rel)
    with locked(rel), _storage(rel):
        fd, tmp = _temp_beside(path, mode=None)
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
    lock_dir = _lock_dir()
    with _storage(LOCK_DIR):
        try:
            fd = os.open(lock_dir / "clock", os.O_RDWR | os.O_CREAT, 0o666)
        except FileNotFoundError:
            _ensure_machinery_dir(lock_dir)
            fd = os.open(lock_dir / "clock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        os.utime(fd)
        return os.fstat(fd).st_ctime_ns
    finally:
        os.close(fd)


# --- start-up ----------------------------------------------------------------------------


def prepare() -> None:
    """Make the workspace ready for writers (called at start-up by memory_init): the lock
    pool's directory with its `.gitignore` and every stripe, so readers always find the
    stripe they share; lock files of older versions (one per path) are removed; the
    derived-state directory with its `.gitignore`. Raises DiskFull / WorkspaceReadOnly when
    the workspace cannot be written."""
    directory = _lock_dir()
    wanted = {_stripe_name("f", n) for n in range(FILE_STRIPES)}
    wanted |= {_stripe_name("g", n) for n in range(GUARD_STRIPES)}
    with _storage(STATE_DIR):
        _ensure_machinery_dir(root() / STATE_DIR)
    with _storage(LOCK_DIR):
        _ensure_machinery_dir(directory)
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
    not followed; the lock directory is skipped. Returns the paths removed."""
    base = root()
    removed: list[str] = []
    cutoff = time.time() - older_than
    if not base.is_dir():
        return removed
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if d != LOCK_DIR]
        for name in filenames:
            if not _TEMP_RE.match(name):
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
                log.warning("could not remove the stale temp file %s: %s", rel, exc)
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
    for raw in settings.MEMORY_EXTRA_PATHS:
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
    with open(fd, "rb") as handle:
        return _decode(handle.read()).text, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


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
    if not directory.is_dir():
        directory.mkdir(exist_ok=True)
        # Machinery, not memory: never in the owner's git (as .memory-locks/).
        with contextlib.suppress(FileExistsError):
            with open(directory / ".gitignore", "x") as handle:
                handle.write("*\n")
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
        # A name macOS wrote decomposed is found by its composed spelling (as resolve does).
        parts = _spelled_on_disk(base, _check_relative(rel)).relative_to(base).parts
        found[rel] = _read_below(base, list(parts))
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
    with open(file_fd, "rb") as handle:
        data = handle.read()
    return _decode(data).text, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
