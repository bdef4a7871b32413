"""May an autonomous agent's rewrite of MEMORY.md apply by itself? (SPEC §8)

Decided by code, never by the model: a pure function of the old text, the new text and
the dates the rewrite may carry. No IO, no database.

A rewrite applies at once when, line by line (blank lines ignored, trailing spaces
ignored), every existing line is still there, in the same order, with the same content —
its trailing `(YYYY-MM-DD)` may change or appear or go — and new lines may be inserted
anywhere. It is held for a person when a line is dropped, its content changed, lines were
reordered (a moved line is dropped in one place and added in another: held), or the new
text carries a date (anywhere in it, `YYYY-MM-DD`) that is not in the old MEMORY.md, not
the date of a note the run read, and not today.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# A line's confirmation date: `(YYYY-MM-DD)` at its very end.
TRAILING_DATE_RE = re.compile(r"\s*\((\d{4}-\d{2}-\d{2})\)\s*$")
# Any date written in the text.
DATE_RE = re.compile(r"(?<![0-9])(\d{4}-\d{2}-\d{2})(?![0-9])")


@dataclass(frozen=True)
class Decision:
    """`apply` True → apply now; False → hold, with `reasons` saying why."""

    apply: bool
    reasons: list[str] = field(default_factory=list)
    unknown_dates: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    redated: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    changed: list[tuple[str, str]] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)


def split_date(line: str) -> tuple[str, str | None]:
    """(content without the trailing date, the date or None)."""
    match = TRAILING_DATE_RE.search(line)
    if match is None:
        return line.rstrip(), None
    return line[: match.start()].rstrip(), match.group(1)


def dates_in(text: str) -> set[str]:
    """Every real calendar date written as YYYY-MM-DD in the text."""
    found = set()
    for candidate in DATE_RE.findall(text):
        try:
            dt.date.fromisoformat(candidate)
        except ValueError:
            continue
        found.add(candidate)
    return found


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def decide(old: str, new: str, *, allowed_dates: Iterable[str | dt.date] = ()) -> Decision:
    """Compare old and new MEMORY.md. `allowed_dates` are the dates of the notes read
    and today; dates already in `old` are always allowed."""
    old_lines, new_lines = _lines(old), _lines(new)
    old_keys = [split_date(line)[0] for line in old_lines]
    new_keys = [split_date(line)[0] for line in new_lines]

    added: list[str] = []
    dropped: list[str] = []
    changed: list[tuple[str, str]] = []
    redated: list[str] = []
    matcher = difflib.SequenceMatcher(a=old_keys, b=new_keys, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for old_line, new_line in zip(old_lines[i1:i2], new_lines[j1:j2], strict=True):
                if old_line != new_line:
                    redated.append(new_line)
        elif tag == "insert":
            added.extend(new_lines[j1:j2])
        elif tag == "delete":
            dropped.extend(old_lines[i1:i2])
        else:  # replace: pair lines up as changes; leftovers are drops or additions
            pairs = min(i2 - i1, j2 - j1)
            changed.extend(zip(old_lines[i1 : i1 + pairs], new_lines[j1 : j1 + pairs], strict=True))
            dropped.extend(old_lines[i1 + pairs : i2])
            added.extend(new_lines[j1 + pairs : j2])

    # A line that vanished in one place and reappears elsewhere was moved.
    added_keys = {split_date(line)[0] for line in added}
    added_keys |= {split_date(after)[0] for _, after in changed}
    moved = [line for line in dropped if split_date(line)[0] in added_keys]
    moved += [before for before, _ in changed if split_date(before)[0] in set(new_keys)]
    dropped = [line for line in dropped if line not in moved]
    changed = [(before, after) for before, after in changed if before not in moved]

    allowed = dates_in(old) | {
        value.isoformat() if isinstance(value, dt.date) else str(value) for value in allowed_dates
    }
    unknown = sorted(dates_in(new) - allowed)

    reasons: list[str] = []
    for line in dropped:
        reasons.append(f"drops a line: {line}")
    for before, after in changed:
        reasons.append(f"changes a line: {before} → {after}")
    for line in moved:
        reasons.append(f"moves a line: {line}")
    for date in unknown:
        reasons.append(
            f"carries the date {date}, which is not in MEMORY.md, not the date of a note "
            "read, and not today"
        )
    return Decision(
        apply=not reasons,
        reasons=reasons,
        unknown_dates=unknown,
        added=added,
        redated=redated,
        dropped=dropped,
        changed=changed,
        moved=moved,
    )
