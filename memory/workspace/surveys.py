"""Looking without touching, for the doctor and for reports: entries as they are (links
reported, never followed or refused), what a path is, where a byte is not UTF-8. Reads
no memory text and writes nothing."""

from __future__ import annotations

import os
import stat as stat_module
from typing import NamedTuple

from memory.workspace.paths import LOCK_DIR, check_relative, resolve, root, spelled_on_disk
from memory.workspace.reading import read_bytes_from


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


def is_link(rel: str) -> str | None:
    """Where `rel` points when it is itself a symbolic link, else None. Looks only (for
    reports: an agent dir that is a link cannot be used)."""
    path = spelled_on_disk(root(), check_relative(rel))
    if not os.path.islink(path):
        return None
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def kind_of(rel: str) -> str:
    """ "file", "dir", "link", "missing" or "other" for `rel`, without following a link
    (and without refusing one: for reports)."""
    composed = check_relative(rel)
    # A name in ASCII has one spelling (and every page asks this of every agent's dirs).
    path = f"{root()}/{composed}" if composed.isascii() else spelled_on_disk(root(), composed)
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
