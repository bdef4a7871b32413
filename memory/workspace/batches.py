"""Several files at once: `write_many`, under all their locks, durable together."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from memory.workspace.disk import fsync_all, storage, temp_beside
from memory.workspace.hooks import fingerprint, listening, notify
from memory.workspace.locks import locked_many
from memory.workspace.paths import resolve
from memory.workspace.reading import file_hash, read_bytes_from
from memory.workspace.style import encoded, normalised, style_of

WRITE_MANY_GROUP = 128  # files staged (locks and descriptors held) at once


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
    with locked_many(texts), storage(named):
        todo = [
            rel
            for rel in texts
            if base_hashes is None or rel not in base_hashes or file_hash(rel) == base_hashes[rel]
        ]
        staged, encoded_data = _stage({rel: (paths[rel], texts[rel]) for rel in todo})
        # What each file held, for the change hooks (the history), read under the locks.
        before = {
            rel: (read_bytes_from(rel, 0), fingerprint(rel)) for rel in todo if listening(rel)
        }
        directories: dict[Path, None] = {}
        for rel, tmp in staged:
            os.replace(tmp, paths[rel])
            directories[paths[rel].parent] = None
        dir_fds = [os.open(directory, os.O_RDONLY) for directory in directories]
        try:
            fsync_all(dir_fds)
        finally:
            for fd in dir_fds:
                os.close(fd)
        for rel in todo:
            old_data, old_fp = before.get(rel, (None, None))
            notify(rel, "write", before=old_data, before_fingerprint=old_fp, data=encoded_data[rel])
    return todo


def _stage(
    items: dict[str, tuple[Path, str | bytes]],
) -> tuple[list[tuple[str, Path]], dict[str, bytes]]:
    """Each new text in a temp file beside its target (in the target's style), all of
    them fsynced: ([(rel, temp path)], {rel: bytes written}). On any failure every temp
    file is removed and the error raised: no target has changed."""
    staged: list[tuple[str, Path, int]] = []  # (rel, temp path, open descriptor)
    encoded_data: dict[str, bytes] = {}
    try:
        for rel, (path, data) in items.items():
            style = style_of(path)
            if isinstance(data, str):
                data = encoded(normalised(data), style, rel)
            encoded_data[rel] = data
            fd, tmp = temp_beside(path, mode=style.mode if style else None)
            staged.append((rel, tmp, fd))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        fsync_all([fd for _, _, fd in staged])
    except BaseException:
        for _, tmp, fd in staged:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    for _, _, fd in staged:
        os.close(fd)
    return [(rel, tmp) for rel, tmp, _ in staged], encoded_data
