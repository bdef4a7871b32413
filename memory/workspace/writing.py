"""Writing one file: atomic rewrites, whole-or-nothing appends, deletes, creates.

Every change takes the file's lock (memory.workspace.locks), keeps the file's style (mode,
CRLF, BOM: memory.workspace.style), turns a refusing disk into DiskFull / WorkspaceReadOnly
(memory.workspace.disk) with the old text left in place, and ends by telling the change
log and the hooks (memory.workspace.hooks) inside the lock.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from pathlib import Path

from memory.errors import Conflict
from memory.workspace.disk import (
    ensure_machinery_dir,
    fsync_dir,
    storage,
    temp_beside,
    write_atomic,
)
from memory.workspace.hooks import Fingerprint, fingerprint, listening, notify
from memory.workspace.locks import locked
from memory.workspace.paths import STATE_DIR, STATE_DIR_MODE, STATE_FILE_MODE, resolve, root
from memory.workspace.reading import file_hash, read_bytes_from
from memory.workspace.style import BOM, encode, encoded, hash_text, normalised, style_at, style_of


def _replace(rel: str, path: Path, data: bytes, *, mode: int | None) -> None:
    """Write `data` over the file atomically and tell the hooks. Caller holds the lock."""
    watched = listening(rel)
    before = read_bytes_from(rel, 0) if watched else None
    before_fp = fingerprint(rel) if watched else None
    write_atomic(path, data, mode=mode)
    notify(rel, "write", before=before, before_fingerprint=before_fp, data=data)


def write(rel: str, text: str) -> str:
    """Replace a file's text atomically, under its lock; the file keeps its mode, its
    line endings (CRLF stays CRLF) and its BOM. Returns the new hash (of the text as it
    will read back). DiskFull / WorkspaceReadOnly when the disk refuses (the old text
    stays); InvalidInput for text that is not valid Unicode."""
    path = resolve(rel)
    text = normalised(text)
    with locked(rel), storage(rel):
        style = style_of(path)
        data = encoded(text, style, rel)
        _replace(rel, path, data, mode=style.mode if style else None)
    return hash_text(text)


def write_raw(rel: str, data: bytes) -> str:
    """Replace a file's bytes atomically, under its lock (write() for text already encoded,
    or for restoring bytes exactly as they were: no line endings or BOM are changed). The
    file keeps its mode. Returns the sha256 of the bytes. DiskFull / WorkspaceReadOnly as
    write()."""
    path = resolve(rel)
    with locked(rel), storage(rel):
        style = style_of(path)
        _replace(rel, path, data, mode=style.mode if style else None)
    return hashlib.sha256(data).hexdigest()


def write_checked(rel: str, text: str, *, base_hash: str | None = None) -> str:
    """write(), and with a base_hash only when the file still hashes to it: an editor
    that read the file passes the hash it read, so a change made meanwhile (an agent's
    memory_save, another tab) is a Conflict (409) instead of being erased, and the file is
    left as it is. The check and the write hold the file's lock. Returns the new hash."""
    if base_hash is None:
        return write(rel, text)
    with locked(rel):
        if file_hash(rel) != base_hash:
            raise Conflict(f"{rel} changed since it was read.")
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
    text = normalised(text)
    create_with = normalised(create_with)
    with locked(rel), storage(rel):
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW)
        except FileNotFoundError:
            data = encode(create_with + text, rel)
            write_atomic(path, data)
            notify(rel, "write", before=None, before_fingerprint=None, data=data)
            return
        try:
            style, st = style_at(fd)
            size = st.st_size
            before_fp = Fingerprint(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            if size == (len(BOM) if style.bom else 0):
                # Empty: start it as a new file would start, keeping its mode and BOM.
                os.close(fd)
                fd = -1
                data = encoded(create_with + text, style, rel)
                write_atomic(path, data, mode=style.mode)
                before = BOM if style.bom else b""
                notify(rel, "write", before=before, before_fingerprint=before_fp, data=data)
                return
            if os.pread(fd, 1, size - 1) != b"\n":
                text = "\n" + text
            data = encoded(text, style._replace(bom=False), rel)  # the BOM is there already
            _append_whole(fd, data, size)
            notify(rel, "append", before_fingerprint=before_fp, data=data, offset=size)
        finally:
            if fd >= 0:
                os.close(fd)


def _append_whole(fd: int, data: bytes, size: int) -> None:
    """One write() of `data` at the end of the open file (`size` bytes before), fsynced;
    on a short write or any error the file is truncated back to `size` and the error
    raised (a short write as ENOSPC)."""
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


def delete(rel: str) -> bool:
    """Remove a file under its lock. Returns False when it did not exist."""
    path = resolve(rel)
    with locked(rel), storage(rel):
        watched = listening(rel)
        before = read_bytes_from(rel, 0) if watched else None
        before_fp = fingerprint(rel) if watched else None
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        fsync_dir(path.parent)
        notify(rel, "delete", before=before, before_fingerprint=before_fp)
    return True


def ensure_dir(rel: str) -> None:
    """Make the directory and its parents (nothing when it is there). DiskFull /
    WorkspaceReadOnly when the disk refuses."""
    path = resolve(rel)
    with storage(rel):
        path.mkdir(parents=True, exist_ok=True)


def create(rel: str, text: str = "") -> bool:
    """Write a file only when it does not exist yet (under its lock). Returns True when it
    was created; an existing file is left exactly as it is."""
    with locked(rel):
        if resolve(rel).exists():
            return False
        write(rel, text)
    return True


def write_unsynced(rel: str, text: str) -> None:
    """Replace a file atomically (temp file and rename, under its lock) without fsync:
    only for derived state that its readers check and can rebuild — after a crash it may
    hold an older text (or, on some filesystems, be empty), never a mix. The facts
    index's state and the wiki's list of changes are written so. Neither the change log
    nor the hooks hear of it: derived state is not memory. Under the derived state's folder it is
    this user's only: the file 0600, a folder it makes 0700."""
    path = resolve(rel)
    private = rel.startswith(f"{STATE_DIR}/")
    with locked(rel), storage(rel):
        if private:  # the derived state: folders of 0700, files of 0600
            ensure_machinery_dir(root() / STATE_DIR, mode=STATE_DIR_MODE)
            _private_dirs(path.parent)
        fd, tmp = temp_beside(path, mode=STATE_FILE_MODE if private else None)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def _private_dirs(directory: Path) -> None:
    # Each missing folder on the way, made 0700 (mkdir's parents would get the umask's).
    missing = []
    while not directory.is_dir():
        missing.append(directory)
        directory = directory.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
