"""The search index: a cache of every searched file's entries, one per host, shared by all
the processes of that host, rebuildable from the files alone (the SPEC §6.1 rules;
docs/search.md).

What it is: an SQLite database kept by memory.search_store under MEMORY_SEARCH_DIR (a local
disk, never the shared workspace volume: SQLite over NFS is unsafe), one folder per
workspace root, in generations: a rebuild writes a new one beside the current one and
every process moves to it at its next query — no file is ever replaced under a process
that has it open. Nothing in it is memory: delete it and it is built again from the
Markdown files, while search answers from the files (`from_files`).

- `files`: every searched file (MEMORY.md and `memory/**/*.md` of each agent dir, and the
  shared facts) with the key it was read at — (size, mtime_ns, ctime_ns, inode) — a hash
  of its text, its rank key and its `slot`.
- one FTS5 table per scope (`e<n>`, n from `scopes`): a row per entry (a block of lines, or
  a fact), its folded words space-separated, in order and with repeats (`tokenize=ascii`:
  the words are exactly the §6.1 runs of letters and digits; how often a word stands in
  an entry, how long the entry is and which words stand side by side are what the
  ranking reads: memory.ranking), its lines and the heading it sits under; `scopes.words`
  adds up the words of a scope's entries (the mean length of an entry).
- `tokens`: every distinct word with a trigram index over it, so a query word of four or
  more letters finds the words it is inside (`sach` → `sach`, `sachs`), and `df`: in how
  many entries of each scope each word stands — what rarity weights are computed from.
- `meta`: what it was built for (`_signature`: nothing a process sets), where in the change
  log it stopped (`changes`), when the last stat check ran (`reconciled_ns`).

Row ids put entries in rank order: rowid = slot << ENTRY_BITS | (ENTRY_MASK - ordinal),
and slots are allocated so that a higher slot is a newer file ((rank_ns, path) ascending:
a dated note by its day, any other file by its mtime). An entry is stored under FLIP −
rowid (`stored`), so "newest first, then line order" is the tables' own order, `ORDER BY
rowid` — which FTS5 walks lazily and stops at LIMIT, about twice as fast as backwards (a
query of three common words at 10×: 6.5 against 12.9 ms over every agent's table).

Freshness (docs/decisions.md, "Search"):
- a change made through the app is in the change log (memory.workspace); every query first
  reads the log from where this host's index last stopped and re-indexes those files;
- a change made by hand is seen by the host's keeper (memory.search_keeper: an inotify
  watch, or a stat of every file every MEMORY_SEARCH_RECONCILE_SECONDS where no watch is
  possible), which records it in the change log too; with no keeper alive, by `reconcile`
  run from queries as the bound requires;
- every write to the index is a short transaction (BATCH_PATHS files) and readers never
  wait for a writer (WAL);
- and memory.search reads every file it returns a hit from and checks it against the key
  and hash indexed here before returning, so a hit is never a line no longer in the file.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import hashlib
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from memory import facts, search_store, workspace
from memory import text as text_rules
from memory.errors import PathRefused

logger = logging.getLogger(__name__)

# 2: a dated note ranks by its day in UTC; 3: an entry's words in order with repeats and
# its heading's words, the words per scope; 4: both; 5: entries stored under FLIP − rowid
SCHEMA_VERSION = "5"
ENTRY_BITS = 22
ENTRY_MASK = (1 << ENTRY_BITS) - 1  # at most ~4 million entries in one file
FLIP = (1 << 63) - 1  # an entry's rowid is stored as FLIP − rowid: newest first is ascending
SLOT_GAP = 1 << 16  # room left between neighbouring files when slots are laid out
MAX_SLOT = (1 << (62 - ENTRY_BITS)) - 1
FACTS_DIR = "users/owner/facts"
USER_SCOPE_DIR = FACTS_DIR
# USER.md (the file facts.user_path names) is a scope of its own: only the owner's search
# window reads it (SPEC §6.2); memory_search leaves it out, as it is whole in every prompt.
USER_FILE_SCOPE_DIR = "USER.md"
EXTRA_SCOPE_DIR = workspace.EXTRA_PREFIX  # MEMORY_EXTRA_PATHS, read by every agent
MEMORY_FILES = ("MEMORY.md", "memory.md")  # memory.md stands for MEMORY.md when alone
# A file whose ctime is this close to the moment it was read may change again within the
# same timestamp tick without its key changing: it is checked by hash until it settles.
RACY_NS = 2_000_000_000


def hash_text(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


# --- what is searched, and how a file becomes entries --------------------------------


def scope_of(rel: str) -> str | None:
    """The scope dir a workspace path belongs to ("" the default agent, "agents/<id>",
    USER_SCOPE_DIR the facts, USER_FILE_SCOPE_DIR the USER.md now in use), or None when
    search does not read it."""
    scope = _memory_scope_of(rel)
    if scope is None and rel.endswith(".md") and rel in user_file_candidates():
        return USER_FILE_SCOPE_DIR if user_file() == rel else None
    return scope


def _memory_scope_of(rel: str) -> str | None:
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


def _configured_user_file() -> str:
    try:
        return facts.configured_user_file()
    except PathRefused:
        return ""


def user_file_candidates() -> tuple[str, ...]:
    """Every path that is USER.md when it is the one facts.user_path names: a file that
    appears or goes there may change which one is (SPEC §1)."""
    configured = _configured_user_file()
    return (facts.OWNER_USER_PATH, facts.ROOT_USER_PATH, *([configured] if configured else []))


def user_file() -> str | None:
    """The USER.md search reads (facts.user_path), None when it is refused or already
    searched as an agent's memory file."""
    try:
        rel = facts.user_path()
    except PathRefused:
        return None
    return rel if _memory_scope_of(rel) is None else None


def shown_path(rel: str, scope: str) -> str:
    """The path a hit shows: relative to the agent dir, or the fact's workspace path."""
    if scope in (USER_SCOPE_DIR, EXTRA_SCOPE_DIR, USER_FILE_SCOPE_DIR) or not scope:
        return rel
    return rel[len(scope) + 1 :]


def note_day(rel: str, scope: str) -> dt.date | None:
    """The day of a dated note (`memory/YYYY-MM-DD[-suffix].md` directly in the agent's
    memory/, or a name of a day other tools write: memory.text.note_day), else None."""
    if scope in (USER_SCOPE_DIR, EXTRA_SCOPE_DIR, USER_FILE_SCOPE_DIR):
        return None
    shown = shown_path(rel, scope)
    if not shown.startswith("memory/") or shown.count("/") != 1:
        return None
    # Odd but real names of a day (`2026-01-05_1030.md`) are notes of it too (SPEC §3).
    found = text_rules.note_day(shown[len("memory/") :])
    return None if found is None else found[0]


def rank_ns(rel: str, scope: str, mtime_ns: int) -> int:
    """ "Newer" (SPEC §6.1 ranking): a dated note by its day (the start of it in UTC — the
    same in every process and on every host, whatever zone each runs in: the index's
    contents never depend on a process setting), any other file by its modification time."""
    day = note_day(rel, scope)
    if day is None:
        return mtime_ns
    return (day - _EPOCH).days * 86_400 * 10**9


_EPOCH = dt.date(1970, 1, 1)


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
    words: list[str]  # its folded words, in order, with repeats
    text: str = ""  # what a hit shows (filled only when asked)
    context: list[str] = field(default_factory=list)  # the folded words of its heading

    @property
    def tokens(self) -> list[str]:
        """Its distinct folded words, its heading's too, in order."""
        return _distinct(self.words + self.context)


_find_words = text_rules._WORD_RE.findall


def _distinct(words: list[str]) -> list[str]:
    return list(dict.fromkeys(words))


_DATE_HEADING = re.compile(r"#{1,6}\s+[0-9]{4}-[0-9]{2}-[0-9]{2}\s*")


def heading_words(heading: str) -> list[str]:
    """The folded words of the heading (or page title) an entry sits under, which search
    reads with the entry (SPEC §6.1); none for a note's date heading (`# 2026-01-05`: the
    note's date says it)."""
    if not heading or _DATE_HEADING.fullmatch(heading):
        return []
    return _find_words(text_rules.fold(heading))


def _create_entries(db: sqlite3.Connection, scope_id: int) -> None:
    """The FTS5 table of a scope's entries: its words and its heading's are searched."""
    db.execute(
        f"CREATE VIRTUAL TABLE e{scope_id} USING fts5(words, context, first UNINDEXED, "
        "last UNINDEXED, heading UNINDEXED, tokenize='ascii', detail=none)"
    )
    _set_usermerge(db, f"e{scope_id}")


COLUMNS = "words, context, first, last, heading"
# The same, with the row id, read straight from a table's content: FTS5's shadow table
# `<table>_content` (id, c0… in the order of COLUMNS). A row read there by its id costs
# half of what it costs through the FTS5 table (2.5 against 4.9 µs at 10×).
STORED = f"{FLIP} - id, c0, c1, c2, c3, c4"


def stored(rowid: int) -> int:
    """The id the entry `rowid` is stored under; its own inverse (the rowid of a stored id)."""
    return FLIP - rowid


def stored_range(low: int, high: int) -> tuple[int, int]:
    """The stored ids of the rowids low…high, lowest first (for BETWEEN)."""
    return FLIP - high, FLIP - low


def fact_words_of(rel: str) -> str:
    """A fact's name as words (`coffee-order` → `coffee order`): searched with the fact."""
    return rel.rsplit("/", 1)[-1].removesuffix(".md").replace("-", " ")


def entries_of(
    original: str,
    *,
    is_fact: bool,
    with_text: bool = False,
    start_at: int = 0,
    path: str = "",
) -> list[Entry]:
    """A file's entries (SPEC §6.1): a fact (`path` its workspace path) is one entry, its
    name, description and body together; any other file is its blocks (memory.text.blocks:
    frontmatter is not searched; nor is a date heading, `# 2026-01-05`: the note's date
    says it), the wiki's machine block left out, and a page's
    frontmatter `title` is the heading of what stands under no heading of its own. With
    `start_at` (the first line of an entry), only the entries from that line on."""
    if is_fact:
        meta, body = text_rules.parse_frontmatter(original)
        description = str(meta.get("description") or "").strip()
        body = body.strip()
        name = fact_words_of(path) if path else ""
        tokens = _find_words(text_rules.fold(f"{name}\n{description}\n{body}"))
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
    title = text_rules.page_title(original)
    # Only the lines from start_at on are folded: a grown file's new tail costs its size.
    folded = [""] * start_at + text_rules.fold("\n".join(lines[start_at:])).split("\n")
    found = []
    for first, last, heading in text_rules.blocks(lines, start_at=start_at):
        if first == last and _DATE_HEADING.fullmatch(lines[first].strip()):
            continue  # a note's date heading says what the note's date says
        if first == last:
            tokens = _find_words(folded[first])
        else:
            tokens = _find_words(" ".join(folded[first : last + 1]))
        shown = lines[heading].strip() if heading >= 0 else title
        entry = Entry(first, last, shown, tokens, context=heading_words(shown))
        if with_text:
            entry.text = " ".join(
                line.strip() for line in original.split("\n")[first : last + 1] if line.strip()
            )
        found.append(entry)
    return found


# --- connections -----------------------------------------------------------------------

_local = threading.local()

# A query waits at most this long for the write lock to catch up (the keeper writes in
# short batches); past it the query answers from the index as it is (every hit is checked
# against its file) rather than fail.
QUERY_BUSY_MS = 2000
KEEPER_BUSY_MS = 30000
# The page cache of one connection, in KiB: small on purpose. The index file's pages stay
# in the operating system's page cache, which every process of the host shares: that is
# the host's one cache, so a worker's memory does not grow with the index.
CACHE_KIB = 2048
# Statements kept prepared per connection (Python's default is 128). A search of every
# agent runs a few statements per table; preparing an FTS5 one again costs ~45 µs, and
# with 21 agents the default was too few to keep them (a tenth of that search's time).
# About 3 MB per connection at 10× with every statement of the bench's queries kept.
STATEMENTS = 512


class Index:
    """One connection to an index: this host's current generation (one per thread, holding
    a lease on it), or an index built in memory from the files (`from_files`)."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        db: sqlite3.Connection | None = None,
        generation: str | None = None,
        lease: search_store.Lease | None = None,
        busy_ms: int = QUERY_BUSY_MS,
    ) -> None:
        self.path = path
        self.generation = generation
        self.lease = lease
        if db is None:
            assert path is not None
            # mode=rw: never create a file that is not there (a generation removed meanwhile).
            db = sqlite3.connect(
                f"{path.as_uri()}?mode=rw",
                uri=True,
                isolation_level=None,
                timeout=busy_ms / 1000,
                check_same_thread=False,
                cached_statements=STATEMENTS,
            )
        self.db = db
        self.busy_ms = busy_ms
        self.closed = False
        self.db.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self.db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        self._tables: dict[str, tuple[int, str]] = {}

    @property
    def in_memory(self) -> bool:
        """Built from the files for one query (no usable index on this host)."""
        return self.path is None

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
            _create_entries(self.db, scope_id)
        else:
            scope_id = row[0]
        known = (scope_id, f"e{scope_id}")
        self._tables[scope_dir] = known
        return known

    def signature_ok(self) -> bool:
        """Whether it was built for these rules (SCHEMA_VERSION, the block sizes, this root,
        the file MEMORY_USER_FILE names).
        Raises sqlite3.DatabaseError when the file is not a readable index."""
        stored = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        return all(stored.get(key) == value for key, value in _signature().items())

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(sqlite3.Error):
            self.db.close()
        if self.lease is not None:
            self.lease.release()


_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE scopes(id INTEGER PRIMARY KEY, dir TEXT UNIQUE NOT NULL, entries INTEGER NOT NULL,
                    words INTEGER NOT NULL DEFAULT 0);
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
INSERT INTO tokens_fts(tokens_fts, rank) VALUES('usermerge', 2);
"""


def _signature() -> dict[str, str]:
    # What the index's contents depend on besides the files: a change rebuilds it. Nothing
    # here is a setting of one process (the time zone is not: SPEC §6.1 ranks a dated note
    # by its day's start in UTC), so every process of the host agrees on one index.
    return {
        "version": SCHEMA_VERSION,
        "root": str(workspace.root()),
        "block_lines": str(text_rules.MAX_BLOCK_LINES),
        "block_chars": str(text_rules.MAX_BLOCK_CHARS),
        "user_file": _configured_user_file(),  # MEMORY_USER_FILE: which file is USER.md
    }


class IndexMissing(Exception):
    """No usable index on this host right now (none built yet, being built, or the last one
    was found broken): answer from the files (`from_files`) while one is built."""


def get() -> Index:
    """This thread's connection to this host's current index generation, moved to a newer
    one when a rebuild switched meanwhile (one stat of `current` per call). Raises
    IndexMissing when there is none usable."""
    directory = search_store.store_dir()
    cached: dict[Path, Index] = getattr(_local, "indexes", None) or {}
    _local.indexes = cached
    index = cached.get(directory)
    if index is not None:
        if index.generation == search_store.current(directory):
            return index
        index.close()
        del cached[directory]
    index = open_current()
    cached[directory] = index
    return index


# Connections a process keeps for its queries, per store: a query checks one out and puts
# it back, so a server whose every request runs in a new thread neither opens a connection
# per request nor keeps one per dead thread (and a rebuilt generation's last lease goes with
# the next query).
POOL_SIZE = 4
_pool: dict[Path, list[Index]] = {}
_pool_lock = threading.Lock()


def checkout() -> Index:
    """A connection to the current generation for one query (give it back: `checkin`).
    Raises IndexMissing as `get`."""
    directory = search_store.store_dir()
    generation = search_store.current(directory)
    with _pool_lock:
        idle = _pool.get(directory, [])
        while idle:
            index = idle.pop()
            if index.generation == generation and not index.closed:
                return index
            index.close()  # an older generation: let go of it
    return open_current()


def checkin(index: Index) -> None:
    """Give back a connection from `checkout` (closed when its generation is no longer the
    current one, or the pool is full)."""
    if index.in_memory or index.closed or index.path is None:
        index.close()
        return
    directory = index.path.parent
    if search_store.current(directory) == index.generation:
        with _pool_lock:
            idle = _pool.setdefault(directory, [])
            if len(idle) < POOL_SIZE:
                idle.append(index)
                _start_sweeper()
                return
    index.close()


SWEEP_SECONDS = 5.0  # how soon an idle process lets go of a generation rebuilt meanwhile
_sweeper: threading.Thread | None = None


def _start_sweeper() -> None:
    # The caller holds _pool_lock.
    global _sweeper
    if _sweeper is None or not _sweeper.is_alive():
        _sweeper = threading.Thread(target=_sweep, name="search-sweep", daemon=True)
        _sweeper.start()


def _sweep() -> None:
    """Close idle connections to generations that are no longer current, so a process
    that stopped searching does not keep an old index file on disk."""
    while True:
        time.sleep(SWEEP_SECONDS)
        with _pool_lock:
            for directory, idle in list(_pool.items()):
                try:
                    generation = search_store.current(directory)
                except OSError:
                    continue
                for index in idle:
                    if index.generation != generation:
                        index.close()
                idle[:] = [index for index in idle if not index.closed]


def open_current(*, busy_ms: int = QUERY_BUSY_MS) -> Index:
    """A new connection to the current generation, holding its own lease (for background
    work; queries use `get`). Raises IndexMissing when there is none usable — and stops
    every process from using one found damaged."""
    directory = search_store.store_dir()
    generation = search_store.current(directory)
    if generation is None:
        raise IndexMissing("no index built yet")
    lease = search_store.lease(generation, directory)
    if lease is None:
        raise IndexMissing(f"{generation} was removed meanwhile")
    index = None
    try:
        index = Index(lease.path, generation=generation, lease=lease, busy_ms=busy_ms)
        fit = index.signature_ok()
    except sqlite3.DatabaseError as exc:
        if index is not None:
            index.close()
        lease.release()
        if is_broken(exc):
            report_broken(generation, exc)
        raise IndexMissing(f"{generation} cannot be read now: {exc}") from exc
    if not fit:
        # Left as it is: during an upgrade the other version's processes still use it; the
        # keeper (or, without one, this query) builds one for these rules beside it.
        index.close()
        raise IndexMissing(f"{generation} was built for other rules")
    return index


def is_broken(exc: BaseException) -> bool:
    """Whether an SQLite error says the index file itself is damaged (truncated, overwritten,
    not a database) — as opposed to busy, which only means "not now"."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _BROKEN_CODES:
        return True
    message = str(exc).lower()
    return any(words in message for words in _BROKEN_WORDS)


_BROKEN_CODES = {
    sqlite3.SQLITE_CORRUPT,
    sqlite3.SQLITE_NOTADB,
    sqlite3.SQLITE_IOERR,
    sqlite3.SQLITE_CANTOPEN,
    sqlite3.SQLITE_FORMAT,
}
_BROKEN_WORDS = ("malformed", "not a database", "no such table", "disk i/o error")


def report_broken(generation: str | None, exc: BaseException) -> None:
    """An index generation was found damaged while used: no process uses it from its next
    query on (`current` no longer names it); the keeper builds the next one, and search
    answers from the files meanwhile."""
    if generation is None:
        return
    logger.error("search: index %s is damaged (%s); answering from the files", generation, exc)
    forget_connections()
    search_store.drop_if_current(generation)


def usable() -> bool:
    """Whether this host has a current index built for these rules (it may be behind the
    files: queries and the keeper catch it up)."""
    try:
        get()
    except IndexMissing:
        return False
    return True


def index_path() -> Path | None:
    """The file of this host's current index generation, or None when there is none."""
    generation = search_store.current()
    return None if generation is None else search_store.db_path(generation)


def forget_connections() -> None:
    """Close this thread's connections and the process's idle ones (and let go of their
    generations)."""
    for index in (getattr(_local, "indexes", None) or {}).values():
        index.close()
    _local.indexes = {}
    with _pool_lock:
        for idle in _pool.values():
            for index in idle:
                index.close()
        _pool.clear()


# --- listing the files search reads ---------------------------------------------------


def _scan(rel_dir: str, *, recursive: bool = False) -> list[workspace.ScannedFile]:
    # A directory that leads out of the workspace holds nothing search may read.
    try:
        return workspace.scan_files(rel_dir, recursive=recursive)
    except PathRefused:
        return []


def scan_all(scopes: set[str] | None = None) -> dict[str, tuple[str, workspace.ScannedFile]]:
    """Every searched file now on disk (of the scope dirs `scopes`, else of all): workspace
    path → (scope dir, scanned file)."""
    found: dict[str, tuple[str, workspace.ScannedFile]] = {}
    try:
        agent_dirs = [""] + [f"agents/{name}" for name in workspace.list_dirs("agents")]
    except PathRefused:
        agent_dirs = [""]
    for base in agent_dirs:
        if scopes is not None and base not in scopes:
            continue
        prefix = f"{base}/" if base else ""
        top = {scanned.path: scanned for scanned in _scan(base)}
        for name in MEMORY_FILES:  # MEMORY.md, else memory.md (agents.memory_file_name)
            if prefix + name in top:
                found[prefix + name] = (base, top[prefix + name])
                break
        for scanned in _scan(f"{base}/memory" if base else "memory", recursive=True):
            found[scanned.path] = (base, scanned)
    if scopes is None or USER_SCOPE_DIR in scopes:
        for scanned in _scan(FACTS_DIR):
            if scope_of(scanned.path) == USER_SCOPE_DIR:
                found[scanned.path] = (USER_SCOPE_DIR, scanned)
    user = user_file() if scopes is None or USER_FILE_SCOPE_DIR in scopes else None
    if user is not None:
        folder = user.rpartition("/")[0]
        for scanned in _scan(folder):
            if scanned.path == user:
                found[user] = (USER_FILE_SCOPE_DIR, scanned)
    if scopes is None or EXTRA_SCOPE_DIR in scopes:
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
    generation: str = ""


Progress = Callable[[int, int], None]  # (files done, files in all)
PROGRESS_EVERY = 500  # files between two progress reports of a build


def build(*, progress: Progress | None = None) -> BuildReport:
    """Build this host's index from the files alone, as a new generation beside the current
    one, and switch every process to it when it is complete (search_store: nothing is ever
    replaced under a process that has it open; the old generation goes when the last
    reader lets go). One builder at a time per host: another waits, then builds anew.
    A build killed half-way leaves a generation nobody uses, removed by the next one."""
    directory = search_store.ensure_dir()
    started = time.perf_counter()
    with search_store.build_lock(directory):
        held = search_store.new_generation(directory)
        try:
            report = _build_into(held.path, started, progress)
            search_store.switch(held.generation, directory)
        except BaseException:
            search_store.remove_generation(held.generation, directory)
            raise
        finally:
            held.release()
    search_store.retire_unused(directory)
    report.generation = held.generation
    return report


def _build_into(path: Path, started: float, progress: Progress | None) -> BuildReport:
    # A new file nobody reads until it is switched to: no journal, no syncs while writing.
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        db.executescript(_SCHEMA)
        # Changes from here on are replayed by the first catch-up: nothing falls between.
        position = workspace.changes_position()
        now_ns = time.time_ns()
        db.execute("BEGIN")
        files, entries, tokens = _fill(db, scan_all(), now_ns, progress)
        for table in fts_tables(db):  # one b-tree each (see compact)
            db.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")
        seconds = time.perf_counter() - started
        for key, value in (
            *_signature().items(),
            ("changes", f"{position[0]}:{position[1]}"),
            ("reconciled_ns", str(now_ns)),
            ("built_at", dt.datetime.now(dt.UTC).isoformat(timespec="seconds")),
            ("build_seconds", f"{seconds:.2f}"),
        ):
            db.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (key, value))
        db.execute("COMMIT")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return BuildReport(files, entries, tokens, seconds, path.stat().st_size)


# --- compaction ------------------------------------------------------------------------

# An FTS5 table is a set of b-trees (segments): each write adds one, and FTS5 merges them
# only four at a time on the same level. A query reads every one. At 10× an entries table
# built in one pass held 15–27 of them, and the every-agent search spent 17% less CPU on
# the same tables merged into one (docs/decisions.md, "Search"). So the build merges
# each table into one b-tree, and the keeper merges what writes add since (`compact`):
# with usermerge 2, any two b-trees of one level — the few small ones writes made, never
# the one large b-tree again until as much has been written — in steps of COMPACT_PAGES
# pages, each its own short write.
COMPACT_PAGES = 64


def _set_usermerge(db: sqlite3.Connection, table: str) -> None:
    db.execute(f"INSERT INTO {table}({table}, rank) VALUES('usermerge', 2)")


def fts_tables(db: sqlite3.Connection) -> list[str]:
    """The index's FTS5 tables: the entries of each scope, and the words (tokens_fts)."""
    scopes = db.execute("SELECT id FROM scopes ORDER BY id").fetchall()
    return ["tokens_fts", *(f"e{scope_id}" for (scope_id,) in scopes)]


def segments(db: sqlite3.Connection, table: str) -> int:
    """How many b-trees the FTS5 table holds (its shadow table %_idx names each one)."""
    return db.execute(f"SELECT count(DISTINCT segid) FROM {table}_idx").fetchone()[0]


def compact(index: Index, *, seconds: float) -> bool:
    """Merge the b-trees that writes added to the index's FTS5 tables, for about `seconds`
    at most. Whether some are left to merge (the next call goes on)."""
    db = index.db
    deadline = time.monotonic() + seconds
    for table in fts_tables(db):
        if segments(db, table) < 2:
            continue
        usermerge = db.execute(f"SELECT v FROM {table}_config WHERE k = 'usermerge'").fetchone()
        if usermerge is None or usermerge[0] != 2:  # a generation built before this rule
            _set_usermerge(db, table)
        while True:
            if time.monotonic() >= deadline:
                return True
            before = db.total_changes
            db.execute(f"INSERT INTO {table}({table}, rank) VALUES('merge', ?)", (COMPACT_PAGES,))
            if db.total_changes - before < 2:  # FTS5's word for "nothing left to merge"
                break
    return False


def from_files(
    scope_dirs: Iterable[str],
    *,
    found: dict[str, tuple[str, workspace.ScannedFile]] | None = None,
) -> Index:
    """An index of just these scopes built in memory from the files (`found`: their scan,
    when the caller made it), for one query while this host has no usable index (being
    built, or found broken): slower, the same hits."""
    if found is None:
        found = scan_all(set(scope_dirs))
    db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    db.executescript(_SCHEMA)
    db.execute("BEGIN")
    _fill(db, found, time.time_ns(), None)
    db.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", _signature().items())
    db.execute("COMMIT")
    return Index(db=db)


def _fill(
    db: sqlite3.Connection,
    found: dict[str, tuple[str, workspace.ScannedFile]],
    now_ns: int,
    progress: Progress | None,
) -> tuple[int, int, int]:
    """Index every file of `found` into an empty index, inside the caller's transaction.
    Returns (files, entries, distinct words)."""
    ordered = sorted(
        found.items(), key=lambda item: (rank_ns(item[0], item[1][0], item[1][1].mtime_ns), item[0])
    )
    scopes: dict[str, int] = {}
    token_ids: dict[str, int] = {}
    df: dict[tuple[int, int], int] = collections.Counter()
    scope_entries: dict[int, int] = collections.Counter()
    scope_words: dict[int, int] = collections.Counter()
    total_entries = 0
    # Newest first, so each table's rows go in in the order they are stored (FLIP − rowid
    # ascending): appended at the end of its b-trees, which leaves their pages full (in
    # rowid order, the files took 59% more room).
    for done, (position, (rel, (scope_dir, _scanned))) in enumerate(
        reversed(list(enumerate(ordered)))
    ):
        if progress is not None and done % PROGRESS_EVERY == 0:
            progress(done, len(ordered))
        read = workspace.read_keyed(rel)
        if read is None:
            continue
        original, key = read
        if scope_dir not in scopes:
            cursor = db.execute("INSERT INTO scopes(dir, entries) VALUES (?, 0)", (scope_dir,))
            scopes[scope_dir] = cursor.lastrowid
            _create_entries(db, cursor.lastrowid)
        scope_id = scopes[scope_dir]
        entries = entries_of(original, is_fact=scope_dir == USER_SCOPE_DIR, path=rel)[
            : ENTRY_MASK + 1
        ]
        slot = (position + 1) * SLOT_GAP
        base = slot << ENTRY_BITS
        rows = []
        for ordinal, entry in enumerate(entries):
            rows.append(
                (
                    stored(base | (ENTRY_MASK - ordinal)),
                    " ".join(entry.words),
                    " ".join(entry.context),
                    entry.first,
                    entry.last,
                    entry.heading,
                )
            )
            scope_words[scope_id] += len(entry.words)
            for token in entry.tokens:
                token_id = token_ids.get(token)
                if token_id is None:
                    token_id = token_ids[token] = len(token_ids) + 1
                df[(scope_id, token_id)] += 1
        db.executemany(
            f"INSERT INTO e{scope_id}(rowid, {COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
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
        "UPDATE scopes SET entries = ?, words = ? WHERE id = ?",
        ((n, scope_words[s], s) for s, n in scope_entries.items()),
    )
    if progress is not None:
        progress(len(ordered), len(ordered))
    return len(ordered), total_entries, len(token_ids)


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

# A query applies a change-log tail this long itself; a longer one (a large hand edit the
# keeper recorded) is the keeper's, in batches, while queries answer meanwhile.
INLINE_PATHS = 200
# Paths re-indexed in one write transaction, at most: no writer holds the index for longer
# than one batch, so a query's own catch-up never waits long (readers never wait: WAL).
# The first batch is BATCH_FIRST paths; one that took longer than BATCH_SECONDS halves the
# next (a loaded machine, big files), a quick one doubles it.
BATCH_PATHS = 200
BATCH_FIRST = 16
BATCH_SECONDS = 0.25
TAIL_LINES = 20_000  # at most this much of the log is read by a query at once
# Between two batches of a background catch-up, the lock is left free this long: SQLite's
# busy handler retries every 100 ms at most, so a query's own catch-up waiting for it gets
# its turn instead of waiting for the whole backlog.
YIELD_SECONDS = 0.11


def _parse_position(value: str | None) -> workspace.ChangesPosition:
    if not value:
        return (1, 0)
    number, offset = value.split(":")
    return (int(number), int(offset))


def _bound_ns() -> int:
    return int(float(settings.MEMORY_SEARCH_RECONCILE_SECONDS) * 1e9)


def catch_up(index: Index, *, scopes: Collection[str] | None = None) -> None:
    """Bring the index up to the files before a query (docs/decisions.md, "Search"):

    - the change log since this host last read it: every app write on any host, and every
      hand edit the keeper of a host saw — one row read and one open of the log's last
      segment when nothing is new. A short tail is applied here; a long one (thousands of
      files copied in by hand) is the keeper's, and this query applies only the latest
      changes of the scopes it reads (`scopes`), so an app write is in the very next query;
    - hand edits on a host with no live keeper: when the last reconcile is older than half
      of MEMORY_SEARCH_RECONCILE_SECONDS one starts in the background; older than the whole
      bound (the host was idle), this query runs it first.

    Never waits long: when the index stays busy past QUERY_BUSY_MS, the query answers from
    the index as it is (every hit is checked against its file). An index built in memory
    from the files is current already."""
    if index.in_memory:
        return
    kept = search_store.keeper_alive()
    try:
        _catch_up(index, scopes, kept)
    except sqlite3.OperationalError as exc:
        if is_broken(exc):
            raise
        logger.warning("search: the index stayed busy (%s); answering from it as it is", exc)


def _catch_up(index: Index, scopes: Collection[str] | None, kept: bool) -> None:
    if not kept:
        age = time.time_ns() - int(index.meta("reconciled_ns") or 0)
        if age >= _bound_ns():
            reconcile(index)
            return
    changes = workspace.changes_since(_parse_position(index.meta("changes")), limit=TAIL_LINES)
    if changes is None:
        if not kept:
            reconcile(index)  # the log no longer reaches back this far (the keeper does too)
        return
    paths = changes[0]
    if paths and (not kept or len(paths) <= INLINE_PATHS):
        apply_changes(index)
    elif paths:
        latest = [
            rel
            for rel in reversed(list(dict.fromkeys(paths)))
            if scopes is None or scope_of(rel) in scopes
        ]
        refresh_paths(index, latest[:INLINE_PATHS])
    if not kept:
        bound = _bound_ns()
        age = time.time_ns() - int(index.meta("reconciled_ns") or 0)
        if bound > 0 and age >= bound // 2:
            _start_background(search_store.store_dir())


def apply_changes(
    index: Index, *, budget_seconds: float | None = None, background: bool = False
) -> bool:
    """Apply the change log from where this index stopped, BATCH_PATHS paths per write
    transaction (`background`: leaving the lock free between batches for a moment).
    Returns whether it reached the log's end (not when the budget ran out)."""
    db = index.db
    started = time.monotonic()
    batch = _Batch()
    while True:
        if background and batch.done:
            time.sleep(YIELD_SECONDS)
        with batch:
            begin(index)
            try:
                # Another process may have read the log while we waited for the lock.
                changes = workspace.changes_since(
                    _parse_position(index.meta("changes")), limit=batch.size
                )
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
            reconcile(index, background=background)  # fell out of the log: every file
            return True
        if len(changes[0]) < batch.asked:
            return True
        if budget_seconds is not None and time.monotonic() - started > budget_seconds:
            return False


class _Batch:
    """How many paths the next write transaction takes (BATCH_PATHS at most), from how
    long the last one held the lock."""

    def __init__(self) -> None:
        self.size = self.asked = BATCH_FIRST  # grows while batches are quick
        self.done = 0
        self.started = 0.0

    def __enter__(self) -> _Batch:
        self.asked = self.size
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        took = time.monotonic() - self.started
        self.done += 1
        if took > BATCH_SECONDS:
            self.size = max(1, self.size // 2)
        elif took < BATCH_SECONDS / 4:
            self.size = min(BATCH_PATHS, self.size * 2)


def refresh_paths(index: Index, paths: list[str], *, background: bool = False) -> None:
    """Re-index these paths, BATCH_PATHS per write transaction (the log's position stays:
    the keeper's pass over them later finds them current)."""
    db = index.db
    batch = _Batch()
    start = 0
    while start < len(paths):
        if background and batch.done:
            time.sleep(YIELD_SECONDS)
        with batch:
            begin(index)
            try:
                for rel in paths[start : start + batch.asked]:
                    refresh(index, rel)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        start += batch.asked


def begin(index: Index) -> None:
    """BEGIN IMMEDIATE, waiting for another writer at most the connection's busy time —
    asked for every 10 ms, so the moment a background catch-up leaves the lock free
    between two batches (YIELD_SECONDS) is never missed (SQLite's own busy handler sleeps
    up to 100 ms between tries). sqlite3.OperationalError when it stayed busy."""
    deadline = time.monotonic() + index.busy_ms / 1000
    index.db.execute("PRAGMA busy_timeout = 10")
    try:
        while True:
            try:
                index.db.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if is_broken(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)
    finally:
        index.db.execute(f"PRAGMA busy_timeout = {int(index.busy_ms)}")


def _advance(index: Index, position: workspace.ChangesPosition) -> None:
    if _parse_position(index.meta("changes")) < position:
        index.set_meta("changes", f"{position[0]}:{position[1]}")


def reconcile(index: Index, *, claim: bool = False, background: bool = False) -> bool:
    """Stat every searched file against the key it was indexed at; re-index the changed,
    new and racy ones and drop the gone ones. The stat of every file runs outside the write
    lock (queries and app writes go on meanwhile); the changes found are re-indexed
    BATCH_PATHS per write transaction, so nobody waits for a large catch-up. With `claim`,
    skip when another process of this host is already at it (background runs).
    Returns whether it ran."""
    db = index.db
    started_ns = time.time_ns()
    if claim:
        begin(index)
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
    # refresh compares again under the lock: never undoes a newer write.
    refresh_paths(index, changed_files(index), background=background)
    begin(index)
    try:
        if int(index.meta("reconciled_ns") or 0) < started_ns:
            index.set_meta("reconciled_ns", started_ns)
        _advance(index, target)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return True


def changed_files(index: Index) -> list[str]:
    """The searched files whose stat differs from the key they were indexed at (or that
    are racy), new ones and gone ones: one stat of every file, no read, no lock."""
    indexed = {
        row[0]: row[1:]
        for row in index.db.execute("SELECT path, size, mtime_ns, ctime_ns, ino, racy FROM files")
    }
    changed = []
    for rel, (_scope_dir, scanned) in scan_all().items():
        known = indexed.pop(rel, None)
        if known is None or known[4] or tuple(known[:4]) != tuple(scanned[2:]):
            changed.append(rel)
    return changed + list(indexed)  # gone


def indexed_key(index: Index, rel: str) -> tuple[int, int, int, int] | None:
    """The key (size, mtime_ns, ctime_ns, inode) `rel` was indexed at; None when it is not
    indexed or racy (then only a read can tell)."""
    row = index.db.execute(
        "SELECT size, mtime_ns, ctime_ns, ino, racy FROM files WHERE path = ?", (rel,)
    ).fetchone()
    return None if row is None or row[4] else tuple(row[:4])


_background: dict[Path, threading.Thread] = {}
_background_lock = threading.Lock()


def _start_background(directory: Path) -> None:
    root = str(workspace.root())
    with _background_lock:
        if directory in _background:
            return
        thread = threading.Thread(
            target=_background_reconcile,
            args=(directory, root),
            name="search-reconcile",
            daemon=True,
        )
        _background[directory] = thread
    thread.start()


def _background_reconcile(directory: Path, root: str) -> None:
    try:
        if str(workspace.root()) != root:
            return
        index = open_current(busy_ms=KEEPER_BUSY_MS)
        try:
            reconcile(index, claim=True, background=True)
        finally:
            index.close()
    except IndexMissing:
        pass
    except Exception:  # noqa: BLE001 — a query will run it itself once the bound is reached
        logger.exception("search: the background reconcile failed")
    finally:
        with _background_lock:
            _background.pop(directory, None)


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
    decides whether a memory.md beside it is searched: that one is looked at again too; a
    USER.md that appears or goes may change which file is USER.md (facts.user_path): the
    other places it may be are looked at again too."""
    _refresh_one(index, rel)
    pair = _memory_pair(rel)
    if pair is not None and rel == pair[0]:
        _refresh_one(index, pair[1])
    candidates = user_file_candidates()
    if rel in candidates:
        for other in candidates:
            if other != rel:
                _refresh_one(index, other)


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
    entries = entries_of(original, is_fact=scope_dir == USER_SCOPE_DIR, path=rel)[: ENTRY_MASK + 1]
    _insert_entries(index, scope_id, table, slot, 0, entries)
    _insert_file(db, rel, scope_id, slot, scope_dir, key, original, len(entries), now_ns)


def _insert_entries(index, scope_id, table, slot, first_ordinal, entries) -> None:
    base = slot << ENTRY_BITS
    index.db.executemany(
        f"INSERT INTO {table}(rowid, {COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
        (
            (
                stored(base | (ENTRY_MASK - ordinal)),
                " ".join(e.words),
                " ".join(e.context),
                e.first,
                e.last,
                e.heading,
            )
            for ordinal, e in enumerate(entries, start=first_ordinal)
        ),
    )
    _count_tokens(index, scope_id, (e.tokens for e in entries), +1)
    index.db.execute(
        "UPDATE scopes SET entries = entries + ?, words = words + ? WHERE id = ?",
        (len(entries), sum(len(e.words) for e in entries), scope_id),
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
    # The file's last entry indexed: its lowest rowid, the highest stored id.
    last = db.execute(
        f"SELECT {FLIP} - rowid, first FROM {table} WHERE rowid BETWEEN ? AND ? "
        "ORDER BY rowid DESC LIMIT 1",
        stored_range(low, low | ENTRY_MASK),
    ).fetchone()
    if last is None:
        return False
    ordinal = ENTRY_MASK - (last[0] & ENTRY_MASK)
    dropped = [
        (words.split(), context.split())
        for words, context in db.execute(
            f"SELECT words, context FROM {table} WHERE rowid BETWEEN ? AND ?",
            stored_range(low, last[0]),
        )
    ]
    db.execute(f"DELETE FROM {table} WHERE rowid BETWEEN ? AND ?", stored_range(low, last[0]))
    _uncount(index, scope_id, dropped)
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
    ids = stored_range(slot << ENTRY_BITS, (slot << ENTRY_BITS) | ENTRY_MASK)
    old = [
        (words.split(), context.split())
        for words, context in index.db.execute(
            f"SELECT words, context FROM {table} WHERE rowid BETWEEN ? AND ?", ids
        )
    ]
    index.db.execute(f"DELETE FROM {table} WHERE rowid BETWEEN ? AND ?", ids)
    _uncount(index, scope_id, old)


def _uncount(index: Index, scope_id: int, removed: list[tuple[list[str], list[str]]]) -> None:
    """Take removed entries (their words, with repeats, and context) out of the counts."""
    _count_tokens(index, scope_id, (_distinct(words + context) for words, context in removed), -1)
    index.db.execute(
        "UPDATE scopes SET entries = entries - ?, words = words - ? WHERE id = ?",
        (len(removed), sum(len(words) for words, _context in removed), scope_id),
    )


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
    ids = stored_range(old_slot << ENTRY_BITS, (old_slot << ENTRY_BITS) | ENTRY_MASK)
    delta = (new_slot - old_slot) << ENTRY_BITS
    rows = index.db.execute(
        f"SELECT rowid, {COLUMNS} FROM {table} WHERE rowid BETWEEN ? AND ?", ids
    ).fetchall()
    index.db.execute(f"DELETE FROM {table} WHERE rowid BETWEEN ? AND ?", ids)
    index.db.executemany(
        f"INSERT INTO {table}(rowid, {COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
        ((stored_id - delta, *rest) for stored_id, *rest in rows),  # rowid + delta
    )
