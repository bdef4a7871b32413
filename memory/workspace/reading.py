"""Reading files: text, hashes and keys. Readers never create anything (no lock file, no
folder), so a read-only workspace still reads; a missing file is absent (None), never an
error; bytes that are not UTF-8 read as U+FFFD (memory.workspace.style).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from memory.errors import PathRefused
from memory.workspace.extra import is_extra_path, read_extra_keyed
from memory.workspace.locks import locked
from memory.workspace.paths import (
    check_relative,
    is_single_file,
    resolve,
    root,
    spelled_on_disk,
)
from memory.workspace.scans import Stamp
from memory.workspace.style import ABSENT, FileText, decode, decode_file


def _open_single(path: Path) -> int | None:
    """A descriptor of the regular, single-named file at `path` (never following a
    symbolic link, never waiting on a FIFO: O_NONBLOCK, then the type checked on the open
    file), or None when it is missing or is not such a file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError:  # ELOOP: a symbolic link (resolve refused it; it changed since)
        return None
    if not is_single_file(os.fstat(fd)):
        os.close(fd)
        return None
    return fd


def _read_path(path: Path) -> bytes | None:
    fd = _open_single(path)
    if fd is None:
        return None
    with open(fd, "rb") as handle:
        return handle.read()


def read_file(rel: str) -> FileText | None:
    """The file as read (text, hash, whether it had undecodable bytes, BOM, CRLF), or
    None when it does not exist. Never raises on bytes that are not UTF-8."""
    data = _read_path(resolve(rel))
    return None if data is None else decode_file(data)


def read(rel: str) -> str | None:
    """The text of a file ("\\n" line endings, no BOM; bytes that are not UTF-8 as
    U+FFFD), or None when it does not exist (a missing file is absent, never an
    error)."""
    data = _read_path(resolve(rel))
    return None if data is None else decode(data)


def read_file_locked(rel: str) -> FileText | None:
    """read_file() under the file's shared lock (never half an append): the text and the
    hash of exactly that text, from one read — what an editor opens and later sends back
    as `base_hash`."""
    with locked(rel, shared=True):
        return read_file(rel)


def read_with_hash(rel: str) -> tuple[str | None, str]:
    """The text of a file and the hash of exactly that text (ABSENT when missing), from
    one read under the file's (shared) lock — what an editor opens and later sends back as
    `base_hash`. Two reads (text, then hash) could pair an old text with a newer hash, and
    a write checked against that hash would erase what was appended in between."""
    found = read_file_locked(rel)
    if found is None:
        return None, ABSENT
    return found.text, found.hash


def read_bytes_from(rel: str, offset: int) -> bytes | None:
    """The bytes of a file from `offset` on (None when missing)."""
    fd = _open_single(resolve(rel))
    if fd is None:
        return None
    with open(fd, "rb") as handle:
        handle.seek(offset)
        return handle.read()


def file_hash(rel: str) -> str:
    """The hash of the file's text as read_file gives it (ABSENT when missing)."""
    found = read_file(rel)
    return ABSENT if found is None else found.hash


def bytes_hash(rel: str) -> str:
    """sha256 of the file's bytes (ABSENT when missing): file_hash() for a file that may
    hold bytes that are not UTF-8."""
    data = read_bytes_from(rel, 0)
    return ABSENT if data is None else hashlib.sha256(data).hexdigest()


def exists(rel: str) -> bool:
    """Whether `rel` is a regular file (PathRefused as `resolve`)."""
    return resolve(rel).is_file()


# --- text with its key: how search checks a hit against its file --------------------------


def read_keyed(rel: str) -> tuple[str, Stamp] | None:
    """The text of a file with the key scan_files gives it, (size, mtime_ns, ctime_ns,
    inode), taken from the open file itself; None when it is missing, or is not a regular
    file, or any part of its path is a symlink."""
    return read_keyed_many([rel]).get(rel)


def read_keyed_many(rels: list[str]) -> dict[str, tuple[str, Stamp] | None]:
    """read_keyed for several files (extra paths too, by their shown `extra/…` path), the
    root resolved once. Each path is opened one part at a time below the root, every part
    with O_NOFOLLOW: a symlink anywhere below the root makes the file None, exactly as
    `resolve` refuses it — without a realpath per file. A refused path is None too."""
    base = root()
    found: dict[str, tuple[str, Stamp] | None] = {}
    for rel in rels:
        try:
            composed = check_relative(rel)
        except PathRefused:
            found[rel] = None
            continue
        if is_extra_path(rel):
            try:
                found[rel] = read_extra_keyed(rel)
            except PathRefused:
                found[rel] = None
            continue
        # A name macOS wrote decomposed is found by its composed spelling (as resolve does;
        # a name in ASCII has one spelling).
        if composed.isascii():
            parts = composed.split("/")
        else:
            parts = list(spelled_on_disk(base, composed).relative_to(base).parts)
        found[rel] = _read_below(base, parts)
    return found


def _read_below(base: Path, parts: list[str]) -> tuple[str, Stamp] | None:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            child = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        # O_NONBLOCK: a FIFO planted where a note should be is never waited on (its type
        # is checked below before any read).
        file_fd = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=fd)
    except OSError:  # missing, not a directory, a symlink (ELOOP), a FIFO with no writer
        return None
    finally:
        os.close(fd)
    st = os.fstat(file_fd)
    if not is_single_file(st):
        os.close(file_fd)
        return None
    with open(file_fd, "rb") as handle:
        data = handle.read()
    return decode(data), (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
