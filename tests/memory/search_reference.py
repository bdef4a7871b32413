"""The §6.1 rules of memory_search written out the slow, obvious way: every file of the
scope read, folded and split into entries on every call, every entry weighed, nothing
cached or indexed.

Tests compare memory.search (which answers from an index) with this, so the index can
only make search faster, never change what it finds. Only the rules themselves are shared:
memory.text (the folding, the words, the blocks), memory.query (what a query says: its
words, their order, its dates) and memory.ranking (the formula an entry scores by).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from memory import ranking, text
from memory.query import Query


@dataclass
class Entry:
    path: str  # as shown: relative to the agent dir, or users/owner/facts/<name>.md
    first: int | None  # 1-based; None for a fact
    last: int | None
    words: list[str]  # folded, in order, with repeats
    text: str
    rank: tuple[int, str]  # (ns, path): newer first
    day: dt.date | None = None  # a dated note's day
    heading: list[str] = field(default_factory=list)  # folded words of its heading or title
    before: Entry | None = None  # the entry before it in its file
    after: Entry | None = None

    @property
    def tokens(self) -> set[str]:
        """Its words and its heading's: what it holds."""
        return set(self.words) | set(self.heading)


def _day_start_ns(day: dt.date) -> int:
    # The day's start in UTC: the same in every process, whatever its zone (SPEC §6.1).
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()) * 10**9


def _day(shown: str) -> dt.date | None:
    if shown.startswith("memory/") and shown.count("/") == 1:
        found = text.note_day(shown[len("memory/") :])
        if found is not None:
            return found[0]
    return None


def _rank(shown: str, mtime_ns: int) -> tuple[int, str]:
    day = _day(shown)
    if day is not None:
        return (_day_start_ns(day), shown)
    return (mtime_ns, shown)


def _blank_machine_block(original: str) -> str:
    lines = original.split("\n")
    inside = False
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped == text.MACHINE_BLOCK_START:
            inside = text.MACHINE_BLOCK_END in (s.strip() for s in lines[index + 1 :])
            lines[index] = ""
        elif stripped == text.MACHINE_BLOCK_END:
            inside = False
            lines[index] = ""
        elif inside:
            lines[index] = ""
    return "\n".join(lines)


def _words(folded: str) -> list[str]:
    return text._WORD_RE.findall(folded)


def file_entries(shown: str, original: str, mtime_ns: int) -> list[Entry]:
    searched = _blank_machine_block(original)
    lines = searched.split("\n")
    shown_lines = original.split("\n")
    folded = text.fold(searched).split("\n")
    rank = _rank(shown, mtime_ns)
    title = text.page_title(original)
    entries: list[Entry] = []
    for first, last, heading in text.blocks(lines):
        if first == last and re.fullmatch(r"#+\s+\d{4}-\d{2}-\d{2}\s*", lines[first].strip()):
            continue  # a date heading is no entry
        words: list[str] = []
        for index in range(first, last + 1):
            words += _words(folded[index])
        body = " ".join(line.strip() for line in shown_lines[first : last + 1] if line.strip())
        entry = Entry(shown, first + 1, last + 1, words, body, rank, _day(shown))
        shown_heading = lines[heading].strip() if heading >= 0 else title
        if not re.fullmatch(r"#+\s+\d{4}-\d{2}-\d{2}\s*", shown_heading):  # a note's date
            entry.heading = _words(text.fold(shown_heading))
        if entries:
            entry.before, entries[-1].after = entries[-1], entry
        entries.append(entry)
    return entries


def fact_entry(shown: str, original: str, mtime_ns: int) -> Entry | None:
    meta, body = text.parse_frontmatter(original)
    description = str(meta.get("description") or "").strip()
    body = body.strip()
    name = shown.rsplit("/", 1)[-1].removesuffix(".md").replace("-", " ")
    tokens = _words(text.fold(f"{name}\n{description}\n{body}"))
    if not tokens:
        return None
    flat = text.fold_single_line(body)
    shown_text = f"{description} — {flat}" if description and flat else description or flat
    return Entry(shown, None, None, tokens, shown_text, (mtime_ns, shown))


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def scope_entries(home: Path, agent_dir: str | None, *, include_user: bool) -> list[Entry]:
    entries: list[Entry] = []
    if agent_dir is not None:
        base = home / agent_dir if agent_dir else home
        memory_md = base / "MEMORY.md"
        if _regular(memory_md):
            entries += file_entries(
                "MEMORY.md", memory_md.read_text(encoding="utf-8"), memory_md.stat().st_mtime_ns
            )
        notes = base / "memory"
        if notes.is_dir() and not notes.is_symlink():
            for dirpath, dirnames, filenames in os.walk(notes):
                dirnames[:] = [
                    d
                    for d in dirnames
                    if not d.startswith(".") and not (Path(dirpath) / d).is_symlink()
                ]
                for name in filenames:
                    path = Path(dirpath) / name
                    if name.startswith(".") or not name.endswith(".md") or not _regular(path):
                        continue
                    shown = path.relative_to(base).as_posix()
                    entries += file_entries(
                        shown, path.read_text(encoding="utf-8"), path.stat().st_mtime_ns
                    )
    if include_user:
        facts = home / "users/owner/facts"
        if facts.is_dir():
            for path in sorted(facts.glob("*.md")):
                name = path.name[:-3]
                if not _regular(path) or len(name) > 64 or not text.FACT_NAME_RE.fullmatch(name):
                    continue
                entry = fact_entry(
                    f"users/owner/facts/{path.name}",
                    path.read_text(encoding="utf-8"),
                    path.stat().st_mtime_ns,
                )
                if entry is not None:
                    entries.append(entry)
    return entries


def matches(word: str, token: str) -> bool:
    return token == word if text.is_short(word) else word in token


def counted(word: str, vocabulary: set[str], entries: list[Entry]) -> set[str]:
    """The words of the text a query word counts (SPEC §6.1): a word of four or more
    letters the words it starts when some entry holds one, else those it stands inside."""
    found = {token for token in vocabulary if matches(word, token)}
    if not text.is_short(word) and not text.is_spaceless(word):
        starts = {token for token in found if token.startswith(word)}
        if any(not entry.tokens.isdisjoint(starts) for entry in entries):
            return starts
    return found


def weight(df: int, total: int) -> int:
    """The word's weight in thousandths: BM25's idf of its frequency in the scope."""
    return round(1000 * math.log(1 + (total - df + 0.5) / (df + 0.5)))


@dataclass
class Found:
    path: str
    first: int | None
    last: int | None
    score: int  # words matched
    weight: float  # the score it ranked by (memory.ranking.shown)
    text: str


def reference_search(query: str, entries: list[Entry], *, limit: int = 12) -> list[Found]:
    """SPEC §6.1: the best POOL entries by the weights of the query words they hold (newer
    first among equals) and the best POOL of the notes of the days the query names, with
    the entries after and before each, ranked by memory.ranking's score (an entry, or a
    share of the one before or after it when more); past them, the rest by those
    weights."""
    parsed = Query.parse(query)
    words = [word.text for word in parsed.words]
    total = len(entries)
    vocabulary = {token for entry in entries for token in entry.tokens}
    forms_of = [counted(word, vocabulary, entries) for word in words]
    weights = [
        weight(sum(1 for e in entries for t in e.tokens if t in forms), total) for forms in forms_of
    ]
    forms: dict[str, tuple[int, ...]] = {}
    for index, found in enumerate(forms_of):
        for token in found:
            forms[token] = (*forms.get(token, ()), index)
    average = sum(len(e.words) for e in entries) / total if total else 0.0
    pairs = ranking.pairs_of(parsed.sequence, words)

    def held(entry: Entry) -> tuple[int, ...]:
        return tuple(i for i, found in enumerate(forms_of) if not entry.tokens.isdisjoint(found))

    def by_rarity(entry: Entry) -> tuple:
        matched = held(entry)
        return (bool(matched), sum(weights[i] for i in matched), entry.rank, -(entry.first or 0))

    first_pass = sorted((e for e in entries if held(e)), key=by_rarity, reverse=True)
    dated = [
        e for e in entries if e.day is not None and any(s.holds(e.day) for s in parsed.dates.spans)
    ]
    date_weight = weight(len(dated), total) if dated else 0
    days = sorted(dated, key=by_rarity, reverse=True)[: ranking.POOL]
    head: list[Entry] = []
    for entry in [*first_pass[: ranking.POOL], *days]:
        if all(entry is not other for other in head):
            head.append(entry)
    for entry in list(head):
        for near in (entry.after, entry.before):
            if near is not None and all(near is not other for other in head):
                head.append(near)
    # A hit holds a query word, or stands in a note of a day the query names.
    head = [e for e in head if held(e) or any(e is other for other in dated)]

    def own(entry: Entry) -> float:
        in_days = any(entry is other for other in dated)
        return ranking.score(
            entry.words,
            forms,
            weights,
            pairs,
            average,
            date_weight if in_days else 0,
            entry.heading,
        )

    scores = [
        ranking.with_neighbour(
            own(e),
            own(e.before) if e.before is not None else 0.0,
            own(e.after) if e.after is not None else 0.0,
            holds_a_word=bool(held(e)),
        )
        for e in head
    ]
    ordered = sorted(
        zip(head, scores, strict=True),
        key=lambda item: (ranking.shown(item[1]), item[0].rank, -(item[0].first or 0)),
        reverse=True,
    )
    ordered += [
        (e, own(e))
        for e in first_pass[ranking.POOL : max(limit, ranking.POOL)]
        if all(e is not other for other in head)
    ]
    return [
        Found(e.path, e.first, e.last, len(held(e)), ranking.shown(s), text.cap(e.text, 700))
        for e, s in ordered[:limit]
    ]
