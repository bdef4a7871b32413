"""The §6.1 rules of memory_search written out the slow, obvious way: every file of the
scope read, folded and split into entries on every call, nothing cached or indexed.

Tests compare memory.search (which answers from an index) with this, so the index can
only make search faster, never change what it finds. Only memory.text is shared (the
folding, the words, the blocks): those are the rules themselves.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from dataclasses import dataclass
from pathlib import Path

from memory import text


@dataclass
class Entry:
    path: str  # as shown: relative to the agent dir, or users/owner/facts/<name>.md
    first: int | None  # 1-based; None for a fact
    last: int | None
    tokens: set[str]
    text: str
    rank: tuple[int, str]  # (ns, path): newer first


def _day_start_ns(day: dt.date) -> int:
    # The day's start in UTC: the same in every process, whatever its zone (SPEC §6.1).
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()) * 10**9


def _rank(shown: str, mtime_ns: int) -> tuple[int, str]:
    if shown.startswith("memory/") and shown.count("/") == 1:
        found = text.note_day(shown[len("memory/") :])
        if found is not None:
            return (_day_start_ns(found[0]), shown)
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


def _tokens(folded: str) -> set[str]:
    return set(text._WORD_RE.findall(folded))


def file_entries(shown: str, original: str, mtime_ns: int) -> list[Entry]:
    searched = _blank_machine_block(original)
    lines = searched.split("\n")
    shown_lines = original.split("\n")
    folded = text.fold(searched).split("\n")
    rank = _rank(shown, mtime_ns)
    entries = []
    for first, last, _heading in text.blocks(lines):
        tokens: set[str] = set()
        for index in range(first, last + 1):
            tokens |= _tokens(folded[index])
        body = " ".join(line.strip() for line in shown_lines[first : last + 1] if line.strip())
        entries.append(Entry(shown, first + 1, last + 1, tokens, body, rank))
    return entries


def fact_entry(shown: str, original: str, mtime_ns: int) -> Entry | None:
    meta, body = text.parse_frontmatter(original)
    description = str(meta.get("description") or "").strip()
    body = body.strip()
    tokens = _tokens(text.fold(f"{description}\n{body}"))
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


def weight(df: int, total: int) -> int:
    """The word's weight in thousandths: BM25's idf of its frequency in the scope."""
    return round(1000 * math.log(1 + (total - df + 0.5) / (df + 0.5)))


@dataclass
class Found:
    path: str
    first: int | None
    last: int | None
    score: int  # words matched
    weight: int  # their weights added up
    text: str


def reference_search(
    query: str, entries: list[Entry], *, limit: int = 12, drop_partial: bool = True
) -> list[Found]:
    words = text.words(query)
    total = len(entries)
    weights = [
        weight(sum(1 for e in entries for t in e.tokens if matches(word, t)), total)
        for word in words
    ]
    scored = []
    for entry in entries:
        matched = [
            index
            for index, word in enumerate(words)
            if any(matches(word, token) for token in entry.tokens)
        ]
        if matched:
            scored.append((entry, len(matched), sum(weights[i] for i in matched)))
    if drop_partial and any(count == len(words) for _, count, _ in scored):
        scored = [item for item in scored if item[1] == len(words)]
    scored.sort(key=lambda item: item[0].first or 0)
    scored.sort(key=lambda item: item[0].rank, reverse=True)
    scored.sort(key=lambda item: item[2], reverse=True)
    return [
        Found(e.path, e.first, e.last, count, total_weight, text.cap(e.text, 700))
        for e, count, total_weight in scored[:limit]
    ]
