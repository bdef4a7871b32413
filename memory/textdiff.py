"""Bounded text diffs: lines, and words inside a changed line (pure, no IO).

Python's difflib is quadratic in repeated lines (25,000 identical lines and one new one
took minutes); this module uses Google's diff-match-patch (Myers' O(ND) with the common
prefix and suffix taken off first, in C-speed string comparisons) on lines mapped to single
characters, with a deadline: past it the library answers a correct but coarser diff (a
block removed and added) instead of running on. So a diff of two 2 MB files costs at most
about the deadline, and an append to a huge file costs a prefix comparison.

Opcodes are difflib-shaped `(tag, i1, i2, j1, j2)` with tag in equal/replace/delete/insert,
so callers group and render them as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from diff_match_patch import diff_match_patch

LINE_DIFF_SECONDS = 0.25  # the deadline of one line diff
WORD_DIFF_SECONDS = 0.02  # of the word diff inside one pair of lines
MAX_WORD_DIFF_CHARS = 4_000  # longer lines are shown changed whole, without word marks

_DELETE, _EQUAL, _INSERT = -1, 0, 1
_TOKEN_RE = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)
_SURROGATES = range(0xD800, 0xE000)

Opcode = tuple[str, int, int, int, int]


def _engine(seconds: float) -> diff_match_patch:
    engine = diff_match_patch()
    engine.Diff_Timeout = seconds
    return engine


def _encode(*sequences: Sequence[str]) -> list[str]:
    """Each sequence of items (lines, words) as a string of one character per item, equal
    items getting equal characters."""
    codes: dict[str, str] = {}
    encoded = []
    for items in sequences:
        chars = []
        for item in items:
            code = codes.get(item)
            if code is None:
                number = len(codes) + 1
                if number >= _SURROGATES.start:
                    number += len(_SURROGATES)
                code = codes[item] = chr(number)
            chars.append(code)
        encoded.append("".join(chars))
    return encoded


def _opcodes(diffs: list[tuple[int, str]]) -> list[Opcode]:
    """diff-match-patch's (op, text) runs as difflib-shaped opcodes over item indexes."""
    result: list[Opcode] = []
    i = j = 0
    pending_delete = 0
    pending_insert = 0

    def flush() -> None:
        nonlocal i, j, pending_delete, pending_insert
        if pending_delete and pending_insert:
            tag = "replace"
        elif pending_delete:
            tag = "delete"
        elif pending_insert:
            tag = "insert"
        else:
            return
        result.append((tag, i, i + pending_delete, j, j + pending_insert))
        i += pending_delete
        j += pending_insert
        pending_delete = pending_insert = 0

    for op, text in diffs:
        if op == _EQUAL:
            flush()
            result.append(("equal", i, i + len(text), j, j + len(text)))
            i += len(text)
            j += len(text)
        elif op == _DELETE:
            pending_delete += len(text)
        else:
            pending_insert += len(text)
    flush()
    return result


def line_opcodes(
    old: Sequence[str], new: Sequence[str], *, seconds: float = LINE_DIFF_SECONDS
) -> list[Opcode]:
    """Opcodes turning the lines `old` into `new`, within about `seconds`."""
    if list(old) == list(new):
        return [("equal", 0, len(old), 0, len(new))] if old else []
    a, b = _encode(old, new)
    diffs = _engine(seconds).diff_main(a, b, False)
    return _opcodes(diffs)


def grouped(opcodes: list[Opcode], context: int = 3) -> list[list[Opcode]]:
    """The opcodes in hunks: every change with up to `context` equal items around it, hunks
    whose context would touch merged into one. No hunk when nothing changed."""
    groups: list[list[Opcode]] = []
    current: list[Opcode] = []
    changes = [op for op in opcodes if op[0] != "equal"]
    if not changes:
        return []
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag != "equal":
            current.append((tag, i1, i2, j1, j2))
            continue
        first = index == 0
        last = index == len(opcodes) - 1
        if first:
            start = max(i1, i2 - context)
            current.append((tag, start, i2, j1 + (start - i1), j2))
            continue
        if last:
            current.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            continue
        if i2 - i1 > 2 * context:
            current.append((tag, i1, i1 + context, j1, j1 + context))
            groups.append(current)
            current = [(tag, i2 - context, i2, j2 - context, j2)]
        else:
            current.append((tag, i1, i2, j1, j2))
    if any(op[0] != "equal" for op in current):
        groups.append(current)
    return [[op for op in group if op[1] != op[2] or op[3] != op[4]] for group in groups]


def changed_line_count(opcodes: list[Opcode]) -> tuple[int, int]:
    """(lines removed, lines added)."""
    removed = sum(i2 - i1 for tag, i1, i2, _, _ in opcodes if tag in ("replace", "delete"))
    added = sum(j2 - j1 for tag, _, _, j1, j2 in opcodes if tag in ("replace", "insert"))
    return removed, added


def word_segments(old: str, new: str) -> tuple[list[tuple[bool, str]], list[tuple[bool, str]]]:
    """The two lines cut into (changed?, text) runs of words, spaces and punctuation, for
    highlighting what changed inside a changed line. Lines longer than
    MAX_WORD_DIFF_CHARS come back as one changed run each."""
    if len(old) > MAX_WORD_DIFF_CHARS or len(new) > MAX_WORD_DIFF_CHARS:
        return [(True, old)], [(True, new)]
    old_tokens = _TOKEN_RE.findall(old)
    new_tokens = _TOKEN_RE.findall(new)
    a, b = _encode(old_tokens, new_tokens)
    engine = _engine(WORD_DIFF_SECONDS)
    diffs = engine.diff_main(a, b, False)
    engine.diff_cleanupSemantic(diffs)
    left: list[tuple[bool, str]] = []
    right: list[tuple[bool, str]] = []
    i = j = 0
    for op, text in diffs:
        count = len(text)
        if op == _EQUAL:
            left.append((False, "".join(old_tokens[i : i + count])))
            right.append((False, "".join(new_tokens[j : j + count])))
            i += count
            j += count
        elif op == _DELETE:
            left.append((True, "".join(old_tokens[i : i + count])))
            i += count
        else:
            right.append((True, "".join(new_tokens[j : j + count])))
            j += count
    return _merge(left), _merge(right)


def _merge(runs: list[tuple[bool, str]]) -> list[tuple[bool, str]]:
    merged: list[tuple[bool, str]] = []
    for changed, text in runs:
        if not text:
            continue
        if merged and merged[-1][0] == changed:
            merged[-1] = (changed, merged[-1][1] + text)
        else:
            merged.append((changed, text))
    return merged


def lines_of(text: str | None) -> list[str]:
    """The lines of a text with their line endings (so joining them gives the text back)."""
    return (text or "").splitlines(keepends=True)


def change_hunks(old: str | None, new: str | None) -> list[tuple[int, int, int, int]]:
    """Each contiguous change between the two texts as (i1, i2, j1, j2): old lines
    i1:i2 become new lines j1:j2 — the hunks a person keeps or refuses one by one."""
    return [
        (i1, i2, j1, j2)
        for tag, i1, i2, j1, j2 in line_opcodes(lines_of(old), lines_of(new))
        if tag != "equal"
    ]


def apply_hunks(old: str | None, new: str | None, kept: Sequence[Sequence[int]]) -> str:
    """`old` with only the `kept` hunks of `new` applied: each (i1, i2, j1, j2) replaces old
    lines i1:i2 by new lines j1:j2; everything else keeps the old text. Raises ValueError
    for hunks out of bounds, overlapping or out of order."""
    old_lines, new_lines = lines_of(old), lines_of(new)
    out: list[str] = []
    position = 0
    last_j = 0
    for hunk in sorted((tuple(h) for h in kept), key=lambda h: (h[0], h[2])):
        if len(hunk) != 4 or not all(isinstance(n, int) for n in hunk):
            raise ValueError("A hunk is four line numbers: [i1, i2, j1, j2].")
        i1, i2, j1, j2 = hunk
        if not (position <= i1 <= i2 <= len(old_lines) and last_j <= j1 <= j2 <= len(new_lines)):
            raise ValueError(f"Hunk {list(hunk)} is out of bounds or overlaps another.")
        out += old_lines[position:i1]
        out += new_lines[j1:j2]
        position, last_j = i2, j2
    out += old_lines[position:]
    return "".join(out)


def find_run(lines: Sequence[str], run: Sequence[str], *, near: int = 0) -> int | None:
    """Where the lines `run` stand together in `lines` (the start nearest to `near`), or
    None when they do not."""
    size = len(run)
    if not size:
        return None
    first = run[0]
    found = [
        start
        for start, line in enumerate(lines)
        if line == first and list(lines[start : start + size]) == list(run)
    ]
    return min(found, key=lambda start: (abs(start - near), start)) if found else None


# --- a three-way merge of lines -------------------------------------------------------------


@dataclass(frozen=True)
class MergedHunk:
    """One change of base → proposed, and whether it could be applied to the current text:
    old lines i1:i2 of the base become lines j1:j2 of the proposed text. A conflict also
    carries the current lines that changed what it would change (`current`)."""

    hunk: tuple[int, int, int, int]
    removed: list[str]
    added: list[str]
    applied: bool
    current: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Merged:
    text: str
    hunks: list[MergedHunk]

    @property
    def conflicts(self) -> list[MergedHunk]:
        return [hunk for hunk in self.hunks if not hunk.applied]


def _overlaps(hunk: tuple[int, int], change: tuple[int, int]) -> bool:
    """Whether a change of the proposal (base lines a1:a2) and one of the current text
    (base lines b1:b2) touch the same lines: they overlap, one inserts strictly inside the
    other's lines. Two insertions at the same place do not: both are kept, the current
    text's first (memory files grow at their end from every side)."""
    (a1, a2), (b1, b2) = hunk, change
    if a1 == a2 and b1 == b2:
        return False
    if a1 == a2:
        return b1 < a1 < b2
    if b1 == b2:
        return a1 < b1 < a2
    return a1 < b2 and b1 < a2


def merge3(base: str | None, proposed: str | None, current: str | None) -> Merged:
    """The proposed change of `base` re-applied on `current`, hunk by hunk, line by line:
    each change of base → proposed whose base lines the current text did not change is
    applied where those lines now stand; one that touches a line the current text changed
    is a conflict and left out. Lines both add at one place are all kept, the current
    text's first. Exact: a line is
    never matched approximately (diff-match-patch's patch_apply matches fuzzily and would
    apply a change over a line that now says something else). Pure."""
    old, new, now = lines_of(base), lines_of(proposed), lines_of(current)
    theirs = line_opcodes(old, now)
    changed = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in theirs if tag != "equal"]
    hunks: list[MergedHunk] = []
    edits: list[tuple[int, int, list[str]]] = []
    for tag, i1, i2, j1, j2 in line_opcodes(old, new):
        if tag == "equal":
            continue
        touching = [c for c in changed if _overlaps((i1, i2), (c[0], c[1]))]
        if touching:
            lines = [line for _, _, c1, c2 in touching for line in now[c1:c2]]
            hunks.append(MergedHunk((i1, i2, j1, j2), old[i1:i2], new[j1:j2], False, lines))
            continue
        start = _where(theirs, i1)
        stop = start if i1 == i2 else _where(theirs, i2, end=True)
        edits.append((start, stop, new[j1:j2]))
        hunks.append(MergedHunk((i1, i2, j1, j2), old[i1:i2], new[j1:j2], True))
    out = list(now)
    for start, stop, lines in sorted(edits, key=lambda edit: edit[0], reverse=True):
        out[start:stop] = lines
    return Merged("".join(out), hunks)


def _where(opcodes: list[Opcode], position: int, *, end: bool = False) -> int:
    """Where the line boundary `position` of the base stands in the other text of
    `opcodes`. Where the other text inserted lines at that very boundary, a change starting
    there goes after them and one ending there before them (`end`)."""
    found = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            if i1 <= position <= i2:
                found.append(j1 + position - i1)
            continue
        if position == i1:
            found.append(j1)
        if position == i2:
            found.append(j2)
    if not found:
        return 0
    return min(found) if end else max(found)
