"""memory_search (SPEC §6.1) and the search across scopes of the API (§6.2).

Plain words, ranked, explainable — the rules (docs/decisions.md, "Search"):

- Query and text are compared folded (`memory.text.fold`); the query is split into words
  once, where it comes in (`memory.query.Query`: each word with the rule it matches by).
  A word of four or more characters matches the words it starts (`sach` in `sachs`), and
  inside a longer word only when no entry of the scope holds it at a word's start (`rent`
  in `current`); a shorter one only whole (`doc` is not in `docs`); a run of Han, Kana or
  Hangul anywhere at any length (`心跳`). At most MAX_FORMS words of the text, of the
  scopes searched only.
- An entry is a block of lines (`memory.text.blocks`: a paragraph, or a list item with its
  continuation lines, capped) of MEMORY.md or any `.md` below the agent's `memory/` — the
  wiki's machine block left out — or one fact (description and body together).
- Each query word weighs by how rare it is in the scope: BM25's idf of the number of
  entries holding it, in thousandths (`weight`). So "what", "is", "the" count little.
- Ranked in two steps: a pool chosen by rarity (entries holding every word first, then
  by the weights of the words they hold — an entry missing a word is ranked lower, never
  dropped), then scored by memory.ranking (term frequency, length, heading, pairs,
  dates, the entry before).
- Ties: newer first (a dated note by its day, any other file by its mtime; then path
  descending), then line order.
- Every hit says where and when: `[path:line]` or `[path:Lfirst-Llast]`, the note's date
  and the heading the entry sits under.

How it is fast: the entries of every file are kept in this host's search index
(memory.search_index), which every query first brings up to date from the change log (app
writes, and the hand edits the host's keeper saw: memory.search_keeper). Before returning,
every hit's file is read again and checked against what was indexed, so no hit is ever a
line that is no longer in the file (a stale file is re-indexed and the query run again).
While the host has no usable index (the first start, one found broken), the same query
runs on an index of just its scopes built from the files: slower, the same hits.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import heapq
import itertools
import sqlite3
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field

from memory import ranking, search_index, search_keeper, workspace
from memory import text as text_rules
from memory.agents import get_agent_or_404
from memory.errors import InvalidInput
from memory.models import Agent
from memory.query import INSIDE, WHOLE, Query, QueryWord, as_query

DEFAULT_LIMIT = 12
MAX_LIMIT = 100
TEXT_CHARS = 700
USER_SCOPE = "user"
FACTS_DIR = search_index.FACTS_DIR
# A query word found in more entries than this is not fetched whole when the rarer words
# leave room: entries holding only such words are walked by the subsets of them instead.
FETCH_ROWS = 3000
MAX_SUBSET_WORDS = 12
# A query word of at most this many forms is looked for in an entry's text (_holds).
FEW_FORMS = 8
BATCH = 32  # entries read at once while the common words' part of their weight is looked up
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass
class Hit:
    """One entry found. `line` and `end_line` are 1-based (the same for a one-line entry);
    None for a fact (a fact is one entry). `path` is relative to the agent dir for agent
    files, `users/owner/facts/<name>.md` for facts, the workspace path of USER.md for its
    entries (the owner's search window only, SPEC §6.2). `score` is the number of query words
    the entry holds; `weight` what they weigh together (how it ranked). `date` is the day
    of a dated note (ISO), `heading` the heading line the entry sits under."""

    scope: str  # "user" or "agent:<id>"
    agent: str | None
    path: str
    line: int | None
    text: str
    score: int
    end_line: int | None = None
    date: str | None = None
    heading: str | None = None
    weight: float = 0.0
    matched: list[str] = field(default_factory=list, repr=False)
    rank: int = field(default=0, repr=False, compare=False)  # the index row: higher is newer


@dataclass
class WordWeight:
    """How one query word counted (the explain mode)."""

    word: str
    rule: str  # "whole" (three characters or fewer), "inside", or "anywhere" (Han/Kana/Hangul)
    entries: int  # how many entries of the scope hold it (a word holding it, once each)
    weight: float
    forms: list[str]  # the words of the text it matched (first 20), of the scope only
    capped: bool = False  # it matched more than MAX_FORMS words: the closest were used
    # rule "inside": counted inside longer words, as no entry holds a word it starts (else
    # only the words it starts, itself included)
    inside: bool = False


@dataclass
class Explained:
    entries: int  # entries in the scope
    words: list[WordWeight]


def clear_cache() -> None:
    """Close this thread's connections to the index: the next query opens it again, as a
    new process would (the index itself stays, it is not memory)."""
    search_index.forget_connections()


# --- the query -----------------------------------------------------------------------


@dataclass
class _Word:
    word: str
    tokens: list[str]  # the words of the text it counts (SPEC §6.1 word rules)
    token_ids: list[int]
    df: int = 0
    weight: int = 0  # thousandths
    token_set: frozenset[str] = frozenset()
    inside: bool = False  # counted inside longer words: no entry holds it at a word's start
    capped: bool = False  # more words of the text matched than MAX_FORMS
    # Its tokens each between spaces, when at most FEW_FORMS: looked for in an entry's text
    padded: tuple[str, ...] | None = None

    @property
    def expr(self) -> str:
        return "(" + " OR ".join(f'"{token}"' for token in self.tokens) + ")"


# The search's budget (SPEC §6.1): a query word matches at most this many words of the
# text — of the scopes searched only. One agent's file of 30,000 words sharing a substring
# made every search expand to all of them (60–90 s each, for every agent); now another
# agent's words are never looked at, and the searcher's own are cut to the closest ones.
MAX_FORMS = 200
# Past this many words of the whole index holding a query word, its forms are looked for
# among the searched scopes' own words rather than through the index of every word.
CANDIDATES = 2000


# The closest forms first: the word itself, then words it starts, then the shortest (the
# fewest letters around it), then in order. Sorted by SQLite, in C and outside the GIL, so
# a search with many forms does not hold up the other threads of its process.
_CLOSEST = "ORDER BY t.token <> ?, substr(t.token, 1, ?) <> ?, length(t.token), t.token LIMIT ?"


def _few_candidates(db, word: str) -> bool:
    """Whether at most CANDIDATES words of the whole index hold `word` (a bounded probe of
    the trigram index)."""
    found = db.execute(
        "SELECT count(*) FROM (SELECT rowid FROM tokens_fts WHERE tokens_fts MATCH ? LIMIT ?)",
        (f'"{word}"', CANDIDATES + 1),
    ).fetchone()[0]
    return found <= CANDIDATES


def _expand(
    index: search_index.Index, query_word: QueryWord, scope_ids: list[int]
) -> tuple[list[str], list[int], bool]:
    """The words of the text a query word matches (SPEC §6.1 word rules) that stand in at
    least one of the scopes `scope_ids` — never a word only another scope holds — at most
    MAX_FORMS of them, the closest first; and whether any were left out."""
    db = index.db
    word = query_word.text
    if not scope_ids:
        return [], [], False
    marks = ",".join("?" * len(scope_ids))
    in_scope = f"EXISTS (SELECT 1 FROM df WHERE df.token = t.id AND df.scope IN ({marks}))"
    closest = (word, len(word), word, MAX_FORMS + 1)
    if query_word.rule == WHOLE:
        rows = db.execute(
            f"SELECT t.token, t.id FROM tokens t WHERE t.token = ? AND {in_scope}",
            (word, *scope_ids),
        ).fetchall()
    elif len(word) >= 3 and _few_candidates(db, word):
        rows = db.execute(
            "SELECT t.token, t.id FROM tokens_fts f JOIN tokens t ON t.id = f.rowid "
            f"WHERE tokens_fts MATCH ? AND instr(t.token, ?) > 0 AND {in_scope} {_CLOSEST}",
            (f'"{word}"', word, *scope_ids, *closest),
        ).fetchall()
    elif len(word) >= 3:
        # Many words of the whole index hold it (someone's file of 30,000 such words):
        # look through the searched scopes' own words instead, so the cost is theirs.
        rows = db.execute(
            f"SELECT t.token, t.id FROM df JOIN tokens t ON t.id = df.token "
            f"WHERE df.scope IN ({marks}) AND instr(t.token, ?) > 0 GROUP BY t.id {_CLOSEST}",
            (*scope_ids, word, *closest),
        ).fetchall()
    else:  # one or two characters of Han, Kana or Hangul
        rows = db.execute(
            f"SELECT t.token, t.id FROM tokens t WHERE t.spaceless AND instr(t.token, ?) > 0 "
            f"AND {in_scope} {_CLOSEST}",
            (word, *scope_ids, *closest),
        ).fetchall()
    capped = len(rows) > MAX_FORMS
    rows = rows[:MAX_FORMS]
    return [row[0] for row in rows], [row[1] for row in rows], capped


def weight(df: int, entries: int) -> int:
    """A word's weight in thousandths: BM25's idf, ln(1 + (N − df + ½) / (df + ½))."""
    return int(ranking.idf(df, entries))


def _df(db, scope_ids: list[int], ids: list[int]) -> int:
    """In how many entries of the scopes the words `ids` stand, added up per word."""
    if not scope_ids:
        return 0
    marks = ",".join("?" * len(scope_ids))
    df = 0
    for start in range(0, len(ids), 400):
        chunk = ids[start : start + 400]
        df += db.execute(
            f"SELECT coalesce(sum(n), 0) FROM df WHERE scope IN ({marks}) "
            f"AND token IN ({','.join('?' * len(chunk))})",
            [*scope_ids, *chunk],
        ).fetchone()[0]
    return df


def _weigh(
    index: search_index.Index, query: Query, scope_ids: list[int]
) -> tuple[list[_Word], int]:
    """The query's words with the words of the text each counts and its
    weight over the scopes `scope_ids`; and how many entries those scopes hold.

    A word of four or more letters counts the words it starts (and itself) when some
    entry of the scopes holds one; only when none does, the longer words it stands inside
    (`rent` in `current`), SPEC §6.1."""
    db = index.db
    marks = ",".join("?" * len(scope_ids))
    total = 0
    if scope_ids:
        total = db.execute(
            f"SELECT coalesce(sum(entries), 0) FROM scopes WHERE id IN ({marks})", scope_ids
        ).fetchone()[0]
    parsed = []
    for query_word in query.words:
        tokens, ids, capped = _expand(index, query_word, scope_ids)
        inside = False
        if query_word.rule == INSIDE:
            starts = [i for i, token in enumerate(tokens) if token.startswith(query_word.text)]
            start_ids = [ids[i] for i in starts]
            if starts and _df(db, scope_ids, start_ids):
                tokens, ids = [tokens[i] for i in starts], start_ids
                capped = capped and len(tokens) >= MAX_FORMS  # the closest come first
            else:
                inside = bool(tokens)
        df = _df(db, scope_ids, ids)
        parsed.append(
            _Word(
                query_word.text,
                tokens,
                ids,
                df,
                weight(df, total),
                frozenset(tokens),
                inside,
                capped,
                tuple(f" {token} " for token in tokens) if len(tokens) <= FEW_FORMS else None,
            )
        )
    return parsed, total


@dataclass(slots=True)
class _Row:
    rowid: int
    table: str
    first: int
    last: int
    heading: str
    weight: int  # phase one: the weights of the query words it holds, added up
    matched: tuple[int, ...]  # indexes into the query's words
    pool: int = 0  # which pool of the search it was found for
    # Its folded words and its heading's, each joined by spaces, once read (search_index
    # STORED); None for an entry only weighed by SQLite so far.
    text: str | None = None
    context_text: str = ""
    score: float = 0.0  # its score (memory.ranking), once scored

    @property
    def words(self) -> list[str]:
        """Its folded words, in order (split when scored: most rows read never are)."""
        return self.text.split() if self.text else []

    @property
    def context(self) -> list[str]:
        """The folded words of the heading it sits under."""
        return self.context_text.split()


def _score(words: list[_Word], tokens: Collection[str]) -> tuple[int, tuple[int, ...]]:
    matched: list[int] = []
    total = 0
    for i, word in enumerate(words):
        if not word.token_set.isdisjoint(tokens):
            matched.append(i)
            total += word.weight
    return total, tuple(matched)


def _holds(words: list[_Word], text: str) -> tuple[int, tuple[int, ...]]:
    """_score of an entry given as its words joined by spaces. A query word of few forms
    is looked for in the text, in C (a token holds no space, so ` form ` is only ever a
    whole word); one of many, in the set of its words."""
    padded = f" {text} "
    tokens: set[str] | None = None
    matched: list[int] = []
    total = 0
    for i, word in enumerate(words):
        if word.padded is not None:
            for form in word.padded:
                if form in padded:
                    break
            else:
                continue
        else:
            if tokens is None:
                tokens = set(text.split())
            if word.token_set.isdisjoint(tokens):
                continue
        matched.append(i)
        total += word.weight
    return total, tuple(matched)


def _within(clause: tuple[int, int] | None) -> tuple[str, list[int]]:
    if clause is None:
        return "", []
    return " AND rowid BETWEEN ? AND ?", list(search_index.stored_range(*clause))


def _newest_matching(table: str, extra: str) -> str:
    """The newest rows of `table` that MATCH (and `extra`), up to a LIMIT: their row ids found
    by the FTS5 table (stored newest first, search_index.FLIP), their columns read from its
    content (search_index.STORED)."""
    return (
        f"SELECT {search_index.STORED} FROM {table}_content WHERE id IN (SELECT rowid FROM "
        f"{table} WHERE {table} MATCH ?{extra} ORDER BY rowid LIMIT ?)"
    )


def _full(db, tables, words: list[_Word], limit: int, within=None) -> list[_Row]:
    """Entries holding every word, newest first."""
    if not words or any(not word.tokens for word in words):
        return []
    expr = " AND ".join(word.expr for word in words)
    extra, bounds = _within(within)
    # Each holds every word: MATCH found them by the words _holds would look for.
    holds = (sum(word.weight for word in words), tuple(range(len(words))))
    rows: list[_Row] = []
    for table in tables:
        for stored in db.execute(_newest_matching(table, extra), (expr, *bounds, limit)):
            rows.append(_row(table, stored, words, holds))
    rows.sort(key=lambda row: row.rowid, reverse=True)
    return rows[:limit]


def _best(found: dict[tuple[str, int], _Row], limit: int) -> list[_Row]:
    return heapq.nlargest(limit, found.values(), key=lambda row: (row.weight, row.rowid))


def _kth(found: dict[tuple[str, int], _Row], limit: int) -> int | None:
    if len(found) < limit:
        return None
    return _best(found, limit)[-1].weight


def _weighed(db, table: str, words: list[_Word], which: list[int], within) -> sqlite3.Cursor:
    """(row id, the weights of the words `which` it holds, added up) of every entry of
    `table` holding one, heaviest first, newer first among equals: counted by SQLite."""
    extra, bounds = _within(within)
    parts, params = [], []
    for index in which:
        parts.append(
            f"SELECT {search_index.FLIP} - rowid AS r, ? AS w FROM {table} "
            f"WHERE {table} MATCH ?{extra}"
        )
        params += [words[index].weight, words[index].expr, *bounds]
    return db.execute(
        f"SELECT r, sum(w) AS total FROM ({' UNION ALL '.join(parts)}) GROUP BY r "
        "ORDER BY total DESC, r DESC",
        params,
    )


def _partial(db, tables, words: list[_Word], limit: int, within=None) -> list[_Row]:
    """The best `limit` entries by the weights of the words they hold, exactly.

    The entries of every word found in at most FETCH_ROWS entries are weighed by SQLite,
    heaviest first. When more common words remain, those entries are completed (their
    words read) until the common words could not lift the next one past the limit-th; and
    entries holding only common words are walked by subset of those words, heaviest
    subset first, each subset's newest entries only (`NOT` the other words), until no
    lighter subset can."""
    order = sorted(
        (i for i, word in enumerate(words) if word.tokens), key=lambda i: (-words[i].weight, i)
    )
    split = len(order)
    for position, index in enumerate(order):
        if words[index].df > FETCH_ROWS and len(order) - position <= MAX_SUBSET_WORDS:
            split = position
            break
    fetched, common = order[:split], order[split:]
    found: dict[tuple[str, int], _Row] = {}
    rest = sum(words[i].weight for i in common)
    weights: list[int] = []  # the heaviest `limit` weights so far (a heap: its least first)
    for table in tables if fetched else ():
        taken = 0
        batch: list[int] = []
        for rowid, total in _weighed(db, table, words, fetched, within):
            if not common:
                if taken >= limit:
                    break  # heaviest first: the first `limit` of each table are its best
                taken += 1
                found[(table, rowid)] = _Row(rowid, table, -1, -1, "", total, ())
                continue
            if len(weights) >= limit and total + rest < weights[0]:
                break
            batch.append(rowid)
            if len(batch) >= BATCH:  # read a batch at once: its rows' words say their weight
                _add_read(db, table, batch, words, found, weights, limit)
                batch = []
        _add_read(db, table, batch, words, found, weights, limit)
    if common:
        _walk_subsets(db, tables, words, fetched, common, found, limit, within)
    return _best(found, limit)  # rows weighed by SQLite alone are read in phase two


def _add_read(db, table, rowids, words, found, weights, limit) -> None:
    for key, row in _load(db, [(table, rowid) for rowid in rowids], words).items():
        found[key] = row
        heapq.heappush(weights, row.weight)
        if len(weights) > limit:
            heapq.heappop(weights)


def _walk_subsets(db, tables, words, fetched, rest_words, found, limit, within) -> None:
    subsets = []
    for size in range(1, len(rest_words) + 1):
        for subset in itertools.combinations(rest_words, size):
            subsets.append((sum(words[i].weight for i in subset), subset))
    subsets.sort(key=lambda item: -item[0])
    extra, bounds = _within(within)
    for total, subset in subsets:
        kth = _kth(found, limit)
        if kth is not None and kth > total:
            return
        excluded = [i for i in rest_words if i not in subset] + fetched
        expr = "(" + " AND ".join(words[i].expr for i in subset) + ")"
        if excluded:
            expr += " NOT (" + " OR ".join(words[i].expr for i in excluded) + ")"
        for table in tables:
            for stored in db.execute(_newest_matching(table, extra), (expr, *bounds, limit)):
                found[(table, stored[0])] = _row(table, stored, words)


def _by_rarity(db, tables, words: list[_Word], limit: int, within=None) -> list[_Row]:
    """Phase one (SPEC §6.1): the best `limit` entries by the weights of the query words
    they hold, added up — every word first —, newer first among equals. An entry missing
    a word is never dropped for it, only ranked lower."""
    rows = _full(db, tables, words, limit, within)
    if len(rows) < limit and len(words) > 1:
        rows = _partial(db, tables, words, limit, within)
    return rows


def _newest(db, tables, limit: int, within: tuple[int, int]) -> list[_Row]:
    """The newest `limit` entries of a range of rows, whatever words they hold."""
    rows = []
    for table in tables:
        for stored in db.execute(
            f"SELECT {search_index.STORED} FROM {table}_content "
            "WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?",
            (*search_index.stored_range(*within), limit),
        ):
            rows.append(_row(table, stored, []))
    rows.sort(key=lambda row: row.rowid, reverse=True)
    return rows[:limit]


# --- from rows to hits, checked against the files -------------------------------------


@dataclass
class _Pool:
    scope: str  # "user" or "agent:<id>"
    agent_id: str | None
    dirs: list[str]  # scope dirs searched together
    tables: list[str] = field(default_factory=list)
    scope_ids: list[int] = field(default_factory=list)
    table_dirs: dict[str, str] = field(default_factory=dict)
    table_scopes: dict[str, tuple[str, str | None]] = field(default_factory=dict)


def _agent_pool(agent: Agent, *, include_user: bool) -> _Pool:
    # The agent's files and the extra paths (MEMORY_EXTRA_PATHS: read by every agent).
    pool = _Pool(f"agent:{agent.id}", agent.id, [agent.dir, search_index.EXTRA_SCOPE_DIR])
    if include_user:
        pool.dirs.append(search_index.USER_SCOPE_DIR)
    return pool


def _open_pool(index: search_index.Index, pool: _Pool) -> _Pool:
    for scope_dir in pool.dirs:
        known = index.scope(scope_dir)
        if known is None:
            continue
        scope_id, table = known
        pool.tables.append(table)
        pool.scope_ids.append(scope_id)
        pool.table_dirs[table] = scope_dir
        if scope_dir in (search_index.USER_SCOPE_DIR, search_index.USER_FILE_SCOPE_DIR):
            pool.table_scopes[table] = (USER_SCOPE, None)
        else:
            pool.table_scopes[table] = (pool.scope, pool.agent_id)
    return pool


def _shown_date(day: dt.date | None) -> str | None:
    return None if day is None else day.isoformat()


class _Stale(Exception):
    def __init__(self, paths: set[str]) -> None:
        self.paths = paths


def _hits(
    index: search_index.Index, pools: list[_Pool], rows: list[_Row], words: list[_Word]
) -> list[Hit]:
    """Hits for index rows, each checked against its file as it is now. Raises _Stale with
    the files that no longer match what was indexed."""
    if not rows:
        return []
    db = index.db
    slots = sorted({row.rowid >> search_index.ENTRY_BITS for row in rows})
    files = {
        slot: (path, size, mtime_ns, ctime_ns, ino, racy, content_hash)
        for slot, path, size, mtime_ns, ctime_ns, ino, racy, content_hash in db.execute(
            "SELECT slot, path, size, mtime_ns, ctime_ns, ino, racy, hash FROM files "
            f"WHERE slot IN ({','.join('?' * len(slots))})",
            slots,
        )
    }
    texts: dict[int, str] = {}
    stale: set[str] = set()
    if len(files) < len(slots):  # a file re-indexed meanwhile by another process: ask again
        raise _Stale(set())
    reads = workspace.read_keyed_many([known[0] for known in files.values()])
    for slot in slots:
        path, *key, racy, content_hash = files[slot]
        read = reads[path]
        if read is None or tuple(read[1]) != tuple(key[:4]):
            stale.add(path)
            continue
        if racy and search_index.hash_text(read[0]) != content_hash:
            stale.add(path)
            continue
        texts[slot] = read[0]
    if stale:
        raise _Stale(stale)
    hits = []
    lines_of: dict[int, list[str]] = {}  # a file's lines, split once for all its hits
    for row in rows:
        slot = row.rowid >> search_index.ENTRY_BITS
        path = files[slot][0]
        original = texts[slot]
        scope_dir = pools[row.pool].table_dirs[row.table]
        scope, agent_id = pools[row.pool].table_scopes[row.table]
        is_fact = scope_dir == search_index.USER_SCOPE_DIR
        if is_fact:
            entry = search_index.entries_of(original, is_fact=True, with_text=True, path=path)[0]
            shown, first, last, heading = entry.text, None, None, None
            tokens = set(entry.tokens)
        else:
            if slot not in lines_of:
                lines_of[slot] = original.split("\n")
            block = lines_of[slot][row.first : row.last + 1]
            shown = " ".join(line.strip() for line in block if line.strip())
            tokens = set(search_index._find_words(text_rules.fold("\n".join(block))))
            tokens.update(row.context)
            first, last = row.first + 1, row.last + 1
            heading = row.heading or None
        # What the index said this entry holds, said again by the file as it is now.
        if _score(words, tokens)[1] != tuple(i for i in row.matched):
            raise _Stale({path})
        day = search_index.note_day(path, scope_dir)
        if heading and day is not None and heading.lstrip("#").strip() == day.isoformat():
            heading = None  # the note's own date heading says nothing the date does not
        hits.append(
            Hit(
                scope=scope,
                agent=agent_id,
                path=search_index.shown_path(path, scope_dir),
                line=first,
                text=text_rules.cap(shown, TEXT_CHARS),
                score=len(row.matched),
                end_line=last,
                date=_shown_date(day),
                heading=heading,
                weight=ranking.shown(row.score),
                matched=[words[i].word for i in row.matched],
                rank=row.rowid,
            )
        )
    return hits


def _refresh(index: search_index.Index, paths: Iterable[str]) -> None:
    search_index.refresh_paths(index, list(paths))


_ALL = slice(None)


def _run(
    query: Query,
    pools: list[_Pool],
    limit: int,
    *,
    merge: bool,
    shown: slice = _ALL,
    count_up_to: int | None = None,
) -> tuple[list[Hit], int]:
    """The best `limit` hits (SPEC §6.1): of the one pool, or (merge) of every pool ranked
    on its own and interleaved by rank (§6.2), words weighed across the pools; and how
    many were found: the rows ranked (at most `limit`), or with `count_up_to` the entries
    that match, counted by the index up to that many. Only the rows `shown` (all of them
    by default: a page of a window) are read back from their files and returned. On this
    host's index, or — while there is none usable — on one built from the files
    (search_keeper.with_index)."""

    def run(index: search_index.Index) -> tuple[list[Hit], int]:
        opened = [_open_pool(index, _fresh(pool)) for pool in pools]
        for attempt in range(4):
            try:
                with _snapshot(index.db):
                    rows, words = _select(index, query, opened, limit)
                    kept = _interleave_rows(rows, limit) if merge else rows[0][:limit]
                    if count_up_to is None:
                        found = len(kept)
                    else:
                        found = _count(index.db, opened, words, count_up_to)
                    return _hits(index, opened, kept[shown], words), found
            except _Stale as stale:
                if attempt == 3:
                    raise RuntimeError(
                        f"search: files keep changing under it: {stale.paths}"
                    ) from None
                _refresh(index, stale.paths)
        raise AssertionError("unreachable")

    return search_keeper.with_index(_scope_dirs(pools), run)


@contextlib.contextmanager
def _snapshot(db: sqlite3.Connection) -> Iterator[None]:
    """One read transaction for a query's statements: every pool is ranked, counted and
    checked against the index as it stood at the first (and a statement costs no
    transaction of its own)."""
    if db.in_transaction:
        yield
        return
    db.execute("BEGIN")
    try:
        yield
    except BaseException:
        # Let go of the snapshot without hiding why the query stopped (a damaged index
        # must still be reported as one).
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _fresh(pool: _Pool) -> _Pool:
    """The pool with nothing opened yet (each index has its own tables)."""
    return _Pool(pool.scope, pool.agent_id, list(pool.dirs))


def _scope_dirs(pools: list[_Pool]) -> set[str]:
    return {scope_dir for pool in pools for scope_dir in pool.dirs}


@dataclass
class _Context:
    """What scoring a row needs, the same for every pool of one search."""

    words: list[_Word]
    forms: dict[str, tuple[int, ...]]  # a word of the text → the query words it counts for
    weights: list[float]
    pairs: tuple[tuple[int, int], ...]
    average: float  # mean words per entry over the scopes searched
    date_slots: set[int] = field(default_factory=set)  # files of the days the query names
    date_weight: int = 0


def _context(index: search_index.Index, query: Query, scope_ids: list[int]) -> _Context:
    words, _total = _weigh(index, query, scope_ids)
    forms: dict[str, tuple[int, ...]] = {}
    for number, word in enumerate(words):
        for token in word.tokens:
            forms[token] = (*forms.get(token, ()), number)
    average = 0.0
    if scope_ids:
        marks = ",".join("?" * len(scope_ids))
        count, entries = index.db.execute(
            f"SELECT coalesce(sum(words), 0), coalesce(sum(entries), 0) FROM scopes "
            f"WHERE id IN ({marks})",
            scope_ids,
        ).fetchone()
        average = count / entries if entries else 0.0
    pairs = ranking.pairs_of(query.sequence, [word.word for word in words])
    weights = [float(word.weight) for word in words]
    return _Context(words, forms, weights, pairs, average)


def _day_rank(day: dt.date) -> int:
    """The rank (search_index.rank_ns) of the notes of `day`."""
    return search_index.rank_ns(f"memory/{day.isoformat()}.md", "", 0)


def _concrete(spans, low_ns: int, high_ns: int) -> list[tuple[dt.date, dt.date, object]]:
    """Each span as (first day, last day, span): a month or day of any year once per year
    from the year of `low_ns` to that of `high_ns` (the scope's oldest and newest files)."""
    found = []
    for span in spans:
        if span.first is not None and span.last is not None:
            found.append((span.first, span.last, span))
            continue
        low = dt.datetime.fromtimestamp(low_ns / 1e9, dt.UTC).year - 1
        high = dt.datetime.fromtimestamp(high_ns / 1e9, dt.UTC).year + 1
        for year in range(max(low, 1900), min(high, 2199) + 1):
            first = dt.date(year, span.month, span.day or 1)
            if span.day is not None:
                last = first
            else:
                following = dt.date(year + (span.month == 12), span.month % 12 + 1, 1)
                last = following - dt.timedelta(days=1)
            found.append((first, last, span))
    return found


def _date_ranges(index, pool: _Pool, query: Query) -> tuple[dict, set[int]]:
    """The rows of the notes of the days the query names, per table of the pool: ranges
    of row ids, each a run of such notes with no other file of the scope between them;
    and those notes' slots."""
    db = index.db
    found: dict[str, list[tuple[int, int]]] = {}
    slots: set[int] = set()
    for table, scope_id in zip(pool.tables, pool.scope_ids, strict=True):
        scope_dir = pool.table_dirs[table]
        if scope_dir in (
            search_index.USER_SCOPE_DIR,
            search_index.EXTRA_SCOPE_DIR,
            search_index.USER_FILE_SCOPE_DIR,
        ):
            continue
        low_ns, high_ns = db.execute(
            "SELECT min(rank_ns), max(rank_ns) FROM files WHERE scope = ?", (scope_id,)
        ).fetchone()
        if low_ns is None:
            continue
        ranges: list[tuple[int, int]] = []
        for first, last, span in _concrete(query.dates.spans, low_ns, high_ns):
            run: list[int] = []
            for slot, path in db.execute(
                "SELECT slot, path FROM files WHERE scope = ? AND rank_ns BETWEEN ? AND ? "
                "ORDER BY slot",
                (scope_id, _day_rank(first), _day_rank(last)),
            ):
                day = search_index.note_day(path, scope_dir)
                if day is not None and span.holds(day):
                    run.append(slot)
                    slots.add(slot)
                    continue
                if run:
                    ranges.append(_slot_range(run))
                run = []
            if run:
                ranges.append(_slot_range(run))
        if ranges:
            found[table] = sorted(set(ranges), reverse=True)
    return found, slots


def _slot_range(slots: list[int]) -> tuple[int, int]:
    bits = search_index.ENTRY_BITS
    return (min(slots) << bits, (max(slots) << bits) | search_index.ENTRY_MASK)


def _dated(index, pools: list[_Pool], query: Query, context: _Context, total: int):
    """The rows of the notes of the days the query names, per pool and table; the date's
    weight (its idf over the entries of those notes) and their slots go in `context`."""
    if not query.dates.spans:
        return [{} for _pool in pools]
    ranges = []
    slots: set[int] = set()
    for pool in pools:
        per_table, pool_slots = _date_ranges(index, pool, query)
        ranges.append(per_table)
        slots |= pool_slots
    if slots:
        entries = 0
        listed = sorted(slots)
        for start in range(0, len(listed), 400):
            chunk = listed[start : start + 400]
            entries += index.db.execute(
                f"SELECT coalesce(sum(entries), 0) FROM files WHERE slot IN "
                f"({','.join('?' * len(chunk))})",
                chunk,
            ).fetchone()[0]
        context.date_slots = slots
        context.date_weight = weight(entries, total)
    return ranges


def _of_days(db, pool: _Pool, ranges, words: list[_Word]) -> list[_Row]:
    """Phase one within the notes of the days the query names: the best POOL of their
    entries by rarity, then (when fewer hold a query word) their newest others."""
    found: dict[tuple[str, int], _Row] = {}
    for table, table_ranges in ranges.items():
        for within in table_ranges:
            for row in _by_rarity(db, [table], words, ranking.POOL, within) if words else []:
                found.setdefault((row.table, row.rowid), row)
    best = _best(found, ranking.POOL)
    if len(best) < ranking.POOL:
        extra: dict[tuple[str, int], _Row] = {}
        for table, table_ranges in ranges.items():
            for within in table_ranges:
                for row in _newest(db, [table], ranking.POOL, within):
                    if (row.table, row.rowid) not in found:
                        extra[(row.table, row.rowid)] = row
        for row in sorted(extra.values(), key=lambda row: row.rowid, reverse=True):
            row.weight, row.matched = _holds(words, row.text or "")
            best.append(row)
            if len(best) >= ranking.POOL:
                break
    return best


def _row(
    table: str, stored: tuple, words: list[_Word], holds: tuple[int, tuple[int, ...]] | None = None
) -> _Row:
    """A row read from the index (search_index.STORED), with the query words it holds
    (in its words or its heading's) and what they weigh — `holds` when the caller knows."""
    rowid, text, context, first, last, heading = stored
    total, matched = holds or _holds(words, f"{text} {context}" if context else text)
    return _Row(rowid, table, first, last, heading, total, matched, 0, text, context)


Key = tuple[str, int]  # (table, row id): one entry of the index


def _same_file(a: int, b: int) -> bool:
    return a >> search_index.ENTRY_BITS == b >> search_index.ENTRY_BITS


def _own_scores(known: dict[Key, _Row], context: _Context) -> dict[Key, float]:
    """Each row's own score (memory.ranking): 0 for one that holds no query word, in its
    words or its heading's, and is in no note of a day the query names. (The context's
    parts are read once: a search scores some 800 rows.)"""
    score, forms, weights = ranking.score, context.forms, context.weights
    pairs, average, bits = context.pairs, context.average, search_index.ENTRY_BITS
    date_slots, date_weight = context.date_slots, context.date_weight
    own: dict[Key, float] = {}
    for key, row in known.items():
        dated = date_weight if date_slots and row.rowid >> bits in date_slots else 0
        if not row.matched and not dated:
            own[key] = 0.0
        else:
            own[key] = score(row.words, forms, weights, pairs, average, dated, row.context)
    return own


def _load(
    db, keys: Iterable[tuple[str, int]], words: list[_Word], *, holding: bool = False
) -> dict[tuple[str, int], _Row]:
    """The rows `keys` (table, row id) that exist, read from the tables' content with one
    statement per table (the ids passed as one JSON array: the same statement whatever
    their number, so SQLite keeps it prepared). With `holding`, only those holding a query
    word — told apart inside SQLite when every query word has few forms (FEW_FORMS: ` form `
    looked for in the entry's words and its heading's, as _holds does), so the rest never
    become rows; the others are all read."""
    by_table: dict[str, list[int]] = {}
    for table, rowid in keys:
        by_table.setdefault(table, []).append(rowid)
    forms = [form for word in words for form in word.padded or ()]
    sifted = holding and all(word.padded is not None for word in words)
    found: dict[tuple[str, int], _Row] = {}
    for table, rowids in by_table.items():
        ids = f"[{','.join(str(search_index.stored(rowid)) for rowid in rowids)}]"
        if sifted:
            holds = " OR ".join(["instr(padded, ?)"] * len(forms)) or "0"
            rows = db.execute(
                f"SELECT {search_index.STORED} FROM (SELECT *, "
                "' ' || c0 || ' ' || ifnull(c1, '') || ' ' AS padded "
                f"FROM {table}_content WHERE id IN (SELECT value FROM json_each(?))) "
                f"WHERE {holds}",
                (ids, *forms),
            )
        else:
            rows = db.execute(
                f"SELECT {search_index.STORED} FROM {table}_content "
                "WHERE id IN (SELECT value FROM json_each(?))",
                (ids,),
            )
        for stored in rows:
            found[(table, stored[0])] = _row(table, stored, words)
    return found


def _read_outer(db, joined: list[_Row], known: dict[Key, _Row], context: _Context) -> None:
    """Each neighbour that `joined` the candidates is scored against the entries on both
    sides of it: the outer one (two from a candidate) is read into `known` only where it
    can count — beside an entry holding a query word (ranking.with_neighbour)."""
    outer = {
        (row.table, near)
        for row in joined
        if row.matched
        for near in (row.rowid - 1, row.rowid + 1)
        if _same_file(near, row.rowid) and (row.table, near) not in known
    }
    if outer:
        known.update(_load(db, outer, context.words, holding=not context.date_slots))


def _ranked(db, rows: list[_Row], days: list[_Row], context: _Context) -> list[_Row]:
    """Phase two (SPEC §6.1): the best POOL rows by rarity, the rows of the days the query
    names, and the entries after and before each (the answer after a question, the fact
    before the line that names it) scored by memory.ranking and ordered by score, newer
    first among equals; past them, the rest in the order of rarity."""
    head, known, placed = _gathered(db, rows, days, context)
    own = _own_scores(known, context)
    bits = search_index.ENTRY_BITS
    for row in head:
        table, rowid = row.table, row.rowid
        row.score = own[(table, rowid)]
        if row.matched:  # only an entry holding a query word takes a neighbour's share
            # The entries before and after it in its file (0 for none read: row ids count
            # down within a file).
            slot = rowid >> bits
            before = own.get((table, rowid + 1), 0.0) if (rowid + 1) >> bits == slot else 0.0
            after = own.get((table, rowid - 1), 0.0) if (rowid - 1) >> bits == slot else 0.0
            row.score = ranking.with_neighbour(row.score, before, after, holds_a_word=True)
    ranked = sorted(head, key=lambda row: (ranking.shown(row.score), row.rowid), reverse=True)
    for row in rows[ranking.POOL :]:
        key = (row.table, row.rowid)
        if key not in placed and key in known:
            row = known[key]
            row.score = own[key]
            ranked.append(row)
    return ranked


def _gathered(
    db, rows: list[_Row], days: list[_Row], context: _Context
) -> tuple[list[_Row], dict[Key, _Row], set[Key]]:
    """(the rows to score: the candidates and the neighbours that joined them, those that
    can be hits; every row read, by key; the keys of the candidates and neighbours)."""
    head_keys = list(
        dict.fromkeys((row.table, row.rowid) for row in [*rows[: ranking.POOL], *days])
    )
    # Each candidate's next entry in its file, then the one before (row ids count down
    # within a file).
    bits = search_index.ENTRY_BITS
    near_keys = [
        (table, near)
        for table, rowid in head_keys
        for near in (rowid - 1, rowid + 1)
        if near >> bits == rowid >> bits  # the same file
    ]
    known = {(row.table, row.rowid): row for row in [*rows, *days] if row.text is not None}
    wanted = set(head_keys)
    wanted.update((row.table, row.rowid) for row in rows[ranking.POOL :] if row.text is None)
    wanted.difference_update(known)
    known.update(_load(db, wanted, context.words))
    # A neighbour holding no query word scores 0 and is no hit (but in a note of a day
    # the query names): only those holding one are read.
    near = set(near_keys).difference(known)
    known.update(_load(db, near, context.words, holding=not context.date_slots))
    head = [known[key] for key in head_keys if key in known]
    placed = {(row.table, row.rowid) for row in head}
    candidates = len(head)
    for key in near_keys:
        if key not in placed and key in known:
            head.append(known[key])
            placed.add(key)
    _read_outer(db, head[candidates:], known, context)
    # A hit holds a query word, or stands in a note of a day the query names.
    head = [
        row
        for row in head
        if row.matched or row.rowid >> search_index.ENTRY_BITS in context.date_slots
    ]
    return head, known, placed


def _select(index, query: Query, pools, limit) -> tuple[list[list[_Row]], list[_Word]]:
    """Each pool's best `limit` rows (SPEC §6.1), words weighed over all the pools' scopes
    (one pool for memory_search; for the owner's search of everything, so that ranks
    compare)."""
    db = index.db
    every = sorted({scope_id for pool in pools for scope_id in pool.scope_ids})
    context = _context(index, query, every)
    total = 0
    if every:
        total = db.execute(
            f"SELECT coalesce(sum(entries), 0) FROM scopes WHERE id IN "
            f"({','.join('?' * len(every))})",
            every,
        ).fetchone()[0]
    dated = _dated(index, pools, query, context, total)
    wanted = max(limit, ranking.POOL)
    ranked = []
    for number, pool in enumerate(pools):
        rows = _by_rarity(db, pool.tables, context.words, wanted) if context.words else []
        days = _of_days(db, pool, dated[number], context.words) if dated[number] else []
        pool_rows = _ranked(db, rows, days, context)[:limit]
        for row in pool_rows:
            row.pool = number
        ranked.append(pool_rows)
    return ranked, context.words


def _count(db, pools: list[_Pool], words: list[_Word], cap: int) -> int:
    """How many entries the pools' ranked rows come from, up to `cap`, counted inside the
    index (no row leaves SQLite): those holding any query word, as none is dropped for
    missing one (SPEC §6.1). A table several pools share (the extra paths) counts once."""
    tables = sorted({table for pool in pools for table in pool.tables})
    with_tokens = [word for word in words if word.tokens]
    if not with_tokens:
        return 0
    return _count_match(db, tables, " OR ".join(word.expr for word in with_tokens), cap)


def _count_match(db, tables: list[str], expr: str, cap: int) -> int:
    found = 0
    for table in tables:
        if found >= cap:
            break
        found += db.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)",
            (expr, cap - found),
        ).fetchone()[0]
    return min(found, cap)


def _interleave_rows(pools: list[list[_Row]], limit: int) -> list[_Row]:
    """Merge ranked pools so the best entry of each stands before the second of any
    (SPEC §6.2); within a round, by score."""
    pools = [pool for pool in pools if pool]
    merged: list[_Row] = []
    seen: set[tuple[str, int]] = set()  # an extra path's entry is in every agent's pool
    depth = max((len(pool) for pool in pools), default=0)
    for round_index in range(depth):
        same_round = [pool[round_index] for pool in pools if round_index < len(pool)]
        for row in sorted(
            same_round, key=lambda row: (ranking.shown(row.score), row.rowid), reverse=True
        ):
            if (row.table, row.rowid) not in seen:
                seen.add((row.table, row.rowid))
                merged.append(row)
        if len(merged) >= limit:
            break
    return merged[:limit]


def _check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be a whole number from 1 to {MAX_LIMIT}.")
    return limit


def search(
    query: Query | str,
    *,
    agent: Agent | None,
    include_user: bool = True,
    limit: int = DEFAULT_LIMIT,
) -> list[Hit]:
    """memory_search (SPEC §6.1): the agent's MEMORY.md and memory/**/*.md, plus the shared
    facts when include_user, ranked as one pool. At most `limit` hits, best first.

    Raises InvalidInput for a query without letters or digits or a limit outside 1–100.
    """
    _check_limit(limit)
    query = as_query(query)
    if agent is None:
        if not include_user:
            return []
        pool = _Pool(USER_SCOPE, None, [search_index.USER_SCOPE_DIR])
    else:
        pool = _agent_pool(agent, include_user=include_user)
    return _run(query, [pool], limit, merge=False)[0]


def explain(
    query: Query | str, *, agent: Agent | None = None, include_user: bool = True
) -> Explained:
    """How each word of the query counts in the scope `search` (or, without an agent,
    `search_window`) would search: its rule, in how many entries it stands, its weight.
    Raises InvalidInput for a query without letters or digits."""
    query = as_query(query)
    if agent is not None:
        pools = [_agent_pool(agent, include_user=include_user)]
    else:
        pools = _all_pools()

    def run(index: search_index.Index) -> Explained:
        opened = [_open_pool(index, _fresh(pool)) for pool in pools]
        scope_ids = sorted({scope_id for pool in opened for scope_id in pool.scope_ids})
        words, total = _weigh(index, query, scope_ids)
        return Explained(
            total,
            [
                WordWeight(
                    w.word,
                    q.rule,
                    w.df,
                    w.weight / 1000,
                    sorted(w.tokens)[:20],
                    w.capped,
                    w.inside,
                )
                for w, q in zip(words, query.words, strict=True)
            ],
        )

    return search_keeper.with_index(_scope_dirs(pools), run)


def _all_pools(agents: list[Agent] | None = None) -> list[_Pool]:
    """The owner's search of everything: every agent's pool (of `agents`, every agent, when
    the caller has read them), and the user scope's — the facts and USER.md (SPEC §6.2;
    USER.md is in no agent's memory_search, §6.1)."""
    if agents is None:
        agents = list(Agent.objects.all())
    pools = [_agent_pool(agent, include_user=False) for agent in agents]
    user_dirs = [search_index.USER_SCOPE_DIR, search_index.USER_FILE_SCOPE_DIR]
    pools.append(_Pool(USER_SCOPE, None, user_dirs))
    return pools


def _search_all(
    query: Query,
    *,
    agent_id: str | None,
    limit: int,
    shown: slice = _ALL,
    count_up_to: int | None = None,
    agents: list[Agent] | None = None,
) -> tuple[list[Hit], int]:
    """SPEC §6.2. With agent_id: that agent's files and the user scope, as `search` ranks
    them. Without: every agent's results (`agents`: every agent, when the caller has read
    them) and the user scope's, each ranked on its own (words weighed over all of them, so
    ranks compare) and interleaved by rank. The hits `shown` of the best `limit`, and how
    many of those there are. Raises NotFound for an unknown agent, InvalidInput as
    `search`."""
    if agent_id is not None:
        pool = _agent_pool(get_agent_or_404(agent_id), include_user=True)
        return _run(query, [pool], limit, merge=False, shown=shown, count_up_to=count_up_to)
    pools = _all_pools(agents)
    return _run(query, pools, limit, merge=True, shown=shown, count_up_to=count_up_to)


COUNT_CAP = 1000


@dataclass(frozen=True)
class Window:
    """One page of ranked results: `hits` from `offset`, at most `limit` of them, and
    `total` counted up to COUNT_CAP (`capped` when there may be more)."""

    hits: list[Hit]
    total: int
    capped: bool
    offset: int
    limit: int


def search_window(
    query: Query | str,
    *,
    agent_id: str | None = None,
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
    count_up_to: int = COUNT_CAP,
    agents: list[Agent] | None = None,
) -> Window:
    """A page of the ranked results across scopes (SPEC §6.2: with `agent_id`, what that
    agent's memory_search reads; without, every agent's and the user scope's — the facts
    and USER.md —, each ranked on its own and interleaved by rank) and how many there are,
    for lists a person pages through (the management pages, `GET /api/memory/search`). The
    count is exact up to `count_up_to` (then `capped`). `agents`: every agent, when the
    caller has read them already. Raises NotFound for an unknown agent, InvalidInput for a
    query without letters or digits, a bad limit or a negative offset."""
    _check_limit(limit)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInput("offset must be a whole number, 0 or more.")
    query = as_query(query)
    # Bounded work: rows past the counted ones and one more page are never ranked, so an
    # offset far past the end (up to 2^63) costs what the last page costs — an empty page.
    wanted = min(max(count_up_to, offset + limit), count_up_to + MAX_LIMIT) + 1
    # Each pool ranks the rows down to the page's last (the first n rows of an
    # interleaving come from the first n of each pool), only the page's are read back
    # from their files, and the rest are counted inside the index.
    hits, found = _search_all(
        query,
        agent_id=agent_id,
        limit=min(offset + limit, wanted - 1),
        shown=slice(offset, offset + limit),
        count_up_to=wanted,
        agents=agents,
    )
    capped = found >= wanted
    return Window(hits, min(found, wanted - 1), capped, offset, limit)


def _lines(hit: Hit) -> str:
    if hit.line is None:
        return hit.path
    if hit.end_line is None or hit.end_line == hit.line:
        return f"{hit.path}:{hit.line}"
    return f"{hit.path}:L{hit.line}-L{hit.end_line}"


def format_hit(hit: Hit) -> str:
    """`[<path>:<line>] <text>` (`[<path>:L3-L5]` for an entry of several lines, `[<path>]`
    for a fact), with `(<date> <weekday> · <heading>)` before the text when the entry is in
    a dated note or under a heading."""
    when = []
    if hit.date:
        day = dt.date.fromisoformat(hit.date)
        when.append(f"{hit.date} {WEEKDAYS[day.weekday()]}")
    if hit.heading:
        when.append(hit.heading)
    context = f"({' · '.join(when)}) " if when else ""
    return f"[{_lines(hit)}] {context}{hit.text}"


def format_hits(hits: list[Hit]) -> str:
    """The tool's text: one hit per line, best first ("" when there are none)."""
    return "\n".join(format_hit(hit) for hit in hits)
