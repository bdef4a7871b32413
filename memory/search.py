"""memory_search (SPEC §6.1) and the search across scopes of the API (§6.2).

Plain words, ranked, explainable — the rules (docs/decisions.md, "Search"):

- Query and text are compared folded (`memory.text.fold`); the query is split into words
  once, where it comes in (`memory.query.Query`: each word with the rule it matches by).
  A word of four or more characters matches anywhere inside a word of the text (`sach` in
  `sachs`); a shorter one only whole (`doc` is not in `docs`); a run of Han, Kana or Hangul
  anywhere at any length (`心跳`).
- An entry is a block of lines (`memory.text.blocks`: a paragraph, or a list item with its
  continuation lines, capped) of MEMORY.md or any `.md` below the agent's `memory/` — the
  wiki's machine block left out — or one fact (description and body together).
- Each query word weighs by how rare it is in the scope: BM25's idf of the number of
  entries holding it, in thousandths (`weight`). So "what", "is", "the" count little.
- All words first: when some entry holds every word, entries missing one are dropped;
  otherwise entries come by the weights of the words they hold, added up.
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

import datetime as dt
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from memory import search_index, search_keeper, workspace
from memory import text as text_rules
from memory.agents import get_agent_or_404
from memory.errors import InvalidInput
from memory.models import Agent
from memory.query import WHOLE, Query, QueryWord, as_query

DEFAULT_LIMIT = 12
MAX_LIMIT = 100
TEXT_CHARS = 700
USER_SCOPE = "user"
FACTS_DIR = search_index.FACTS_DIR
# A query word found in more entries than this is not fetched whole when the rarer words
# leave room: entries holding only such words are walked by the subsets of them instead.
FETCH_ROWS = 3000
MAX_SUBSET_WORDS = 12
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass
class Hit:
    """One entry found. `line` and `end_line` are 1-based (the same for a one-line entry);
    None for a fact (a fact is one entry). `path` is relative to the agent dir for agent
    files, `users/owner/facts/<name>.md` for facts. `score` is the number of query words
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
    tokens: list[str]
    token_ids: list[int]
    df: int = 0
    weight: int = 0  # thousandths
    token_set: frozenset[str] = frozenset()
    capped: bool = False  # more words of the text matched than MAX_FORMS

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
    return round(1000 * math.log(1 + (entries - df + 0.5) / (df + 0.5)))


def _weigh(
    index: search_index.Index, query: Query, scope_ids: list[int]
) -> tuple[list[_Word], int]:
    """The query's words with the words of the text each matches and its weight over the
    scopes `scope_ids`; and how many entries those scopes hold."""
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
        df = 0
        for start in range(0, len(ids), 400):
            chunk = ids[start : start + 400]
            if scope_ids:
                df += db.execute(
                    f"SELECT coalesce(sum(n), 0) FROM df WHERE scope IN ({marks}) "
                    f"AND token IN ({','.join('?' * len(chunk))})",
                    [*scope_ids, *chunk],
                ).fetchone()[0]
        parsed.append(
            _Word(query_word.text, tokens, ids, df, weight(df, total), frozenset(tokens), capped)
        )
    return parsed, total


@dataclass
class _Row:
    rowid: int
    table: str
    first: int
    last: int
    heading: str
    weight: int
    matched: tuple[int, ...]  # indexes into the query's words
    pool: int = 0  # which pool of the search it was found for


def _score(words: list[_Word], tokens: set[str]) -> tuple[int, tuple[int, ...]]:
    matched = tuple(i for i, word in enumerate(words) if not word.token_set.isdisjoint(tokens))
    return sum(words[i].weight for i in matched), matched


def _full(db, tables: list[str], words: list[_Word], limit: int) -> list[_Row]:
    """Entries holding every word, newest first."""
    if not words or any(not word.tokens for word in words):
        return []
    expr = " AND ".join(word.expr for word in words)
    total = sum(word.weight for word in words)
    everything = tuple(range(len(words)))
    rows: list[_Row] = []
    for table in tables:
        for rowid, first, last, heading in db.execute(
            f"SELECT rowid, first, last, heading FROM {table} WHERE {table} MATCH ? "
            "ORDER BY rowid DESC LIMIT ?",
            (expr, limit),
        ):
            rows.append(_Row(rowid, table, first, last, heading, total, everything))
    rows.sort(key=lambda row: row.rowid, reverse=True)
    return rows[:limit]


def _best(found: dict[tuple[str, int], _Row], limit: int) -> list[_Row]:
    return sorted(found.values(), key=lambda row: (row.weight, row.rowid), reverse=True)[:limit]


def _kth(found: dict[tuple[str, int], _Row], limit: int) -> int | None:
    if len(found) < limit:
        return None
    return _best(found, limit)[-1].weight


def _partial(db, tables: list[str], words: list[_Word], limit: int) -> list[_Row]:
    """The best `limit` entries by the weights of the words they hold, exactly.

    The rarest words' entries are fetched whole and scored; once the words left could not
    together outweigh the limit-th entry so far, nothing else can enter. Entries holding
    only common words are walked by subset of those words, heaviest subset first, each
    subset's newest entries only (`NOT` the other words), until no lighter subset can.
    """
    order = sorted(
        (i for i, word in enumerate(words) if word.tokens), key=lambda i: (-words[i].weight, i)
    )
    found: dict[tuple[str, int], _Row] = {}
    fetched: list[int] = []
    position = 0
    while position < len(order):
        rest = sum(words[i].weight for i in order[position:])
        kth = _kth(found, limit)
        if kth is not None and kth > rest:
            return _best(found, limit)
        word = words[order[position]]
        if word.df > FETCH_ROWS and len(order) - position <= MAX_SUBSET_WORDS:
            break
        for table in tables:
            for rowid, words_text, first, last, heading in db.execute(
                f"SELECT rowid, words, first, last, heading FROM {table} WHERE {table} MATCH ?",
                (word.expr,),
            ):
                if (table, rowid) not in found:
                    total, matched = _score(words, set(words_text.split()))
                    found[(table, rowid)] = _Row(rowid, table, first, last, heading, total, matched)
        fetched.append(order[position])
        position += 1
    if position < len(order):
        _walk_subsets(db, tables, words, fetched, order[position:], found, limit)
    return _best(found, limit)


def _walk_subsets(db, tables, words, fetched, rest_words, found, limit) -> None:
    subsets = []
    for size in range(1, len(rest_words) + 1):
        for subset in itertools.combinations(rest_words, size):
            subsets.append((sum(words[i].weight for i in subset), subset))
    subsets.sort(key=lambda item: -item[0])
    for total, subset in subsets:
        kth = _kth(found, limit)
        if kth is not None and kth > total:
            return
        excluded = [i for i in rest_words if i not in subset] + fetched
        expr = "(" + " AND ".join(words[i].expr for i in subset) + ")"
        if excluded:
            expr += " NOT (" + " OR ".join(words[i].expr for i in excluded) + ")"
        matched = tuple(sorted(subset))
        for table in tables:
            for rowid, first, last, heading in db.execute(
                f"SELECT rowid, first, last, heading FROM {table} WHERE {table} MATCH ? "
                "ORDER BY rowid DESC LIMIT ?",
                (expr, limit),
            ):
                found[(table, rowid)] = _Row(rowid, table, first, last, heading, total, matched)


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
        if scope_dir == search_index.USER_SCOPE_DIR:
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
    for row in rows:
        slot = row.rowid >> search_index.ENTRY_BITS
        path = files[slot][0]
        original = texts[slot]
        scope_dir = pools[row.pool].table_dirs[row.table]
        scope, agent_id = pools[row.pool].table_scopes[row.table]
        is_fact = scope_dir == search_index.USER_SCOPE_DIR
        if is_fact:
            entry = search_index.entries_of(original, is_fact=True, with_text=True)[0]
            shown, first, last, heading = entry.text, None, None, None
            tokens = set(entry.tokens)
        else:
            lines = original.split("\n")
            block = lines[row.first : row.last + 1]
            shown = " ".join(line.strip() for line in block if line.strip())
            tokens = set(search_index._find_words(text_rules.fold("\n".join(block))))
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
                weight=row.weight / 1000,
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
    on its own and interleaved by rank (§6.2), all words first across the pools; and how
    many were found: the rows ranked (at most `limit`), or with `count_up_to` the entries
    that match, counted by the index up to that many. Only the rows `shown` (all of them
    by default: a page of a window) are read back from their files and returned. On this
    host's index, or — while there is none usable — on one built from the files
    (search_keeper.with_index)."""

    def run(index: search_index.Index) -> tuple[list[Hit], int]:
        opened = [_open_pool(index, _fresh(pool)) for pool in pools]
        for attempt in range(4):
            try:
                rows, words = _select(index, query, opened, limit)
                kept = _interleave_rows(rows, limit, len(words)) if merge else rows[0][:limit]
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


def _fresh(pool: _Pool) -> _Pool:
    """The pool with nothing opened yet (each index has its own tables)."""
    return _Pool(pool.scope, pool.agent_id, list(pool.dirs))


def _scope_dirs(pools: list[_Pool]) -> set[str]:
    return {scope_dir for pool in pools for scope_dir in pool.dirs}


def _select(index, query: Query, pools, limit) -> tuple[list[list[_Row]], list[_Word]]:
    """Each pool's best `limit` rows, words weighed over all the pools' scopes (one pool
    for memory_search; for the owner's search of everything, so that ranks compare)."""
    db = index.db
    every = sorted({scope_id for pool in pools for scope_id in pool.scope_ids})
    words, _ = _weigh(index, query, every)
    rows = [_full(db, pool.tables, words, limit) for pool in pools]
    if not any(rows) and len(words) > 1:
        rows = [_partial(db, pool.tables, words, limit) for pool in pools]
    for number, pool_rows in enumerate(rows):
        for row in pool_rows:
            row.pool = number
    return rows, words


def _count(db, pools: list[_Pool], words: list[_Word], cap: int) -> int:
    """How many entries the pools' ranked rows come from, up to `cap`, counted inside the
    index (no row leaves SQLite): those holding every word, or, when there is none and
    the query has several words, those holding any (as _select falls back to _partial).
    A table several pools share (the extra paths) counts once."""
    tables = sorted({table for pool in pools for table in pool.tables})
    with_tokens = [word for word in words if word.tokens]
    found = 0
    if with_tokens and len(with_tokens) == len(words):
        found = _count_match(db, tables, " AND ".join(word.expr for word in words), cap)
    if not found and len(words) > 1 and with_tokens:
        found = _count_match(db, tables, " OR ".join(word.expr for word in with_tokens), cap)
    return found


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


def _interleave_rows(pools: list[list[_Row]], limit: int, word_count: int) -> list[_Row]:
    """Merge ranked pools so the best entry of each stands before the second of any
    (SPEC §6.2). When any pool has an entry with every word, entries missing one are
    dropped from all pools (all words first holds across scopes too)."""
    pools = [pool for pool in pools if pool]
    if any(len(row.matched) == word_count for pool in pools for row in pool):
        pools = [[row for row in pool if len(row.matched) == word_count] for pool in pools]
    merged: list[_Row] = []
    seen: set[tuple[str, int]] = set()  # an extra path's entry is in every agent's pool
    depth = max((len(pool) for pool in pools), default=0)
    for round_index in range(depth):
        same_round = [pool[round_index] for pool in pools if round_index < len(pool)]
        for row in sorted(same_round, key=lambda row: (row.weight, row.rowid), reverse=True):
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
                WordWeight(w.word, q.rule, w.df, w.weight / 1000, sorted(w.tokens)[:20], w.capped)
                for w, q in zip(words, query.words, strict=True)
            ],
        )

    return search_keeper.with_index(_scope_dirs(pools), run)


def _all_pools() -> list[_Pool]:
    pools = [_agent_pool(agent, include_user=False) for agent in Agent.objects.all()]
    pools.append(_Pool(USER_SCOPE, None, [search_index.USER_SCOPE_DIR]))
    return pools


def _search_all(
    query: Query,
    *,
    agent_id: str | None,
    limit: int,
    shown: slice = _ALL,
    count_up_to: int | None = None,
) -> tuple[list[Hit], int]:
    """SPEC §6.2. With agent_id: that agent's files and the user scope, as `search` ranks
    them. Without: every agent's results and the user scope's, each ranked on its own
    (words weighed over all of them, so ranks compare) and interleaved by rank. The hits
    `shown` of the best `limit`, and how many of those there are. Raises NotFound for an
    unknown agent, InvalidInput as `search`."""
    if agent_id is not None:
        pool = _agent_pool(get_agent_or_404(agent_id), include_user=True)
        return _run(query, [pool], limit, merge=False, shown=shown, count_up_to=count_up_to)
    return _run(query, _all_pools(), limit, merge=True, shown=shown, count_up_to=count_up_to)


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
) -> Window:
    """A page of the ranked results across scopes (SPEC §6.2: with `agent_id`, that agent's
    files and the user scope; without, every agent's and the user scope's, each ranked on
    its own and interleaved by rank) and how many there are, for lists a person pages
    through (the management pages, `GET /api/memory/search`). The count is exact up to
    `count_up_to` (then `capped`). Raises NotFound for an unknown agent, InvalidInput for
    a query without letters or digits, a bad limit or a negative offset."""
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
