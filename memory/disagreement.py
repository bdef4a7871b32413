"""A proposed line that disagrees with a line the file already holds (SPEC §7): the same
subject — most of their key words shared — but a different day, number or name, like the
demo's "… mỗi thứ Sáu trước 17:00" against "… mỗi thứ Năm trước 17:00". The card shows the
existing line beside the proposed one so the owner sees the contradiction before approving.

Pure and cheap: words are folded (case and Vietnamese marks do not matter, `memory.text.
fold`), a Vietnamese day (`thứ Năm`, `Chủ nhật`) is one word, a number keeps its `:` `/`
`.` (`17:00`, `140/90`), and a trailing confirmation date `(YYYY-MM-DD)` and the list
marker are left out. It only points at a line to look at; nothing is refused for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from memory.text import fold, is_heading

_TOKEN = re.compile(r"\d+(?:[:/.,h]\d+)*|\w+", re.UNICODE)
_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+")
_CONFIRMED = re.compile(r"\s*\(\d{4}-\d{2}-\d{2}\)\s*$")

_VI_ORDINALS = {"hai", "ba", "tu", "nam", "sau", "bay"}  # thứ Hai … thứ Bảy, folded
_EN_DAYS = {
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
}
_EN_MONTHS = {
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
}
# Words that say little about a line's subject (folded): English, and Vietnamese without
# its marks. A word of a Vietnamese day is merged before these apply ("thứ Sáu" is a day,
# a lone "sau" is "after").
_STOP = {
    *"a an the to of in on at for and or is are be by with every each from now before after "
    "than then this that it its".split(),
    *"va cua cho moi la o tu den vao truoc sau khi thi nay do voi cac nhung mot se da dang "
    "duoc".split(),
}

DAY, NUMBER, NAME, MONTH = "day", "number", "name", "month"


@dataclass(frozen=True)
class Word:
    key: str  # folded
    shown: str  # as written
    kind: str  # DAY, NUMBER, NAME, MONTH or "" (any other word)


@dataclass(frozen=True)
class Disagreement:
    """An existing line (1-based `number` in its file) that says something else about the
    same subject as the proposed `line`: `differs` pairs what it says with what the
    proposed line says, per kind of value (day, number, name, month)."""

    line: str
    existing: str
    number: int
    differs: tuple[tuple[str, str, str], ...]  # (kind, existing value, proposed value)


def _content(line: str) -> str:
    return _CONFIRMED.sub("", _MARKER.sub("", line)).strip()


def words_of(line: str) -> list[Word]:
    """The line's words, folded, with the kind of value each one is."""
    raw = _TOKEN.findall(_content(line))
    out: list[Word] = []
    index = 0
    while index < len(raw):
        token = raw[index]
        key = fold(token)
        following = fold(raw[index + 1]) if index + 1 < len(raw) else ""
        if key == "thu" and following in _VI_ORDINALS:
            out.append(Word(f"thu {following}", f"{token} {raw[index + 1]}", DAY))
            index += 2
            continue
        if key == "chu" and following == "nhat":
            out.append(Word("chu nhat", f"{token} {raw[index + 1]}", DAY))
            index += 2
            continue
        day = key[:-1] if key.endswith("s") and key[:-1] in _EN_DAYS else key
        if day in _EN_DAYS:
            out.append(Word(day, token, DAY))
        elif key in _EN_MONTHS:
            out.append(Word(key, token, MONTH))
        elif key[:1].isdigit():
            out.append(Word(key, token, NUMBER))
        elif index > 0 and token[:1].isupper():
            out.append(Word(key, token, NAME))
        else:
            out.append(Word(key, token, ""))
        index += 1
    return out


def _key_words(words: list[Word]) -> set[str]:
    return {word.key for word in words if word.kind or word.key not in _STOP}


def disagreement(line: str, existing: str) -> tuple[tuple[str, str, str], ...]:
    """What two lines say differently about one subject: (kind, existing value, proposed
    value) for each kind of value they both state differently; () when they do not
    disagree (another subject, the same values, or one only adds to the other)."""
    new, old = words_of(line), words_of(existing)
    new_keys, old_keys = _key_words(new), _key_words(old)
    only_new, only_old = new_keys - old_keys, old_keys - new_keys
    shared = new_keys & old_keys
    if not only_new or not only_old or len(only_new) > 3 or len(only_old) > 3:
        return ()
    if len(shared) < 2 or len(shared) * 2 < min(len(new_keys), len(old_keys)):
        return ()
    differs = []
    for kind in (DAY, NUMBER, NAME, MONTH):
        said_new = [w.shown for w in new if w.kind == kind and w.key in only_new]
        said_old = [w.shown for w in old if w.kind == kind and w.key in only_old]
        if said_new and said_old:
            differs.append((kind, ", ".join(said_old), ", ".join(said_new)))
    # Every word that differs must be such a value: "run 5 km" against "swim 5 km" is
    # another subject, not a contradiction.
    valued = {w.key for w in new + old if w.kind}
    if not differs or not (only_new | only_old) <= valued:
        return ()
    return tuple(differs)


def disagreements(lines: Iterable[str], text: str) -> list[Disagreement]:
    """Each proposed line against every content line of `text` (headings and blank lines
    left out): the pairs that disagree, in the order of the proposed lines."""
    existing = [
        (number, old)
        for number, old in enumerate(text.splitlines(), 1)
        if old.strip() and not is_heading(old)
    ]
    found = []
    for line in lines:
        for number, old in existing:
            if _content(old) == _content(line):
                continue
            differs = disagreement(line, old)
            if differs:
                found.append(Disagreement(line, old, number, differs))
    return found
