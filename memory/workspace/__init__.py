"""The only code that touches the disk under MY_AGENT_HOME.

Everyone else passes workspace-relative POSIX paths ("users/owner/USER.md",
"agents/helper/memory/2026-11-30.md") and calls the names below, as
`from memory import workspace; workspace.read(...)`. The workspace

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
- serialises every change of one file with a cross-process lock (fcntl.flock) on a fixed
  pool of lock stripes under `.memory-locks/`; group guards (`guarded`) are a second pool
  for operations over a set of files (the facts and INDEX.md, a wiki vault). Re-entrant
  within a thread; see `locked` for the order rules that keep two stripes from
  deadlocking;
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
  versions from them), inside the file's lock, with who made it (memory.attribution);
- records every write, append and delete in the change log (`.memory-changes/`), so a
  search index on any host that mounts the workspace learns of it at its next query.

Its modules, one job each, from the bottom up (each imports only those above it in this
list; only this face is imported from outside the package):

- `paths`    the root, `resolve` and the refusal rules, NFC/NFD names, machinery folders
- `style`    bytes as text and back: decoding, U+FFFD, hashes, BOM / CRLF / mode kept
- `disk`     a refusing disk as DiskFull / WorkspaceReadOnly, temp files, atomic replace,
             fsync, machinery folders, the volume's clock
- `locks`    the stripe pool: `locked`, `locked_many`, `guarded`
- `changes`  the change log: `changes_position`, `changes_since`, `record_changes`
- `hooks`    who hears of a change: `on_change`, `Change`, `adopt`
- `scans`    listings and scans with stat: `list_files`, `scan_files`, `stamp`…
- `extra`    the extra paths outside the home (read-only)
- `reading`  one file's text, hash, bytes and key: `read`, `read_file`, `read_keyed`…
- `writing`  one file's change: `write`, `write_checked`, `append`, `delete`, `create`…
- `batches`  several files at once: `write_many`
- `surveys`  looking without touching, for the doctor: `survey`, `kind_of`…
- `upkeep`   start-up (`prepare`, stale temp files) and `health`
"""

from memory.workspace.batches import write_many
from memory.workspace.changes import (
    ChangesPosition,
    changes_position,
    changes_since,
    record_changes,
)
from memory.workspace.disk import volume_now_ns
from memory.workspace.extra import (
    EXTRA_PREFIX,
    ExtraRoot,
    extra_roots,
    is_extra_path,
    read_extra,
    scan_extra,
)
from memory.workspace.hooks import Change, Fingerprint, adopt, on_change
from memory.workspace.locks import FILE_STRIPES, GUARD_STRIPES, guarded, locked, locked_many
from memory.workspace.paths import CHANGES_DIR, LOCK_DIR, STATE_DIR, resolve, root
from memory.workspace.reading import (
    bytes_hash,
    exists,
    file_hash,
    read,
    read_bytes_from,
    read_file,
    read_file_locked,
    read_keyed,
    read_keyed_many,
    read_with_hash,
)
from memory.workspace.scans import (
    FileInfo,
    ScannedFile,
    file_infos,
    from_names,
    list_dirs,
    list_files,
    list_names,
    read_scanned,
    scan_files,
    scan_one,
    stamp,
    stat,
)
from memory.workspace.style import ABSENT, NO_FILE, FileText, decode, hash_text
from memory.workspace.surveys import Entry, is_dir, is_link, kind_of, survey, undecodable_at
from memory.workspace.upkeep import (
    STALE_TEMP_SECONDS,
    Health,
    health,
    prepare,
    remove_stale_temp_files,
)
from memory.workspace.writing import (
    append,
    create,
    delete,
    ensure_dir,
    write,
    write_checked,
    write_raw,
    write_unsynced,
)

__all__ = [
    # paths
    "root",
    "resolve",
    "LOCK_DIR",
    "CHANGES_DIR",
    "STATE_DIR",
    # style
    "ABSENT",
    "FileText",
    "NO_FILE",
    "hash_text",
    "decode",
    # disk
    "volume_now_ns",
    # locks
    "locked",
    "locked_many",
    "guarded",
    "FILE_STRIPES",  # the lock pool's size: `.memory-locks/` never holds more files
    "GUARD_STRIPES",
    # changes
    "ChangesPosition",
    "changes_position",
    "changes_since",
    "record_changes",  # hand edits a host's keeper saw (memory.search_keeper)
    # hooks
    "Change",
    "Fingerprint",
    "on_change",
    "adopt",
    # scans
    "FileInfo",
    "stat",
    "stamp",
    "list_files",
    "from_names",
    "list_names",
    "file_infos",
    "list_dirs",
    "ScannedFile",
    "scan_files",
    "scan_one",
    "read_scanned",
    # extra
    "EXTRA_PREFIX",
    "ExtraRoot",
    "extra_roots",
    "scan_extra",
    "is_extra_path",
    "read_extra",
    # reading
    "read",
    "read_file",
    "read_file_locked",
    "read_with_hash",
    "read_bytes_from",
    "file_hash",
    "bytes_hash",
    "exists",
    "read_keyed",
    "read_keyed_many",
    # writing
    "write",
    "write_raw",
    "write_checked",
    "append",
    "delete",
    "ensure_dir",
    "create",
    "write_unsynced",
    # batches
    "write_many",
    # surveys
    "Entry",
    "survey",
    "undecodable_at",
    "is_dir",
    "is_link",
    "kind_of",
    # upkeep
    "prepare",
    "remove_stale_temp_files",
    "STALE_TEMP_SECONDS",
    "Health",
    "health",
]
