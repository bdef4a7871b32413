"""The change log: every write, append and delete appends its path here.

A directory of numbered segments (`.memory-changes/0000000001.log`, one path a line) on
the workspace volume itself. A search index (one per host, rebuildable from the files)
keeps how far it has read and re-reads just the files named since, so a change made
through the app on any host is in the very next query on every host. It lives with the
files, not in the database: it is written when the file is (never rolled back with a
transaction after the file already changed), needs no database to write, and reaches other
hosts as the files and their locks do. The log says only "look at this path again": the
file is the truth, so a line read twice or a path changed again since costs a re-read,
nothing more. Appends take the segment's flock (O_APPEND alone is not atomic on NFS); a
segment past CHANGES_SEGMENT_BYTES is closed and the next one started; the oldest are
removed past CHANGES_KEEP (a reader that far behind rescans every file instead).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from memory.workspace.paths import CHANGES_DIR, root

CHANGES_SEGMENT_BYTES = 1 << 20  # a segment of the change log is closed past this size
CHANGES_KEEP = 16  # segments kept; a reader further behind rescans everything

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


def record(rel: str) -> None:
    """Append `rel` to the change log (after its file changed). OSError when the log
    cannot take the line (memory.workspace.hooks logs it: the file has changed)."""
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
