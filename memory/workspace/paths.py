"""Paths and names: the root, and the one check every workspace path passes.

A path is workspace-relative POSIX text ("users/owner/USER.md"). `resolve` turns it into
the file on disk or refuses it (PathRefused, nothing read or written): absolute paths,
`..`, NUL, compatibility characters, names over 255 bytes, anything whose real location is
not below the root, any path through a symbolic link below the root, and a file that is a
hard link or not a regular file (a FIFO is never opened). A name is one
name whatever its Unicode spelling: macOS writes `sách.md` decomposed (NFD), a client
sends it composed (NFC); both find the file that is there, and a new file is created
composed.
"""

from __future__ import annotations

import os
import stat as stat_module
import unicodedata
from pathlib import Path

from django.conf import settings

from memory.errors import PathRefused

# The app's machinery below the root, never memory (each holds a `.gitignore` of `*`).
LOCK_DIR = ".memory-locks"  # the lock pool (memory.workspace.locks)
CHANGES_DIR = ".memory-changes"  # the change log (memory.workspace.changes)
STATE_DIR = ".memory-state"  # derived state (the facts index's, the wiki's change lists)
# What the derived state says of the memory (which facts, which pages changed) is the
# owner's alone: its folder is 0700 and its files 0600, whatever the umask.
STATE_DIR_MODE = 0o700
STATE_FILE_MODE = 0o600
MAX_NAME_BYTES = 255  # one path component, as every Linux file system allows
MAX_PATH_BYTES = 3000  # the whole relative path (PATH_MAX is 4096 with the root)


def root() -> Path:
    """The workspace root, read from settings on every call (tests point it at tmp_path);
    the setting's resolved path is kept per spelling (resolving costs a stat per part of
    the path, and every operation asks)."""
    home = settings.MY_AGENT_HOME
    found = _resolved.get(home)
    if found is None:
        found = Path(home).expanduser().resolve()
        if found.is_dir():  # a home not made yet is resolved again once it is
            _resolved[home] = found
    return found


_resolved: dict[object, Path] = {}


def check_relative(rel: str) -> str:
    """The composed (NFC) spelling of a relative path, or PathRefused. Looks at the text
    only (no disk): the first step of `resolve`, and of every reader that opens the parts
    of a path itself. (Every read and write asks: a path in ASCII, one spelling and a
    byte a character, is checked without normalising or encoding it.)"""
    if not isinstance(rel, str) or not rel:
        raise PathRefused("Empty path.")
    if "\x00" in rel:
        raise PathRefused("Path contains a NUL byte.")
    ascii_only = rel.isascii()
    composed = rel if ascii_only else unicodedata.normalize("NFC", rel)
    # Fullwidth dots and slashes fold to ASCII ones under NFKC; refuse them instead of
    # letting another layer interpret them later. (NFD and NFC spell the same name and
    # are both accepted: NFKC of either is the composed form.)
    if not ascii_only and unicodedata.normalize("NFKC", rel) != composed:
        raise PathRefused(f"Path has characters that are not plain: {rel!r}.")
    if "\\" in rel or rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        raise PathRefused(f"Path must be relative to the workspace: {rel!r}.")
    parts = composed.split("/")
    if "" in parts or "." in parts or ".." in parts:
        raise PathRefused(f"Path may not contain empty, '.' or '..' parts: {rel!r}.")
    if ascii_only:
        sizes = list(map(len, parts))
    else:
        try:
            sizes = [len(part.encode("utf-8")) for part in parts]
        except UnicodeEncodeError:
            raise PathRefused(f"Path is not valid Unicode text: {rel!r}.") from None
    if max(sizes) > MAX_NAME_BYTES:
        raise PathRefused(
            f"A name in the path is longer than {MAX_NAME_BYTES} bytes: {rel[:80]!r}…."
        )
    if sum(sizes) + len(sizes) > MAX_PATH_BYTES:
        raise PathRefused(f"The path is longer than {MAX_PATH_BYTES} bytes.")
    return composed


def spelled_on_disk(base: Path, composed: str) -> Path:
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
    itself may be a link). The message names the link and where it points. An existing
    file that is a hard link, a FIFO, a socket or a device is refused too
    (`refuse_special`).
    """
    composed = check_relative(rel)
    base = root()
    candidate = spelled_on_disk(base, composed)
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
    refuse_special(candidate, rel)
    return candidate


def refuse_special(path: Path, rel: str) -> None:
    """PathRefused when `path` exists and is neither a directory nor a regular file of
    one name: a FIFO (opening it would wait for a writer), a socket or a device; or a
    hard link (a file with more than one name, `st_nlink` > 1) — like a symbolic link it
    could be another agent's file under this agent's name, read or appended to through
    it, and nothing tells where its other name is."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    if stat_module.S_ISDIR(st.st_mode):
        return
    if not stat_module.S_ISREG(st.st_mode):
        raise PathRefused(f"{rel} is not a regular file (a pipe, socket or device): not read.")
    if st.st_nlink > 1:
        raise PathRefused(
            f"{rel} is a hard link ({st.st_nlink} names for one file); like symbolic links, "
            "hard links inside the workspace are not followed. Copy the file instead."
        )


def is_single_file(st: os.stat_result) -> bool:
    """A regular file with one name: what the scans list and the readers open."""
    return stat_module.S_ISREG(st.st_mode) and st.st_nlink == 1


def composed_name(name: str) -> str:
    """A name as the workspace hands it out: composed (NFC), whatever its spelling on disk."""
    return name if name.isascii() else unicodedata.normalize("NFC", name)


def is_hidden(rel: str) -> bool:
    """Whether any part of the path is hidden (the machinery: `.memory-locks/`…)."""
    return any(part.startswith(".") for part in rel.split("/"))
