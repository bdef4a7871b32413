"""The change log: every write, append and delete appends its path here.

A directory of numbered segments (`.memory-changes/0000000001.log`, one path a line) on
the workspace volume itself. A search index (one per host, rebuildable from the files)
keeps how far it has read and re-reads just the files named since, so a change made
through the app on any host is in the very next query on every host; the keeper of a host
that watches the files records the hand edits it sees here too (`record_changes`). It lives
with the files, not in the database: it is written when the file is (never rolled back
with a transaction after the file already changed), needs no database to write, and
reaches other hosts as the files and their locks do. The log says only "look at this path
again": the file is the truth, so a line read twice or a path changed again since costs a
re-read, nothing more. Appends take the segment's flock (O_APPEND alone is not atomic on
NFS); a segment past CHANGES_SEGMENT_BYTES is closed and the next one started; the oldest
are removed past CHANGES_KEEP (a reader that far behind rescans every file instead).

Machinery, so nothing in it is followed or waited on (SPEC §1): the folder and every
segment are opened without following a symbolic link (O_NOFOLLOW, relative to the folder's
own descriptor), a segment must be a regular file (a FIFO, a device or a link in its place
is refused, never opened for blocking IO), and the folder and segments are this user's
only (0700 / 0600). A log that is not what it should be is a ChangeLogRefused (an OSError:
the write it follows stands, memory.workspace.hooks logs it) and reads as "nothing new".
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import stat as stat_module
from collections.abc import Iterable, Iterator

from memory.workspace.paths import CHANGES_DIR, root

logger = logging.getLogger(__name__)

CHANGES_SEGMENT_BYTES = 1 << 20  # a segment of the change log is closed past this size
CHANGES_KEEP = 16  # segments kept; a reader further behind rescans everything

ChangesPosition = tuple[int, int]  # (segment number, byte offset in it)

_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class ChangeLogRefused(OSError):
    """The change log's folder or a segment is a symbolic link or not a regular file."""


def _segment_name(number: int) -> str:
    return f"{number:010d}.log"


@contextlib.contextmanager
def _directory(*, create: bool) -> Iterator[int | None]:
    """The log folder's descriptor (opened without following a link), or None when it is
    not there (and not `create`d). ChangeLogRefused when something else stands there."""
    base = root()
    path = base / CHANGES_DIR
    if create:
        try:
            os.mkdir(path, 0o700)
            # Machinery, not memory: never in the owner's git (as .memory-locks/).
            with contextlib.suppress(FileExistsError):
                fd = os.open(path / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FLAGS)
                with os.fdopen(fd, "w") as handle:
                    handle.write("*\n")
        except FileExistsError:
            pass
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _FLAGS)
    except FileNotFoundError:
        if create:
            raise
        yield None
        return
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ChangeLogRefused(
                exc.errno, f"{CHANGES_DIR} is not a folder (a symbolic link?): refused"
            ) from None
        raise
    try:
        yield fd
    finally:
        os.close(fd)


def _open_segment(directory: int, number: int, flags: int) -> int:
    """A segment's descriptor, refusing anything but a regular file (a FIFO is never waited
    on: O_NONBLOCK, then the type is checked before any IO)."""
    name = _segment_name(number)
    try:
        fd = os.open(name, flags | _FLAGS, 0o600, dir_fd=directory)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise ChangeLogRefused(exc.errno, f"{CHANGES_DIR}/{name} is refused") from None
        raise
    if not stat_module.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ChangeLogRefused(errno.EINVAL, f"{CHANGES_DIR}/{name} is not a regular file")
    return fd


def _segments(directory: int | None) -> list[int]:
    if directory is None:
        return []
    names = os.listdir(directory)
    return sorted(int(name[:-4]) for name in names if name.endswith(".log") and name[:-4].isdigit())


def record(rel: str) -> None:
    """Append `rel` to the change log (after its file changed). OSError when the log
    cannot take the line (memory.workspace.hooks logs it: the file has changed)."""
    record_changes([rel])


def record_changes(rels: Iterable[str]) -> None:
    """Append several paths in one write (the keeper's batch of hand edits)."""
    data = "".join(rel + "\n" for rel in rels).encode("utf-8")
    if not data:
        return
    with _directory(create=True) as directory:
        assert directory is not None
        while True:
            numbers = _segments(directory)
            number = numbers[-1] if numbers else 1
            fd = _open_segment(directory, number, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if os.fstat(fd).st_size < CHANGES_SEGMENT_BYTES:
                    os.write(fd, data)
                    return
            finally:
                os.close(fd)
            # Full: start the next segment (another writer may have just done so) and retry.
            with contextlib.suppress(FileExistsError):
                os.close(
                    os.open(
                        _segment_name(number + 1),
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FLAGS,
                        0o600,
                        dir_fd=directory,
                    )
                )
            for old in numbers[: max(0, len(numbers) + 1 - CHANGES_KEEP)]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(_segment_name(old), dir_fd=directory)


def changes_position() -> ChangesPosition:
    """Where the change log ends now: read from here to learn of later changes only."""
    try:
        with _directory(create=False) as directory:
            numbers = _segments(directory)
            if not numbers:
                return (1, 0)
            try:
                st = os.stat(_segment_name(numbers[-1]), dir_fd=directory, follow_symlinks=False)
            except FileNotFoundError:
                return (numbers[-1], 0)
            return (numbers[-1], st.st_size if stat_module.S_ISREG(st.st_mode) else 0)
    except ChangeLogRefused as exc:
        logger.error("the change log is refused: %s", exc)
        return (1, 0)


def changes_since(
    position: ChangesPosition, *, limit: int | None = None
) -> tuple[list[str], ChangesPosition] | None:
    """The paths changed since `position`, in order (repeats possible), and the position
    after them — at most `limit` lines, the position then just after the last one given.
    None when the log no longer reaches back that far (its segment was removed): the
    caller must look at every file instead. Costs one open and fstat when nothing is new.
    A refused log (a link or a FIFO where a segment should be) reads as nothing new."""
    try:
        with _directory(create=False) as directory:
            if directory is None:
                return [], position
            return _read_since(directory, position, limit)
    except ChangeLogRefused as exc:
        logger.error("the change log is refused: %s", exc)
        return [], position


def _read_since(
    directory: int, position: ChangesPosition, limit: int | None
) -> tuple[list[str], ChangesPosition] | None:
    number, offset = position
    paths: list[str] = []
    while True:
        try:
            fd = _open_segment(directory, number, os.O_RDONLY)
        except FileNotFoundError:
            numbers = _segments(directory)
            if any(n > number for n in numbers) or (numbers and number < numbers[0]):
                return None  # removed while we were behind
            return paths, (number, offset)
        with os.fdopen(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > offset:
                handle.seek(offset)
                data = handle.read(size - offset)
                # Only whole lines: a writer may be half-way through one.
                end = data.rfind(b"\n") + 1
                lines = data[:end].split(b"\n")[:-1]
                if limit is not None and len(paths) + len(lines) >= limit:
                    lines = lines[: limit - len(paths)]
                    end = sum(len(line) + 1 for line in lines)
                    paths += [line.decode("utf-8", errors="replace") for line in lines]
                    return paths, (number, offset + end)
                paths += [line.decode("utf-8", errors="replace") for line in lines]
                offset += end
        if offset < CHANGES_SEGMENT_BYTES:
            return paths, (number, offset)
        # This segment is full: the rest is in the next one (when it exists yet).
        try:
            os.stat(_segment_name(number + 1), dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            return paths, (number, offset)
        number, offset = number + 1, 0
