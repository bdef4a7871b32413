"""Listings and scans: which files a directory holds, with what stat() says of them.

Symlinks (files or directories) are never followed and never listed, hidden entries and
the lock directory are left out, and every path handed out is composed (NFC). A missing
directory lists nothing. `scan_files` is the cheap form for callers that re-check every
file on every call (search, the wiki's vault); `read_scanned` reads what it found.
"""

from __future__ import annotations

import collections
import os
import stat as stat_module
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TypeVar

from memory.errors import PathRefused
from memory.workspace.paths import (
    LOCK_DIR,
    check_relative,
    composed_name,
    is_single_file,
    resolve,
    root,
)
from memory.workspace.style import decode


@dataclass(frozen=True)
class FileInfo:
    path: str  # workspace-relative, composed (NFC)
    size: int
    mtime: float


Stamp = tuple[int, int, int, int]  # (size, mtime_ns, ctime_ns, inode)


def stat(rel: str) -> FileInfo | None:
    """The file's (or directory's) FileInfo; None when it does not exist."""
    path = resolve(rel)
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return FileInfo(check_relative(rel), st.st_size, st.st_mtime)


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
                st = os.lstat(full)
            except FileNotFoundError:
                continue
            if not is_single_file(st):  # a FIFO, a device, a hard link
                continue
            rel = composed_name(Path(full).relative_to(root()).as_posix())
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


# What `from_names` keeps per process: values derived from directories' names, each with
# the names and the directory's stamp; at most this many names' worth (least recently
# used go first).
NAMES_KEPT = 400_000
# A directory's stamp may stay the same through two changes in one timestamp tick: a
# listing is trusted alone only when it was taken this long (this host's clock) after the
# stamp it saw was first seen — by then that tick is over, so the listing holds every
# change that stamp stands for. No clock of the volume is read (a GET writes nothing).
RACY_NS = 2_000_000_000

T = TypeVar("T")


class _Kept(NamedTuple):
    stamp: tuple | None  # the directory's, when the listing can be trusted alone
    names: frozenset[str]
    value: object


_derived: collections.OrderedDict[tuple[str, str], _Kept] = collections.OrderedDict()
_first_seen: dict[str, tuple[tuple, int]] = {}  # directory → (stamp, when first seen)
_derived_names = 0
_derived_lock = threading.Lock()


def _dir_stamp(path: os.PathLike | str) -> tuple | None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat_module.S_ISDIR(st.st_mode):
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, st.st_size)


def from_names(
    rel_dir: str,
    key: str,
    derive: Callable[[list[str]], T],
    update: Callable[[T, frozenset[str], frozenset[str]], T] | None = None,
) -> T:
    """`derive(list_names(rel_dir))`, derived again only when the directory changed.

    A directory's own stamp (mtime, ctime, inode) changes whenever a name is added to it,
    removed or renamed — by the app or by hand — so a value derived from its names (a
    count, the names sorted) is kept per process beside the names and the stamp it was
    derived at, and reused while a stat of the directory says the same: a listing costs
    one stat, not a walk of every name. When the directory changed, its names are listed
    again and, with `update(value, added, removed)`, the value is brought up to date from
    the names that came and went instead of derived from all of them. A listing taken
    while the directory was changing, or within RACY_NS of when its stamp was first seen
    (a change in the same timestamp tick would leave the stamp as it is), is listed again
    next time. Reads only: nothing is written, not even a clock.
    `key` names what is derived (one directory may have several). A missing directory
    derives from no names."""
    base = resolve(rel_dir) if rel_dir else root()
    memo_key = (str(base), key)
    before = _dir_stamp(base)
    if before is None:
        return derive([])
    with _derived_lock:
        kept = _derived.get(memo_key)
        if kept is not None and kept.stamp == before:
            _derived.move_to_end(memo_key)
            return kept.value  # type: ignore[return-value]
    names = list_names(rel_dir)
    listed = frozenset(names)
    if kept is None:
        value = derive(names)
    else:
        added, removed = listed - kept.names, kept.names - listed
        if not added and not removed:
            value = kept.value
        elif update is not None and len(added) + len(removed) <= len(listed) // 4:
            value = update(kept.value, added, removed)  # type: ignore[arg-type]
        else:
            value = derive(names)
    trusted = _dir_stamp(base) == before and _settled(memo_key[0], before)
    _keep(memo_key, _Kept(before if trusted else None, listed, value))
    return value


def _settled(directory: str, stamp: tuple) -> bool:
    """Whether `stamp` was first seen more than RACY_NS ago (see RACY_NS)."""
    now = time.monotonic_ns()
    with _derived_lock:
        seen = _first_seen.get(directory)
        if seen is None or seen[0] != stamp:
            if len(_first_seen) > 10_000:
                _first_seen.clear()
            _first_seen[directory] = seen = (stamp, now)
    return now - seen[1] > RACY_NS


def _keep(memo_key: tuple[str, str], kept: _Kept) -> None:
    global _derived_names
    with _derived_lock:
        old = _derived.pop(memo_key, None)
        _derived_names -= len(old.names) if old else 0
        _derived[memo_key] = kept
        _derived_names += len(kept.names)
        while _derived_names > NAMES_KEPT and len(_derived) > 1:
            _gone, dropped = _derived.popitem(last=False)
            _derived_names -= len(dropped.names)


def file_infos(rel_dir: str, names: list[str]) -> list[FileInfo]:
    """FileInfo of each named file directly in `rel_dir`, in the order given: one lstat
    per name relative to the opened directory. A name that is gone, or is no longer a
    regular file (swapped for a symlink), is left out. PathRefused for a name with a
    slash, or `.`/`..`."""
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
            if is_single_file(st):
                found.append(FileInfo(prefix + name, st.st_size, st.st_mtime))
    finally:
        os.close(fd)
    return found


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
    return scan_tree(base, prefix, suffix=suffix, recursive=recursive)


def scan_tree(base: str, prefix: str, *, suffix: str, recursive: bool) -> list[ScannedFile]:
    """scan_files below the absolute directory `base`, each file's path `prefix` + its
    path below base. Nothing below base is followed if it is a symlink (base itself
    neither: a symlinked base lists nothing)."""
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
                                (
                                    child,
                                    f"{abs_prefix}{name}/",
                                    f"{rel_prefix}{composed_name(name)}/",
                                )
                            )
                        continue
                    if not name.endswith(suffix):
                        continue
                    try:
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if not is_regular(st.st_mode) or st.st_nlink != 1:  # a hard link
                        continue
                    found.append(
                        make(
                            ScannedFile,
                            (
                                rel_prefix + (name if name.isascii() else composed_name(name)),
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
    if not is_single_file(st):
        return None
    return ScannedFile(rel, str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def read_scanned(scanned: ScannedFile) -> str | None:
    """The text of a file `scan_files` found (as read() hands it out), or None when it is
    gone or has become a symlink since (O_NOFOLLOW: the scan's guarantee that nothing
    leads out still holds)."""
    try:
        fd = os.open(scanned.abspath, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError:  # ELOOP: replaced by a symlink
        return None
    if not is_single_file(os.fstat(fd)):  # replaced by a FIFO or a hard link since
        os.close(fd)
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
