"""memory_search (SPEC §6.1) and the search across scopes of the API (§6.2).

Plain grep, ranked, explainable:

- Query and text are compared folded (`memory.text.fold`); the query is split into words
  (`memory.text.words`); a word of four or more characters matches anywhere, a shorter one
  only whole (`memory.text.word_pattern`).
- An entry is one line of MEMORY.md or of any `.md` under the agent's `memory/` (blank
  lines match nothing; headings are lines like any other), of a file of the extra paths
  (`workspace.scan_extra()`, shown as `extra/...`), or one fact (description and body
  together). Lines inside a wiki page's machine-owned block are not searched.
- When some entry has every word, entries missing a word are dropped; otherwise partial
  matches come best first. Rank: more matched words, then newer file (mtime, then path
  descending), then line order.

Speed without staleness: the folded text of every file is kept in a process-wide cache
keyed by (size, mtime_ns, ctime_ns, inode). Every query re-stats every file in scope (one
scandir pass and an lstat by directory fd, ~3 µs a file) and re-reads only the files whose
key changed, so a hand edit shows in the very next query. A file whose ctime is within
RACY_WINDOW_NS of the moment it was read is re-read on every query until it is older than
that ("racy" as git calls it): a same-size edit inside one tick of the filesystem clock
would otherwise keep its key.
Files are visited newest first and loaded lazily, so a query that finds its 12 entries in
this week's notes never reads (or, cold, folds) ten years of them.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from memory import text as text_rules
from memory import workspace
from memory.agents import memory_file_name
from memory.errors import InvalidInput, PathRefused
from memory.models import Agent

DEFAULT_LIMIT = 12
MAX_LIMIT = 100
TEXT_CHARS = 700
USER_SCOPE = "user"
FACTS_DIR = "users/owner/facts"

# A file changed less than this long before it was read may change again without its
# (inode, size, mtime, ctime) key changing — timestamps tick coarsely (ext4 ~4 ms, FAT 2 s).
RACY_WINDOW_NS = 2_000_000_000
# Past this much cached text the cache is dropped and refilled from disk as queries need.
CACHE_MAX_CHARS = 512 * 1024 * 1024


@dataclass
class Hit:
    """One entry found. `line` is 1-based; None for a fact (a fact is one entry).
    `path` is relative to the agent dir for agent files, `users/owner/facts/<name>.md` for
    facts. `score` is the number of query words the entry matched."""

    scope: str  # "user" or "agent:<id>"
    agent: str | None
    path: str
    line: int | None
    text: str
    score: int
    mtime_ns: int = field(default=0, repr=False, compare=False)


# --- the cache of folded files ---------------------------------------------------------


class _Doc:
    """A file as search needs it: the folded text to match, the original to show."""

    __slots__ = ("key", "folded", "original", "fact_text", "racy", "_starts", "_lines")

    def __init__(self, key: tuple, folded: str, original: str, fact_text: str | None) -> None:
        self.key = key
        self.folded = folded
        self.original = original
        self.fact_text = fact_text
        self.racy = False
        self._starts: list[int] | None = None
        self._lines: list[str] | None = None

    def line_starts(self) -> list[int]:
        if self._starts is None:
            starts = [0]
            find = self.folded.find
            pos = find("\n")
            while pos != -1:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
            self._starts = starts
        return self._starts

    def line(self, index: int) -> str:
        if self._lines is None:
            self._lines = self.original.split("\n")
        return self._lines[index]


_cache: dict[str, _Doc] = {}
_cache_chars = 0
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every cached file (the next query reads from disk, as after a restart)."""
    global _cache_chars
    with _cache_lock:
        _cache.clear()
        _cache_chars = 0


def _key(scanned: workspace.ScannedFile) -> tuple:
    # (size, mtime_ns, ctime_ns, ino). _search_pool inlines this for speed as the same
    # slice; keep both in step.
    return scanned[2:]


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


def _build_doc(key: tuple, original: str, *, is_fact: bool) -> _Doc:
    if is_fact:
        meta, body = text_rules.parse_frontmatter(original)
        description = str(meta.get("description") or "").strip()
        body = body.strip()
        shown_body = text_rules.fold_single_line(body)
        shown = f"{description} — {shown_body}" if description and shown_body else description
        return _Doc(key, text_rules.fold(f"{description}\n{body}"), original, shown or shown_body)
    if text_rules.MACHINE_BLOCK_START in original:
        searched = _blank_machine_blocks(original)
    else:
        searched = original
    return _Doc(key, text_rules.fold(searched), original, None)


def _load(scanned: workspace.ScannedFile, *, is_fact: bool, now_ns: int) -> _Doc | None:
    """The cached doc of a scanned file, re-read when its key changed or it was racy."""
    global _cache_chars
    key = _key(scanned)
    doc = _cache.get(scanned.abspath)
    if doc is not None and doc.key == key and not doc.racy:
        return doc
    original = workspace.read_scanned(scanned)
    if original is None:
        return None
    doc = _build_doc(key, original, is_fact=is_fact)
    doc.racy = now_ns - max(scanned.mtime_ns, scanned.ctime_ns) < RACY_WINDOW_NS
    with _cache_lock:
        if _cache_chars > CACHE_MAX_CHARS:
            _cache.clear()
            _cache_chars = 0
        old = _cache.get(scanned.abspath)
        if old is not None:
            _cache_chars -= len(old.original)
        _cache[scanned.abspath] = doc
        _cache_chars += len(original)
    return doc


# --- sources: which files an agent's search reads ---------------------------------------

# A source is a plain tuple (mtime_ns, shown path, scanned file, is_fact, scope, agent id):
# thousands are made per query, and a plain tuple sorts newest first (mtime, then path
# descending) with `sorted(..., reverse=True)` and no key function.
_Source = tuple[int, str, workspace.ScannedFile, bool, str, str | None]


def _scan(rel_dir: str, *, recursive: bool = False) -> list[workspace.ScannedFile]:
    # A directory that leads out of the workspace holds nothing search may read.
    try:
        return workspace.scan_files(rel_dir, recursive=recursive)
    except PathRefused:
        return []


def _agent_sources(agent: Agent) -> list[_Source]:
    """MEMORY.md and every .md below memory/ of the agent (never agents/ or users/ of the
    default agent, whose dir is the home)."""
    scope = f"agent:{agent.id}"
    cut = len(agent.dir) + 1 if agent.dir else 0
    memory_name = memory_file_name(agent)  # MEMORY.md, or memory.md standing for it
    found = [scanned for scanned in _scan(agent.dir) if scanned.path[cut:] == memory_name]
    found += _scan(agent.path("memory"), recursive=True)
    agent_id = agent.id
    sources = [(s[3], s[0][cut:], s, False, scope, agent_id) for s in found]
    # The extra paths (MEMORY_EXTRA_PATHS): read by every agent, shown as extra/...
    return sources + [(s[3], s[0], s, False, scope, agent_id) for s in workspace.scan_extra()]


def _user_sources() -> list[_Source]:
    """The shared facts: users/owner/facts/<valid name>.md (INDEX.md is not a fact)."""
    sources = []
    start = len(FACTS_DIR) + 1
    fullmatch = text_rules.FACT_NAME_RE.fullmatch
    for scanned in _scan(FACTS_DIR):
        name = scanned.path[start:-3]
        if len(name) <= 64 and fullmatch(name):
            sources.append((scanned.mtime_ns, scanned.path, scanned, True, USER_SCOPE, None))
    return sources


# --- matching and ranking ------------------------------------------------------------


def _contains(word: str) -> Callable[[str], bool]:
    def has_word(folded: str) -> bool:
        return word in folded

    return has_word


class _Query:
    def __init__(self, query: str) -> None:
        self.words = text_rules.words(query)
        if not self.words:
            raise InvalidInput("The query has no letters or digits to search for.")
        self.patterns = [text_rules.word_pattern(word) for word in self.words]
        self.short = [len(word) <= text_rules.SHORT_WORD for word in self.words]
        # The longest word is the likeliest to be rare: lines holding it are the only ones
        # checked for the other words when looking for entries with every word.
        self.anchor = max(range(len(self.words)), key=lambda index: len(self.words[index]))
        self.others = [
            (word, self.patterns[index] if self.short[index] else None)
            for index, word in enumerate(self.words)
            if index != self.anchor
        ]
        anchor_word = self.words[self.anchor]
        anchor_pattern = self.patterns[self.anchor] if self.short[self.anchor] else None
        self.checks = [(anchor_word, anchor_pattern), *self.others]
        if len(self.checks) == 1 and anchor_pattern is None:
            # One long word, the commonest query: a bare C substring test per file.
            self.has_all = _contains(anchor_word)
        else:
            self.has_all = self.has_all_words

    def present(self, folded: str) -> int:
        """Bit i set when word i matches somewhere in the text."""
        mask = 0
        for index, word in enumerate(self.words):
            # `in` is a C substring scan; only a short word needs the regex on top.
            if word in folded and (not self.short[index] or self.patterns[index].search(folded)):
                mask |= 1 << index
        return mask

    def has_all_words(self, folded: str) -> bool:
        """Whether every word matches somewhere in the text (anchor first: likeliest to
        be missing, so most files are dismissed after one C substring scan)."""
        for word, pattern in self.checks:
            if word not in folded or (pattern is not None and pattern.search(folded) is None):
                return False
        return True

    def _lines_with(self, doc: _Doc, index: int) -> Iterator[tuple[int, int]]:
        """(line index, offset where the line ends) of each line of `doc` holding word
        `index`, in order, each line once."""
        folded = doc.folded
        starts = doc.line_starts()
        count = len(starts)
        end = len(folded)
        word = self.words[index]
        search = self.patterns[index].search if self.short[index] else None
        pos = 0
        while pos < end:
            if search is None:
                at = folded.find(word, pos)
            else:
                match = search(folded, pos)
                at = -1 if match is None else match.start()
            if at < 0:
                return
            line = bisect.bisect_right(starts, at) - 1
            # One match per line is enough: jump to the next line.
            pos = starts[line + 1] if line + 1 < count else end
            yield line, pos

    def full_lines(self, doc: _Doc) -> list[int]:
        """Indexes of the lines that hold every word, in order: the lines holding the
        anchor word, kept when the others are on them too."""
        starts = doc.line_starts()
        others = self.others
        lines: list[int] = []
        for line, line_end in self._lines_with(doc, self.anchor):
            if others:
                segment = doc.folded[starts[line] : line_end]
                if not all(
                    other in segment and (pattern is None or pattern.search(segment))
                    for other, pattern in others
                ):
                    continue
            lines.append(line)
        return lines

    def line_masks(self, doc: _Doc, present: int) -> dict[int, int]:
        """Line index → bits of the words matched on that line."""
        masks: dict[int, int] = {}
        for index in range(len(self.words)):
            bit = 1 << index
            if not present & bit:
                continue
            for line, _ in self._lines_with(doc, index):
                masks[line] = masks.get(line, 0) | bit
        return masks


def _hit(source: _Source, doc: _Doc, line: int | None, score: int) -> Hit:
    mtime_ns, path, _scanned, _is_fact, scope, agent_id = source
    shown = (doc.fact_text or "") if line is None else doc.line(line).strip()
    return Hit(
        scope=scope,
        agent=agent_id,
        path=path,
        line=None if line is None else line + 1,
        text=text_rules.cap(shown, TEXT_CHARS),
        score=score,
        mtime_ns=mtime_ns,
    )


def _entries(query: _Query, doc: _Doc, present: int, is_fact: bool) -> list[tuple[int, int]]:
    """(line index or -1 for a fact, matched bits) of every matching entry, in line order."""
    if is_fact:
        return [(-1, present)] if present else []
    return sorted(query.line_masks(doc, present).items())


def _search_pool(query: _Query, sources: list[_Source], limit: int, now_ns: int) -> list[Hit]:
    """The best `limit` entries of one ranked pool of files (SPEC §6.1). `now_ns` is the
    time taken before the files were scanned (what decides whether a read is racy)."""
    ordered = sorted(sources, reverse=True)  # newest first: mtime, then path descending
    word_count = len(query.words)
    has_all = query.has_all
    cached = _cache.get
    hits: list[Hit] = []
    docs: list[_Doc | None] = []  # by rank, for the partial walk

    # Entries with every word: walk the files newest first and stop at `limit`.
    for source in ordered:
        scanned = source[2]
        doc = cached(scanned[1])
        # The hot path, inlined: an unchanged, settled file is served from the cache.
        if doc is None or doc.racy or doc.key != scanned[2:]:
            doc = _load(scanned, is_fact=source[3], now_ns=now_ns)
        docs.append(doc)
        if doc is None or not has_all(doc.folded):
            continue
        if source[3]:  # a fact is one entry
            hits.append(_hit(source, doc, None, word_count))
        else:
            hits += [_hit(source, doc, line, word_count) for line in query.full_lines(doc)]
        if len(hits) >= limit:
            return hits[:limit]
    if hits or word_count == 1:
        return hits

    # None has every word: partial matches, best first. A file can give nothing better
    # than the number of words it holds, so files go by that count, then by rank, and the
    # walk stops once `limit` entries beat anything the next file could give.
    partial: list[tuple[int, int, int]] = []  # (-words in file, rank, present bits)
    for rank, doc in enumerate(docs):
        if doc is not None:
            present = query.present(doc.folded)
            if present:
                partial.append((-present.bit_count(), rank, present))
    partial.sort()
    found: list[tuple[int, int, int]] = []  # (-score, rank, line index or -1)
    for neg_best_possible, rank, present in partial:
        if len(found) >= limit:
            found.sort()
            del found[limit:]
            if found[-1][:2] < (neg_best_possible, rank):
                break
        for line, bits in _entries(query, docs[rank], present, ordered[rank][3]):
            found.append((-bits.bit_count(), rank, line))
    found.sort()
    return [
        _hit(ordered[rank], docs[rank], None if line < 0 else line, -neg_score)
        for neg_score, rank, line in found[:limit]
    ]


def _check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be a whole number from 1 to {MAX_LIMIT}.")
    return limit


def search(
    query: str, *, agent: Agent | None, include_user: bool = True, limit: int = DEFAULT_LIMIT
) -> list[Hit]:
    """memory_search (SPEC §6.1): the agent's MEMORY.md and memory/**/*.md, plus the shared
    facts when include_user, ranked as one pool. At most `limit` hits, best first.

    Raises InvalidInput for a query without letters or digits or a limit outside 1–100.
    Reads the disk on every call (stat of every file, text of changed files only): never
    stale.
    """
    _check_limit(limit)
    parsed = _Query(query)
    now_ns = time.time_ns()
    sources: list[_Source] = []
    if agent is not None:
        sources += _agent_sources(agent)
    if include_user:
        sources += _user_sources()
    return _search_pool(parsed, sources, limit, now_ns)


def _rank_key_sort(hits: list[Hit]) -> list[Hit]:
    # More words, then newer file (mtime, then path descending), then line order.
    hits = sorted(hits, key=lambda h: h.line or 0)
    hits.sort(key=lambda h: (h.mtime_ns, h.path), reverse=True)
    hits.sort(key=lambda h: -h.score)
    return hits


def interleave(pools: Iterable[list[Hit]], limit: int, word_count: int) -> list[Hit]:
    """Merge ranked pools so the best entry of each stands before the second of any
    (SPEC §6.2). When any pool has an entry with every word, entries missing one are
    dropped from all pools (all words first holds across scopes too)."""
    pools = [pool for pool in pools if pool]
    if any(hit.score == word_count for pool in pools for hit in pool):
        pools = [[hit for hit in pool if hit.score == word_count] for pool in pools]
    merged: list[Hit] = []
    depth = max((len(pool) for pool in pools), default=0)
    for round_index in range(depth):
        merged += _rank_key_sort([pool[round_index] for pool in pools if round_index < len(pool)])
        if len(merged) >= limit:
            break
    return merged[:limit]


def search_all(query: str, *, agent_id: str | None = None, limit: int = DEFAULT_LIMIT) -> list[Hit]:
    """GET /api/memory/search (SPEC §6.2). With agent_id: that agent's files and the user
    scope, as `search` ranks them. Without: every agent's results and the user scope's,
    each ranked on its own and interleaved by rank. Raises NotFound for an unknown agent,
    InvalidInput as `search` does."""
    _check_limit(limit)
    return _search_all(query, agent_id=agent_id, limit=limit)


def _search_all(query: str, *, agent_id: str | None, limit: int) -> list[Hit]:
    from memory.agents import get_agent_or_404

    agent = get_agent_or_404(agent_id) if agent_id is not None else None
    parsed = _Query(query)
    now_ns = time.time_ns()
    if agent is not None:
        return _search_pool(parsed, _agent_sources(agent) + _user_sources(), limit, now_ns)
    pools = [
        _search_pool(parsed, _agent_sources(agent), limit, now_ns) for agent in Agent.objects.all()
    ]
    pools.append(_search_pool(parsed, _user_sources(), limit, now_ns))
    return interleave(pools, limit, len(parsed.words))


# How many entries a window of results counts at most: past this the count is "1,000+".
COUNT_CAP = 1000


@dataclass(frozen=True)
class Window:
    """One page of search_all's results: `hits[offset:offset + limit]` of `total` found,
    `total` counted up to COUNT_CAP (`capped` when there may be more)."""

    hits: list[Hit]
    total: int
    capped: bool
    offset: int
    limit: int


def search_window(
    query: str,
    *,
    agent_id: str | None = None,
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
    count_up_to: int = COUNT_CAP,
) -> Window:
    """A page of `search_all`'s ranked results and how many there are, for lists a person
    pages through (the management pages, `GET /api/memory/search?offset=`). The ranking
    is exactly search_all's; the count is exact up to `count_up_to` (then `capped`), so a
    word found on every line of ten years of notes still answers in one pass.
    Raises InvalidInput as search_all does, and for a negative offset."""
    _check_limit(limit)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInput("offset must be a whole number, 0 or more.")
    wanted = max(count_up_to, offset + limit) + 1
    found = _search_all(query, agent_id=agent_id, limit=wanted)
    capped = len(found) >= wanted
    if capped:
        found = found[: wanted - 1]
    return Window(found[offset : offset + limit], len(found), capped, offset, limit)


def format_hit(hit: Hit) -> str:
    """`[<path>:<line>] <text>`, or `[<path>] <text>` for a fact."""
    where = hit.path if hit.line is None else f"{hit.path}:{hit.line}"
    return f"[{where}] {hit.text}"


def format_hits(hits: list[Hit]) -> str:
    """The tool's text: one hit per line, best first ("" when there are none)."""
    return "\n".join(format_hit(hit) for hit in hits)
