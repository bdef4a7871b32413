"""The search index: a cache of every searched file's entries, one per host, shared by all
the processes of that host, rebuildable from the files alone (the SPEC §6.1 rules; docs/search.md).

What it is: an SQLite database under MEMORY_SEARCH_DIR (a local disk, never the shared
workspace volume: SQLite over NFS is unsafe), named by the workspace root it indexes.
Nothing in it is memory: delete it and the next query (or `manage.py memory_reindex`)
builds it again from the Markdown files.

- `files`: every searched file (MEMORY.md and `memory/**/*.md` of each agent dir, and the
  shared facts) with the key it was read at — (size, mtime_ns, ctime_ns, inode) — a hash
  of its text, its rank key and its `slot`.
- one FTS5 table per scope (`e<n>`, n from `scopes`): a row per entry (a block of lines, or
  a fact), its folded words space-separated (`tokenize=ascii`: the words are exactly the
  §6.1 runs of letters and digits), its lines and the heading it sits under.
- `tokens`: every distinct word with a trigram index over it, so a query word of four or
  more letters finds the words it is inside (`sach` → `sach`, `sachs`), and `df`: in how
  many entries of each scope each word stands — what rarity weights are computed from.

Row ids put entries in rank order: rowid = slot << ENTRY_BITS | (ENTRY_MASK - ordinal),
and slots are allocated so that a higher slot is a newer file ((rank_ns, path) ascending:
a dated note by its day, any other file by its mtime). So "newest first, then line order"
is `ORDER BY rowid DESC`, which FTS5 walks lazily and stops at LIMIT.

Freshness (docs/decisions.md, "Search"):
- a change made through the app is in the change log (memory.workspace); every query first
  reads the log from where this host's index last stopped and re-indexes those files;
- a change made by hand is found by `reconcile` (a stat of every file against its key),
  which a query runs first whenever the last one on this host is older than
  MEMORY_SEARCH_RECONCILE_SECONDS;
- and memory.search reads every file it returns a hit from and checks it against the key
  and hash indexed here before returning, so a hit is never a line no longer in the file.
"""

from __future__ import annotations

import collections
import datetime as dt
import fcntl
import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from memory import text as text_rules
from memory import workspace
from memory.errors import PathRefused

logger = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
ENTRY_BITS = 22
ENTRY_MASK = (1 << ENTRY_BITS) - 1  # at most ~4 million entries in one file
SLOT_GAP = 1 << 16  # room left between neighbouring files when slots are laid out
MAX_SLOT = (1 << (62 - ENTRY_BITS)) - 1
FACTS_DIR = "users/owner/facts"
USER_SCOPE_DIR = FACTS_DIR
EXTRA_SCOPE_DIR = workspace.EXTRA_PREFIX  # MEMORY_EXTRA_PATHS, read by every agent
MEMORY_FILES = ("MEMORY.md", "memory.md")  # memory.md stands for MEMORY.md when alone
# A file whose ctime is this close to the moment it was read may change again within the
# same timestamp tick without its key changing: it is checked by hash until it settles.
RACY_NS = 2_000_000_000


def index_path() -> Path:
    """The index file of the current workspace root (tests point MEMORY_SEARCH_DIR at
    tmp_path; two roots never share a file)."""
    base = Path(settings.MEMORY_SEARCH_DIR).expanduser().resolve()
    root = workspace.root()
    if base == root or root in base.parents:
        # Only memory.workspace touches files under the home; and an index on a shared
        # workspace volume would be SQLite over NFS.
        raise ImproperlyConfigured(
            f"MEMORY_SEARCH_DIR ({base}) is inside MY_AGENT_HOME ({root}): put the search "
            "index on a local disk outside the workspace."
        )
    digest = hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:16]
    return base / f"index-{digest}.sqlite3"


def hash_text(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


# --- what is searched, and how a file becomes entries --------------------------------


def scope_of(rel: str) -> str | None:
    """The scope dir a workspace path belongs to ("" the default agent, "agents/<id>",
    USER_SCOPE_DIR the facts), or None when search does not read it."""
    if not rel.endswith(".md"):
        return None
    parts = rel.split("/")
    if any(part.startswith(".") for part in parts):
        return None
    if parts[0] == EXTRA_SCOPE_DIR:
        return EXTRA_SCOPE_DIR if len(parts) >= 2 else None
    if rel.startswith(FACTS_DIR + "/"):
        name = rel[len(FACTS_DIR) + 1 : -3]
        if "/" not in name and len(name) <= 64 and text_rules.FACT_NAME_RE.fullmatch(name):
            return USER_SCOPE_DIR
        return None
    if parts[0] == "agents":
        if len(parts) < 3:
            return None
        base, rest = f"agents/{parts[1]}", parts[2:]
    else:
        base, rest = "", parts
    if (len(rest) == 1 and rest[0] in MEMORY_FILES) or (len(rest) >= 2 and rest[0] == "memory"):
        return base
    return None


def shown_path(rel: str, scope: str) -> str:
    """The path a hit shows: relative to the agent dir, or the fact's workspace path."""
    if scope in (USER_SCOPE_DIR, EXTRA_SCOPE_DIR) or not scope:
        return rel
    return rel[len(scope) + 1 :]


def note_day(rel: str, scope: str) -> dt.date | None:
    """The day of a dated note (`memory/YYYY-MM-DD[-suffix].md` directly in the agent's
    memory/, or a name of a day other tools write: memory.text.note_day), else None."""
    if scope in (USER_SCOPE_DIR, EXTRA_SCOPE_DIR):
        return None
    shown = shown_path(rel, scope)
    if not shown.startswith("memory/") or shown.count("/") != 1:
        return None
    # Odd but real names of a day (`2026-01-05_1030.md`) are notes of it too (SPEC §3).
    found = text_rules.note_day(shown[len("memory/") :])
    return None if found is None else found[0]


def rank_ns(rel: str, scope: str, mtime_ns: int) -> int:
    """ "Newer" (SPEC §6.1 ranking): a dated note by its day (the start of it, in the owner's
    time zone: MEMORY_TIME_ZONE), any other file by its modification time."""
    day = note_day(rel, scope)
    if day is None:
        return mtime_ns
    zone = ZoneInfo(settings.MEMORY_TIME_ZONE)
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=zone).timestamp()) * 10**9


def _blank_machine_blocks(original: str) -> str:
    """The text with every line of the wiki's machine-owned block emptied (line count
    kept). A start marker without an end hides only its own line."""
    lines = original.split("\n")
    inside = False
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped == text_rules.MACHINE_BLOCK_START:
            inside = text_rules.MACHINE_BLOCK_END in (s.strip() for s in lines[index + 1 :])
            lines[index] = ""
        elif stripped == text_rules.MACHINE_BLOCK_END:
            inside = False
            lines[index] = ""
        elif inside:
            lines[index] = ""
    return "\n".join(lines)


@dataclass
class Entry:
    first: int  # 0-based line; -1 for a fact
    last: int
    heading: str  # the heading line it sits under, "" when none
    tokens: list[str]  # distinct folded words, in order
    text: str = ""  # what a hit shows (filled only when asked)


_find_words = text_rules._WORD_RE.findall


def _distinct(words: list[str]) -> list[str]:
    return list(dict.fromkeys(words))


def entries_of(
    original: str, *, is_fact: bool, with_text: bool = False, start_at: int = 0
) -> list[Entry]:
    """A file's entries (SPEC §6.1): a fact is one entry (description and body together);
    any other file is its blocks (memory.text.blocks), the wiki's machine block left out.
    With `start_at` (the first line of an entry), only the entries from that line on."""
    if is_fact:
        meta, body = text_rules.parse_frontmatter(original)
        description = str(meta.get("description") or "").strip()
        body = body.strip()
        tokens = _distinct(_find_words(text_rules.fold(f"{description}\n{body}")))
        if not tokens:
            return []
        shown = ""
        if with_text:
            flat = text_rules.fold_single_line(body)
            shown = f"{description} — {flat}" if description and flat else description or flat
        return [Entry(-1, -1, "", tokens, shown)]
    if text_rules.MACHINE_BLOCK_START in original:
        searched = _blank_machine_blocks(original)
    else:
        searched = original
    lines = searched.split("\n")
    # Only the lines from start_at on are folded: a grown file's new tail costs its size.
    folded = [""] * start_at + text_rules.fold("\n".join(lines[start_at:])).split("\n")
    found = []
    for first, last, heading in text_rules.blocks(lines, start_at=start_at):
        if first == last:
            tokens = _distinct(_find_words(folded[first]))
        else:
            tokens = _distinct(_find_words(" ".join(folded[first : last + 1])))
        entry = Entry(first, last, lines[heading].strip() if heading >= 0 else "", tokens)
        if with_text:
            entry.text = " ".join(
                line.strip() for line in original.split("\n")[first : last + 1] if line.strip()
            )
        found.append(entry)
    return found


# --- connections -----------------------------------------------------------------------

_local = threading.local()


class Index:
    """One connection to this host's index of the current workspace (one per thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, timeout=60, check_same_thread=False)
        self.db.execute("PRAGMA busy_timeout = 60000")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self.db.execute("PRAGMA cache_size = -16000")
        self.inode = os.stat(path).st_ino
        self._tables: dict[str, tuple[int, str]] = {}

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: object) -> None:
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, str(value)),
        )

    def scope(self, scope_dir: str, *, create: bool = False) -> tuple[int, str] | None:
        """(scope id, its FTS table name), creating both when asked."""
        known = self._tables.get(scope_dir)
        if known is not None:
            return known
        row = self.db.execute("SELECT id FROM scopes WHERE dir = ?", (scope_dir,)).fetchone()
        if row is None:
            if not create:
                return None
            cursor = self.db.execute("INSERT INTO scopes(dir, entries) VALUES (?, 0)", (scope_dir,))
            scope_id = cursor.lastrowid
            self.db.execute(
                f"CREATE VIRTUAL TABLE e{scope_id} USING fts5(words, first UNINDEXED, "
                "last UNINDEXED, heading UNINDEXED, tokenize='ascii', detail=none)"
            )
        else:
            scope_id = row[0]
        known = (scope_id, f"e{scope_id}")
        self._tables[scope_dir] = known
        return known

    def close(self) -> None:
        self.db.close()


_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE scopes(id INTEGER PRIMARY KEY, dir TEXT UNIQUE NOT NULL, entries INTEGER NOT NULL);
CREATE TABLE files(
    id INTEGER PRIMARY KEY,
    path TEXT UNIQUE NOT NULL,
    scope INTEGER NOT NULL,
    slot INTEGER UNIQUE NOT NULL,
    rank_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    racy INTEGER NOT NULL,
    hash TEXT NOT NULL,
    entries INTEGER NOT NULL
);
CREATE INDEX files_rank ON files(rank_ns, path);
CREATE TABLE tokens(id INTEGER PRIMARY KEY, token TEXT UNIQUE NOT NULL, spaceless INTEGER NOT NULL);
CREATE INDEX tokens_spaceless ON tokens(spaceless) WHERE spaceless;
CREATE VIRTUAL TABLE tokens_fts USING fts5(
    token, content='tokens', content_rowid='id', tokenize='trigram case_sensitive 1'
);
CREATE TABLE df(scope INTEGER NOT NULL, token INTEGER NOT NULL, n INTEGER NOT NULL,
                PRIMARY KEY(scope, token)) WITHOUT ROWID;
"""


def _signature() -> dict[str, str]:
    # What the index's contents depend on besides the files: a change rebuilds it.
    return {
        "version": SCHEMA_VERSION,
        "root": str(workspace.root()),
        "time_zone": str(settings.MEMORY_TIME_ZONE),
        "block_lines": str(text_rules.MAX_BLOCK_LINES),
        "block_chars": str(text_rules.MAX_BLOCK_CHARS),
    }


def get() -> Index:
    """This thread's connection to the current index, built first when there is none (or it
    was made for another version of the rules), reopened when it was rebuilt meanwhile."""
    path = index_path()
    cached: dict[Path, Index] = getattr(_local, "indexes", None) or {}
    _local.indexes = cached
    index = cached.get(path)
    if index is not None:
        try:
            if os.stat(path).st_ino == index.inode:
                return index
        except FileNotFoundError:
            pass
        index.close()
        del cached[path]
    if not usable(path):
        build(path)
    index = Index(path)
    cached[path] = index
    return index


def usable(path: Path) -> bool:
    if not path.exists():
        return False
    try:
        db = sqlite3.connect(path, timeout=60)
        try:
            stored = dict(db.execute("SELECT key, value FROM meta").fetchall())
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return False
    return all(stored.get(key) == value for key, value in _signature().items())


def forget_connections() -> None:
    """Close this thread's connections (tests that delete an index use it)."""
    for index in (getattr(_local, "indexes", None) or {}).values():
        index.close()
    _local.indexes = {}


# --- listing the files search reads ---------------------------------------------------


def _scan(rel_dir: str, *, recursive: bool = False) -> list[workspace.ScannedFile]:
    # A directory that leads out of the workspace holds nothing search may read.
    try:
        return workspace.scan_files(rel_dir, recursive=recursive)
    except PathRefused:
        return []


def scan_all() -> dict[str, tuple[str, workspace.ScannedFile]]:
    """Every searched file now on disk: workspace path → (scope dir, scanned file)."""
    found: dict[str, tuple[str, workspace.ScannedFile]] = {}
    try:
        agent_dirs = [""] + [f"agents/{name}" for name in workspace.list_dirs("agents")]
    except PathRefused:
        agent_dirs = [""]
    for base in agent_dirs:
        prefix = f"{base}/" if base else ""
        top = {scanned.path: scanned for scanned in _scan(base)}
        for name in MEMORY_FILES:  # MEMORY.md, else memory.md (agents.memory_file_name)
            if prefix + name in top:
                found[prefix + name] = (base, top[prefix + name])
                break
        for scanned in _scan(f"{base}/memory" if base else "memory", recursive=True):
            found[scanned.path] = (base, scanned)
    for scanned in _scan(FACTS_DIR):
        if scope_of(scanned.path) == USER_SCOPE_DIR:
            found[scanned.path] = (USER_SCOPE_DIR, scanned)
    for scanned in workspace.scan_extra():
        found[scanned.path] = (EXTRA_SCOPE_DIR, scanned)
    return found


# --- building -------------------------------------------------------------------------


@dataclass
class BuildReport:
    files: int
    entries: int
    tokens: int
    seconds: float
    bytes: int


def build(path: Path | None = None) -> BuildReport:
    """Build the index from the files alone, into a new file that then replaces the old one
    (processes holding the old one reopen it at their next query). One builder at a time
    per index: others wait for it and use what it built."""
    path = path or index_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_suffix(".lock")
    started = time.perf_counter()
    with open(lock_path, "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            return _build_locked(path, started)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _build_locked(path: Path, started: float) -> BuildReport:
    tmp = path.with_name(f"{path.name}.building-{os.getpid()}")
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    db = sqlite3.connect(tmp, isolation_level=None)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    db.executescript(_SCHEMA)
    # Changes from here on are replayed by the first query: nothing falls between.
    position = workspace.changes_position()
    now_ns = time.time_ns()
    found = scan_all()
    ordered = sorted(
        found.items(), key=lambda item: (rank_ns(item[0], item[1][0], item[1][1].mtime_ns), item[0])
    )
    db.execute("BEGIN")
    scopes: dict[str, int] = {}
    token_ids: dict[str, int] = {}
    df: dict[tuple[int, int], int] = collections.Counter()
    scope_entries: dict[int, int] = collections.Counter()
    total_entries = 0
    slot = 0
    for rel, (scope_dir, _scanned) in ordered:
        read = workspace.read_keyed(rel)
        if read is None:
            continue
        original, key = read
        if scope_dir not in scopes:
            cursor = db.execute("INSERT INTO scopes(dir, entries) VALUES (?, 0)", (scope_dir,))
            scopes[scope_dir] = cursor.lastrowid
            db.execute(
                f"CREATE VIRTUAL TABLE e{cursor.lastrowid} USING fts5(words, first UNINDEXED, "
                "last UNINDEXED, heading UNINDEXED, tokenize='ascii', detail=none)"
            )
        scope_id = scopes[scope_dir]
        entries = entries_of(original, is_fact=scope_dir == USER_SCOPE_DIR)[: ENTRY_MASK + 1]
        slot += SLOT_GAP
        base = slot << ENTRY_BITS
        rows = []
        for ordinal, entry in enumerate(entries):
            rows.append(
                (
                    base | (ENTRY_MASK - ordinal),
                    " ".join(entry.tokens),
                    entry.first,
                    entry.last,
                    entry.heading,
                )
            )
            for token in entry.tokens:
                token_id = token_ids.get(token)
                if token_id is None:
                    token_id = token_ids[token] = len(token_ids) + 1
                df[(scope_id, token_id)] += 1
        db.executemany(
            f"INSERT INTO e{scope_id}(rowid, words, first, last, heading) VALUES (?, ?, ?, ?, ?)",
            rows,
        )
        scope_entries[scope_id] += len(rows)
        total_entries += len(rows)
        _insert_file(db, rel, scope_id, slot, scope_dir, key, original, len(rows), now_ns)
    db.executemany(
        "INSERT INTO tokens(id, token, spaceless) VALUES (?, ?, ?)",
        ((i, t, _spaceless(t)) for t, i in token_ids.items()),
    )
    db.execute("INSERT INTO tokens_fts(tokens_fts) VALUES ('rebuild')")
    db.executemany(
        "INSERT INTO df(scope, token, n) VALUES (?, ?, ?)", ((s, t, n) for (s, t), n in df.items())
    )
    db.executemany(
        "UPDATE scopes SET entries = ? WHERE id = ?", ((n, s) for s, n in scope_entries.items())
    )
    for key, value in _signature().items():
        db.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (key, value))
    seconds = time.perf_counter() - started
    for key, value in (
        ("changes", f"{position[0]}:{position[1]}"),
        ("reconciled_ns", str(now_ns)),
        ("built_at", dt.datetime.now(dt.UTC).isoformat(timespec="seconds")),
        ("build_seconds", f"{seconds:.2f}"),
    ):
        db.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (key, value))
    db.execute("COMMIT")
    db.execute("PRAGMA journal_mode = WAL")
    db.close()
    os.replace(tmp, path)
    return BuildReport(len(ordered), total_entries, len(token_ids), seconds, os.path.getsize(path))


def _spaceless(token: str) -> int:
    return 1 if text_rules.SPACELESS_CHAR.search(token) else 0


def _insert_file(db, rel, scope_id, slot, scope_dir, key, original, entries, now_ns) -> None:
    size, mtime_ns, ctime_ns, ino = key
    racy = 1 if now_ns - max(mtime_ns, ctime_ns) < RACY_NS else 0
    db.execute(
        "INSERT INTO files(path, scope, slot, rank_ns, size, mtime_ns, ctime_ns, ino, racy, "
        "hash, entries) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            rel,
            scope_id,
            slot,
            rank_ns(rel, scope_dir, mtime_ns),
            size,
            mtime_ns,
            ctime_ns,
            ino,
            racy,
            hash_text(original),
            entries,
        ),
    )


# --- keeping it current ----------------------------------------------------------------


def _parse_position(value: str | None) -> workspace.ChangesPosition:
    if not value:
        return (1, 0)
    number, offset = value.split(":")
    return (int(number), int(offset))


def _bound_ns() -> int:
    return int(float(settings.MEMORY_SEARCH_RECONCILE_SECONDS) * 1e9)


def catch_up(index: Index) -> None:
    """Bring the index up to the files before a query (docs/decisions.md, "Search"):

    - the change log since this host last read it: every app write, on any host — one row
      read and one open of the log's last segment when nothing is new;
    - hand edits: when the last reconcile on this host is older than half of
      MEMORY_SEARCH_RECONCILE_SECONDS, one starts in the background (this query does not
      wait); when it is older than the whole bound (the host was idle), this query runs it
      first. Either way a query never misses a hand edit older than the bound.
    """
    position = _parse_position(index.meta("changes"))
    changes = workspace.changes_since(position)
    age = time.time_ns() - int(index.meta("reconciled_ns") or 0)
    bound = _bound_ns()
    if changes is None or age >= bound:
        reconcile(index)
        return
    if changes[0]:
        db = index.db
        db.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have read the log while we waited for the lock.
            position = _parse_position(index.meta("changes"))
            changes = workspace.changes_since(position)
            if changes is not None:
                paths, after = changes
                for rel in dict.fromkeys(paths):
                    refresh(index, rel)
                _advance(index, after)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if changes is None:
            reconcile(index)
    if bound > 0 and age >= bound // 2:
        _start_background(index.path)


def _advance(index: Index, position: workspace.ChangesPosition) -> None:
    if _parse_position(index.meta("changes")) < position:
        index.set_meta("changes", f"{position[0]}:{position[1]}")


def reconcile(index: Index, *, claim: bool = False) -> bool:
    """Stat every searched file against the key it was indexed at; re-index the changed,
    new and racy ones and drop the gone ones. The stat of every file runs outside the write
    lock (queries and app writes go on meanwhile); only the changes found take it. With
    `claim`, skip when another process of this host is already at it (background runs).
    Returns whether it ran."""
    db = index.db
    started_ns = time.time_ns()
    if claim:
        db.execute("BEGIN IMMEDIATE")
        try:
            done = int(index.meta("reconciled_ns") or 0)
            claimed = int(index.meta("reconcile_claimed_ns") or 0)
            busy = started_ns - max(done, claimed) < _bound_ns() // 2
            if not busy:
                index.set_meta("reconcile_claimed_ns", started_ns)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if busy:
            return False
    target = workspace.changes_position()  # what the scan below sees includes all before
    indexed = {
        row[0]: row[1:]
        for row in db.execute("SELECT path, size, mtime_ns, ctime_ns, ino, racy FROM files")
    }
    found = scan_all()
    changed = []
    for rel, (_scope_dir, scanned) in found.items():
        known = indexed.pop(rel, None)
        if known is None or known[4] or tuple(known[:4]) != tuple(scanned[2:]):
            changed.append(rel)
    changed += list(indexed)  # gone
    db.execute("BEGIN IMMEDIATE")
    try:
        for rel in changed:
            refresh(index, rel)  # compares again under the lock: never undoes a newer write
        if int(index.meta("reconciled_ns") or 0) < started_ns:
            index.set_meta("reconciled_ns", started_ns)
        _advance(index, target)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return True


_background: dict[Path, threading.Thread] = {}
_background_lock = threading.Lock()


def _start_background(path: Path) -> None:
    root = str(workspace.root())
    with _background_lock:
        if path in _background:
            return
        thread = threading.Thread(
            target=_background_reconcile, args=(path, root), name="search-reconcile", daemon=True
        )
        _background[path] = thread
    thread.start()


def _background_reconcile(path: Path, root: str) -> None:
    try:
        if str(workspace.root()) != root:
            return
        index = Index(path)
        try:
            reconcile(index, claim=True)
        finally:
            index.close()
    except Exception:  # noqa: BLE001 — a query will run it itself once the bound is reached
        logger.exception("search: the background reconcile failed")
    finally:
        with _background_lock:
            _background.pop(path, None)


def wait_for_background(timeout: float = 60) -> None:
    """Wait for this process's background reconciles to end (tests, and shutdown)."""
    deadline = time.monotonic() + timeout
    while True:
        with _background_lock:
            threads = list(_background.values())
        if not threads:
            return
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if time.monotonic() >= deadline:
            return


def _memory_pair(rel: str) -> tuple[str, str] | None:
    """(MEMORY.md, memory.md) of the agent dir `rel` is the long-term file of, else None."""
    base, _, name = rel.rpartition("/")
    if name not in MEMORY_FILES or not (
        base == "" or (base.startswith("agents/") and base.count("/") == 1)
    ):
        return None
    prefix = f"{base}/" if base else ""
    return prefix + MEMORY_FILES[0], prefix + MEMORY_FILES[1]


def refresh(index: Index, rel: str) -> None:
    """Re-index one workspace path from what is on disk now (removing it when it is gone
    or not searched). Inside the caller's transaction. A MEMORY.md that appears or goes
    decides whether a memory.md beside it is searched: that one is looked at again too."""
    _refresh_one(index, rel)
    pair = _memory_pair(rel)
    if pair is not None and rel == pair[0]:
        _refresh_one(index, pair[1])


def _refresh_one(index: Index, rel: str) -> None:
    scope_dir = scope_of(rel)
    pair = _memory_pair(rel) if scope_dir is not None else None
    if pair is not None and rel == pair[1] and workspace.read_keyed(pair[0]) is not None:
        scope_dir = None  # memory.md beside a MEMORY.md is not the agent's memory file
    read = workspace.read_keyed(rel) if scope_dir is not None else None
    db = index.db
    row = db.execute(
        "SELECT id, scope, slot, rank_ns, size, mtime_ns, ctime_ns, ino, hash FROM files "
        "WHERE path = ?",
        (rel,),
    ).fetchone()
    if read is None:
        if row is not None:
            _remove(index, row)
        return
    original, key = read
    content_hash = hash_text(original)
    now_ns = time.time_ns()
    if row is not None and row[8] == content_hash and tuple(row[4:8]) == key:
        # Unchanged; only settle a racy file once it is old enough.
        if now_ns - max(key[1], key[2]) >= RACY_NS:
            db.execute("UPDATE files SET racy = 0 WHERE id = ?", (row[0],))
        return
    scope_id, table = index.scope(scope_dir, create=True)
    new_rank = rank_ns(rel, scope_dir, key[1])
    if (
        row is not None
        and row[1] == scope_id
        and row[3] == new_rank
        and _refresh_grown(index, row, rel, scope_dir, table, original, key, now_ns)
    ):
        return
    if row is not None and row[1] == scope_id and row[3] == new_rank:
        slot = row[2]
        _drop_entries(index, row)
        db.execute("DELETE FROM files WHERE id = ?", (row[0],))
    else:
        if row is not None:
            _remove(index, row)
        slot = _allocate_slot(index, new_rank, rel)
    entries = entries_of(original, is_fact=scope_dir == USER_SCOPE_DIR)[: ENTRY_MASK + 1]
    _insert_entries(index, scope_id, table, slot, 0, entries)
    _insert_file(db, rel, scope_id, slot, scope_dir, key, original, len(entries), now_ns)


def _insert_entries(index, scope_id, table, slot, first_ordinal, entries) -> None:
    base = slot << ENTRY_BITS
    index.db.executemany(
        f"INSERT INTO {table}(rowid, words, first, last, heading) VALUES (?, ?, ?, ?, ?)",
        (
            (base | (ENTRY_MASK - ordinal), " ".join(e.tokens), e.first, e.last, e.heading)
            for ordinal, e in enumerate(entries, start=first_ordinal)
        ),
    )
    _count_tokens(index, scope_id, (e.tokens for e in entries), +1)
    index.db.execute(
        "UPDATE scopes SET entries = entries + ? WHERE id = ?", (len(entries), scope_id)
    )


def _refresh_grown(index, row, rel, scope_dir, table, original, key, now_ns) -> bool:
    """Re-index only the tail of a file that grew (memory_save appending to today's note):
    when the text indexed is still its start, every entry before the last one indexed is
    unchanged, so that last entry and what follows are all there is to do. False (nothing
    done) when the file did not simply grow."""
    file_id, scope_id, slot, _rank, old_size = row[:5]
    if scope_dir == USER_SCOPE_DIR or text_rules.MACHINE_BLOCK_START in original:
        return False
    encoded = original.encode("utf-8")
    if len(encoded) <= old_size or original.startswith("---"):
        return False
    if hashlib.blake2b(encoded[:old_size], digest_size=16).hexdigest() != row[8]:
        return False
    db = index.db
    low = slot << ENTRY_BITS
    last = db.execute(
        f"SELECT rowid, first FROM {table} WHERE rowid BETWEEN ? AND ? ORDER BY rowid LIMIT 1",
        (low, low | ENTRY_MASK),
    ).fetchone()
    if last is None:
        return False
    ordinal = ENTRY_MASK - (last[0] & ENTRY_MASK)
    dropped = [
        words.split()
        for (words,) in db.execute(
            f"SELECT words FROM {table} WHERE rowid BETWEEN ? AND ?", (low, last[0])
        )
    ]
    db.execute(f"DELETE FROM {table} WHERE rowid BETWEEN ? AND ?", (low, last[0]))
    _count_tokens(index, scope_id, dropped, -1)
    db.execute("UPDATE scopes SET entries = entries - ? WHERE id = ?", (len(dropped), scope_id))
    tail = entries_of(original, is_fact=False, start_at=last[1])[: ENTRY_MASK + 1 - ordinal]
    _insert_entries(index, scope_id, table, slot, ordinal, tail)
    size, mtime_ns, ctime_ns, ino = key
    db.execute(
        "UPDATE files SET size = ?, mtime_ns = ?, ctime_ns = ?, ino = ?, racy = ?, hash = ?, "
        "entries = ? WHERE id = ?",
        (
            size,
            mtime_ns,
            ctime_ns,
            ino,
            1 if now_ns - max(mtime_ns, ctime_ns) < RACY_NS else 0,
            hash_text(original),
            ordinal + len(tail),
            file_id,
        ),
    )
    return True


def _table_of(index: Index, scope_id: int) -> str:
    return f"e{scope_id}"


def _drop_entries(index: Index, row) -> None:
    scope_id, slot = row[1], row[2]
    table = _table_of(index, scope_id)
    low, high = slot << ENTRY_BITS, (slot << ENTRY_BITS) | ENTRY_MASK
    old = [
        words.split()
        for (words,) in index.db.execute(
            f"SELECT words FROM {table} WHERE rowid BETWEEN ? AND ?", (low, high)
        )
    ]
    index.db.execute(f"DELETE FROM {table} WHERE rowid BETWEEN ? AND ?", (low, high))
    _count_tokens(index, scope_id, old, -1)
    index.db.execute("UPDATE scopes SET entries = entries - ? WHERE id = ?", (len(old), scope_id))


def _remove(index: Index, row) -> None:
    _drop_entries(index, row)
    index.db.execute("DELETE FROM files WHERE id = ?", (row[0],))


def _count_tokens(index: Index, scope_id: int, entries: Iterable[list[str]], sign: int) -> None:
    counts = collections.Counter(token for tokens in entries for token in tokens)
    if not counts:
        return
    db = index.db
    ids = _token_ids(index, list(counts), create=sign > 0)
    db.executemany(
        "INSERT INTO df(scope, token, n) VALUES (?, ?, ?) "
        "ON CONFLICT(scope, token) DO UPDATE SET n = n + excluded.n",
        ((scope_id, ids[token], sign * n) for token, n in counts.items() if token in ids),
    )
    if sign < 0:
        db.execute("DELETE FROM df WHERE scope = ? AND n <= 0", (scope_id,))


def _token_ids(index: Index, tokens: list[str], *, create: bool) -> dict[str, int]:
    db = index.db
    ids: dict[str, int] = {}
    for start in range(0, len(tokens), 500):
        chunk = tokens[start : start + 500]
        marks = ",".join("?" * len(chunk))
        ids.update(db.execute(f"SELECT token, id FROM tokens WHERE token IN ({marks})", chunk))
    if create:
        for token in tokens:
            if token not in ids:
                cursor = db.execute(
                    "INSERT INTO tokens(token, spaceless) VALUES (?, ?)", (token, _spaceless(token))
                )
                ids[token] = cursor.lastrowid
                db.execute(
                    "INSERT INTO tokens_fts(rowid, token) VALUES (?, ?)", (cursor.lastrowid, token)
                )
    return ids


def _allocate_slot(index: Index, rank: int, rel: str) -> int:
    """A free slot between the files ranked just below and just above (rank, path); the
    neighbours are spread out again when there is no room left between them."""
    db = index.db
    below = db.execute(
        "SELECT slot FROM files WHERE (rank_ns, path) < (?, ?) ORDER BY rank_ns DESC, path DESC "
        "LIMIT 1",
        (rank, rel),
    ).fetchone()
    above = db.execute(
        "SELECT slot FROM files WHERE (rank_ns, path) > (?, ?) ORDER BY rank_ns, path LIMIT 1",
        (rank, rel),
    ).fetchone()
    low = below[0] if below else 0
    if above is None:
        slot = low + SLOT_GAP
        if slot <= MAX_SLOT:
            return slot
    elif above[0] - low > 1:
        return (low + above[0]) // 2
    _respace(index, rank, rel)
    return _allocate_slot(index, rank, rel)


def _respace(index: Index, rank: int, rel: str) -> None:
    """Spread the slots of the files around (rank, rel) evenly, moving their entries, so a
    file fits between them. The window doubles until it has room for twice its files."""
    db = index.db
    width = 8
    while True:
        below = db.execute(
            "SELECT id, scope, slot FROM files WHERE (rank_ns, path) < (?, ?) "
            "ORDER BY rank_ns DESC, path DESC LIMIT ?",
            (rank, rel, width),
        ).fetchall()[::-1]
        above = db.execute(
            "SELECT id, scope, slot FROM files WHERE (rank_ns, path) > (?, ?) "
            "ORDER BY rank_ns, path LIMIT ?",
            (rank, rel, width),
        ).fetchall()
        window = below + above
        low = (
            db.execute("SELECT max(slot) FROM files WHERE slot < ?", (window[0][2],)).fetchone()[0]
            or 0
        )
        high_row = db.execute(
            "SELECT min(slot) FROM files WHERE slot > ?", (window[-1][2],)
        ).fetchone()[0]
        reached_end = high_row is None
        high = MAX_SLOT if reached_end else high_row
        count = len(window) + 1  # the file to insert too
        if high - low > 2 * (count + 1) or (len(below) < width and len(above) < width):
            break
        width *= 2
    step = max(1, (high - low) // (count + 1))
    if reached_end:
        step = min(step, SLOT_GAP)
    # New slots in order, leaving the gap at the insertion point for the new file.
    targets: list[tuple[int, int, int, int]] = []  # (file id, scope, old slot, new slot)
    position = low
    for index_in_window, (file_id, scope_id, old_slot) in enumerate(window):
        position += step
        if index_in_window == len(below):
            position += step  # the new file's place
        targets.append((file_id, scope_id, old_slot, position))
    moved = [t for t in targets if t[2] != t[3]]
    # Two passes so no new slot collides with an old one still in use: first away, then home.
    parked = MAX_SLOT + 1
    for _file_id, scope_id, old_slot, _new_slot in moved:
        _move(index, scope_id, old_slot, parked)
        db.execute("UPDATE files SET slot = ? WHERE slot = ?", (-parked, old_slot))
        parked += 1
    parked = MAX_SLOT + 1
    for file_id, scope_id, _old_slot, new_slot in moved:
        _move(index, scope_id, parked, new_slot)
        db.execute("UPDATE files SET slot = ? WHERE id = ?", (new_slot, file_id))
        parked += 1


def _move(index: Index, scope_id: int, old_slot: int, new_slot: int) -> None:
    table = _table_of(index, scope_id)
    low, high = old_slot << ENTRY_BITS, (old_slot << ENTRY_BITS) | ENTRY_MASK
    delta = (new_slot - old_slot) << ENTRY_BITS
    rows = index.db.execute(
        f"SELECT rowid, words, first, last, heading FROM {table} WHERE rowid BETWEEN ? AND ?",
        (low, high),
    ).fetchall()
    index.db.execute(f"DELETE FROM {table} WHERE rowid BETWEEN ? AND ?", (low, high))
    index.db.executemany(
        f"INSERT INTO {table}(rowid, words, first, last, heading) VALUES (?, ?, ?, ?, ?)",
        ((rowid + delta, *rest) for rowid, *rest in rows),
    )
