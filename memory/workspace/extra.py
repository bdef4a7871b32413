"""Extra paths: more Markdown to read, outside the agents' memory (read-only).

OpenClaw's memorySearch.extraPaths: folders or single files of Markdown that memory_search
and memory_get read beside an agent's own memory. Configured in MEMORY_EXTRA_PATHS,
absolute or relative to the home. Read-only: no write function of the workspace takes such
a path. The same traversal rules as scan_files: symlinks (files or folders, the configured
path itself too) are skipped, hidden entries are skipped, only `.md` files are read. Each is
shown under its own prefix, `extra/<name>/...` (a folder) or `extra/<name>.md` (a file),
<name> taken from the path's last part.
"""

from __future__ import annotations

import errno
import os
import re
import stat as stat_module
import unicodedata
from typing import NamedTuple

from django.conf import settings

from memory.errors import PathRefused
from memory.workspace.paths import check_relative, root
from memory.workspace.scans import ScannedFile, scan_tree
from memory.workspace.style import decode_file

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


def _problem_of(path: str) -> tuple[str, bool]:
    """(why the configured path is not read, "" when it is; whether it is one file)."""
    try:
        st = os.lstat(path)
    except OSError:
        return "does not exist", False
    if stat_module.S_ISLNK(st.st_mode):
        return "is a symbolic link (skipped, as OpenClaw skips them)", False
    if stat_module.S_ISREG(st.st_mode):
        return ("" if path.endswith(".md") else "is not a Markdown (.md) file"), True
    if not stat_module.S_ISDIR(st.st_mode):
        return "is neither a folder nor a file", False
    return "", False


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
        problem, is_file = _problem_of(path)
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
        found += scan_tree(
            extra.path, f"{EXTRA_PREFIX}/{extra.name}/", suffix=".md", recursive=True
        )
    return found


def is_extra_path(path: str) -> bool:
    return isinstance(path, str) and path.startswith(f"{EXTRA_PREFIX}/")


def _extra_file(shown: str) -> str:
    """The real path of an extra file by its shown path, or PathRefused (see
    read_extra_keyed). Looks at the configuration, not at the file."""
    check_relative(shown)
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
        return extra.path
    if len(parts) < 3:
        raise PathRefused(f"{EXTRA_PREFIX}/{extra.name} is a folder: name a file in it.")
    candidate = os.path.join(extra.path, *parts[2:])
    if os.path.realpath(candidate) != os.path.join(os.path.realpath(extra.path), *parts[2:]):
        raise PathRefused(f"Path goes through a symbolic link: {shown!r}.")
    return candidate


def read_extra_keyed(shown: str) -> tuple[str, tuple[int, int, int, int]] | None:
    """The text of an extra file by its shown path with its key (as read_keyed gives it),
    or None when there is no such file.

    PathRefused for a path that is not `extra/<name>/<...>.md` / `extra/<name>.md` of a
    configured, usable extra path, has `..`, empty or hidden parts, or goes through a
    symbolic link below the configured path. Reading only: nothing here writes. Bytes
    that are not UTF-8 are replaced (and the text still reads)."""
    candidate = _extra_file(shown)
    try:
        # O_NONBLOCK: a FIFO is never waited on (its type is checked before any read).
        fd = os.open(candidate, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO or socket with nobody on the other end
            return None
        raise PathRefused(f"Path is a symbolic link: {shown!r}.") from None
    st = os.fstat(fd)
    if not stat_module.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    with open(fd, "rb") as handle:
        text = decode_file(handle.read()).text
    return text, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def read_extra(shown: str) -> str | None:
    """The text of an extra file by its shown path (read_extra_keyed without the key)."""
    found = read_extra_keyed(shown)
    return None if found is None else found[0]
