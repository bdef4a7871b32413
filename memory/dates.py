"""The dates a search query names (SPEC §6.1, dates): read from the folded query, so marks
and case never matter (`tháng 1 năm 2023` and `thang 1 nam 2023` are one date).

What is understood, in English, Vietnamese, Chinese and Japanese:

- a day: `2023-01-05`, `2023/01/05`, `5 January 2023`, `January 5, 2023`, `5th of Jan 2023`,
  `ngày 5 tháng 1 năm 2023`, `ngày 5/1/2023`, `2023年1月5日`; without a year (`5 January`,
  `ngày 5 tháng 1`, `1月5日`) it is that day of any year;
- a month: `2023-01`, `January 2023`, `Jan 2023`, `tháng 1 năm 2023`, `tháng 1/2023`,
  `1/2023`, `2023年1月`; a month named alone (`in June`, `tháng 6`) is that month of any
  year — `May` and `March` only next to a number or after `in`, as they are words too;
- a year: `2023`, `năm 2023`, `2023年` (from 1900 to 2199);
- relative to the owner's today (memory.clock): yesterday, today, tonight, last night,
  this morning, the day before yesterday, last/this week (weeks start on Monday), last/this
  month, last/this year, `3 days ago`, `two weeks ago`; `hôm qua`, `hôm nay`, `hôm kia`,
  `tối qua`, `sáng nay`, `tuần trước`/`tuần rồi`/`tuần qua`, `tuần này`, `tháng trước`,
  `tháng này`, `năm ngoái`/`năm trước`, `năm nay`, `3 ngày trước`; 昨天, 今天, 前天, 上周,
  本周, 上个月, 这个月, 去年, 今年 (and their Japanese forms).

`find(text, today)` returns the spans and the query words they were written with (those
words say the date, not what the note is about).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from memory import text as text_rules

FIRST_YEAR = 1900
LAST_YEAR = 2199


@dataclass(frozen=True)
class Span:
    """Days a query names: from `first` to `last` (inclusive), or — for a month or day
    named without a year — `month` (and `day`) of any year."""

    first: dt.date | None = None
    last: dt.date | None = None
    month: int | None = None
    day: int | None = None

    def holds(self, day: dt.date) -> bool:
        if self.first is not None and self.last is not None:
            return self.first <= day <= self.last
        if self.month is not None and day.month != self.month:
            return False
        return self.day is None or day.day == self.day

    def describe(self) -> str:
        """`2023-01-05`, `2023-01-01…2023-01-31`, `--06` (June of any year), `--06-05`."""
        if self.first is not None and self.last is not None:
            if self.first == self.last:
                return self.first.isoformat()
            return f"{self.first.isoformat()}…{self.last.isoformat()}"
        if self.day is not None:
            return f"--{self.month:02d}-{self.day:02d}"
        return f"--{self.month:02d}"


@dataclass(frozen=True)
class Found:
    spans: tuple[Span, ...]
    words: frozenset[str]  # the folded words the dates were written with


_MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
# Month names that are everyday words too: a date only beside a number or after "in".
_AMBIGUOUS = {"may", "march", "mar", "jan", "dec", "sept"}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{4})"
_COUNT = r"(\d{1,3}|" + "|".join(_NUMBERS) + ")"
_B = r"(?<![^\W_])"  # no letter or digit just before
_E = r"(?![^\W_])"  # nor just after


# Each pattern, in the order tried: (regex over folded text, what it names).
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(_B + r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})" + _E), "ymd"),
    (re.compile(_B + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+" + _YEAR + _E), "dmy"),
    (re.compile(_B + _MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR + _E), "mdy"),
    (
        re.compile(_B + r"ngay\s+(\d{1,2})\s+thang\s+(\d{1,2})(?:\s*,?\s*nam\s+(\d{4}))?" + _E),
        "vi-dmy",
    ),
    (re.compile(_B + r"ngay\s+(\d{1,2})[/-](\d{1,2})(?:[/-](\d{4}))?" + _E), "vi-dmy"),
    (re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号號]"), "ymd"),
    (re.compile(_B + r"(\d{4})[-/](\d{1,2})" + _E + r"(?![-/.]\d)"), "ym"),
    (re.compile(_B + _MONTH + r",?\s+(?:of\s+)?" + _YEAR + _E), "my"),
    (re.compile(_B + r"thang\s+(\d{1,2})(?:\s*,?\s*(?:nam\s+|/|-)\s*(\d{4}))?" + _E), "vi-my"),
    (re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月"), "ym"),
    (re.compile(_B + r"(\d{1,2})/(\d{4})" + _E), "my-num"),
    (re.compile(_B + _DAY + r"\s+(?:of\s+)?" + _MONTH + _E), "dm"),
    (re.compile(_B + _MONTH + r"\s+" + _DAY + _E), "md"),
    (re.compile(r"(\d{1,2})\s*月\s*(\d{1,2})\s*[日号號]"), "md-num"),
    (re.compile(_B + r"(?:nam\s+)?(\d{4})" + _E + r"|(\d{4})\s*年"), "y"),
    (re.compile(_B + r"(in\s+|during\s+|of\s+)?" + _MONTH + _E), "m"),
    (re.compile(_B + _COUNT + r"\s+(day|week|month|year)s?\s+ago" + _E), "ago"),
    (re.compile(_B + r"(\d{1,3})\s+(ngay|tuan|thang|nam)\s+(?:truoc|qua)" + _E), "vi-ago"),
]

# Days counted back from today: (what, how many back, the phrases that say it). "last week
# of October" is not last week: a phrase of a week, month or year followed by "of" is not
# read as relative.
_RELATIVE_PHRASES: list[tuple[str, int, tuple[str, ...]]] = [
    ("day", 2, ("the day before yesterday", "hôm kia", "前天", "一昨日", "그저께")),
    ("day", 1, ("yesterday", "last night", "hôm qua", "tối qua", "đêm qua")),
    ("day", 1, ("昨天", "昨日", "어제")),
    ("day", 0, ("today", "tonight", "this morning", "this afternoon", "this evening")),
    ("day", 0, ("hôm nay", "sáng nay", "chiều nay", "tối nay", "今天", "今日", "오늘")),
    ("week", 1, ("last week", "tuần trước", "tuần rồi", "tuần qua")),
    ("week", 1, ("上周", "上週", "先週", "지난주")),
    ("week", 0, ("this week", "tuần này", "本周", "这周", "這週", "今週", "이번 주")),
    ("month", 1, ("last month", "tháng trước", "tháng rồi", "tháng qua")),
    ("month", 1, ("上个月", "上個月", "先月", "지난달")),
    ("month", 0, ("this month", "tháng này", "这个月", "這個月", "今月", "이번 달")),
    ("year", 1, ("last year", "năm ngoái", "năm trước", "năm rồi", "năm qua")),
    ("year", 1, ("去年", "昨年", "작년")),
    ("year", 0, ("this year", "năm nay", "今年", "올해")),
]


def _phrase(phrase: str) -> str:
    folded = re.escape(text_rules.fold(phrase)).replace(r"\ ", r"\s+")
    if text_rules.SPACELESS_CHAR.search(text_rules.fold(phrase)):
        return folded  # no spaces between words in these scripts: no word boundary either
    return _B + folded + _E + r"(?!\s+of\b)"


_RELATIVE: list[tuple[re.Pattern[str], str, int]] = [
    (re.compile("|".join(_phrase(phrase) for phrase in phrases)), unit, back)
    for unit, back, phrases in _RELATIVE_PHRASES
]


def _date(year: int, month: int, day: int) -> dt.date | None:
    if not FIRST_YEAR <= year <= LAST_YEAR:
        return None
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def _month_span(year: int, month: int) -> Span | None:
    first = _date(year, month, 1) if 1 <= month <= 12 else None
    if first is None:
        return None
    following = dt.date(year + (month == 12), month % 12 + 1, 1)
    return Span(first, following - dt.timedelta(days=1))


def _year_span(year: int) -> Span | None:
    if not FIRST_YEAR <= year <= LAST_YEAR:
        return None
    return Span(dt.date(year, 1, 1), dt.date(year, 12, 31))


def _day_span(year: int, month: int, day: int) -> Span | None:
    found = _date(year, month, day)
    return None if found is None else Span(found, found)


def _yearless(month: int, day: int | None = None) -> Span | None:
    if not 1 <= month <= 12:
        return None
    if day is not None and _date(2000, month, day) is None:  # 2000: a leap year
        return None
    return Span(month=month, day=day)


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _shift_months(day: dt.date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 - months
    return index // 12, index % 12 + 1


def _ago(count: int, unit: str, today: dt.date) -> Span | None:
    if unit in ("day", "ngay"):
        found = today - dt.timedelta(days=count)
        return Span(found, found)
    if unit in ("week", "tuan"):
        monday = today - dt.timedelta(days=today.weekday()) - dt.timedelta(weeks=count)
        return Span(monday, monday + dt.timedelta(days=6))
    if unit in ("month", "thang"):
        return _month_span(*_shift_months(today, count))
    return _year_span(today.year - count)


def _explicit(kind: str, groups: tuple[str | None, ...], today: dt.date) -> Span | None:
    if kind == "ymd":
        return _day_span(int(groups[0]), int(groups[1]), int(groups[2]))
    if kind == "dmy":
        return _day_span(int(groups[2]), _MONTHS[groups[1]], int(groups[0]))
    if kind == "mdy":
        return _day_span(int(groups[2]), _MONTHS[groups[0]], int(groups[1]))
    if kind == "vi-dmy":
        if groups[2]:
            return _day_span(int(groups[2]), int(groups[1]), int(groups[0]))
        return _yearless(int(groups[1]), int(groups[0]))
    if kind == "ym":
        return _month_span(int(groups[0]), int(groups[1]))
    if kind == "my":
        return _month_span(int(groups[1]), _MONTHS[groups[0]])
    if kind == "vi-my":
        if groups[1]:
            return _month_span(int(groups[1]), int(groups[0]))
        return _yearless(int(groups[0]))
    if kind == "my-num":
        return _month_span(int(groups[1]), int(groups[0]))
    if kind == "dm":
        return _yearless(_MONTHS[groups[1]], int(groups[0]))
    if kind == "md":
        return _yearless(_MONTHS[groups[0]], int(groups[1]))
    if kind == "md-num":
        return _yearless(int(groups[0]), int(groups[1]))
    if kind == "y":
        return _year_span(int(groups[0] or groups[1]))
    if kind == "m":
        if groups[1] in _AMBIGUOUS and not groups[0]:
            return None
        return _yearless(_MONTHS[groups[1]])
    if kind == "ago":
        return _ago(_count(groups[0]), groups[1], today)
    if kind == "vi-ago":
        return _ago(int(groups[0]), groups[1], today)
    raise AssertionError(kind)


def _relative(unit: str, steps: int, today: dt.date) -> Span:
    if unit == "day":
        return _ago(steps, "day", today)
    if unit == "week":
        span = _ago(steps, "week", today)
        return span if steps else Span(span.first, today)
    if unit == "month":
        span = _month_span(*_shift_months(today, steps))
        return span if steps else Span(span.first, today)
    span = _year_span(today.year - steps)
    return span if steps else Span(span.first, today)


def find(text: str, today: dt.date) -> Found:
    """The dates `text` names (folded first), relative ones counted from `today`, and the
    folded words they were written with. Nothing found: no spans, no words."""
    folded = text_rules.fold(text)
    taken = [False] * len(folded)
    spans: list[Span] = []
    words: set[str] = set()

    def claim(match: re.Match[str]) -> bool:
        start, end = match.span()
        if any(taken[start:end]):
            return False
        for index in range(start, end):
            taken[index] = True
        words.update(text_rules._WORD_RE.findall(match.group(0)))
        return True

    for pattern, unit, back in _RELATIVE:
        for match in pattern.finditer(folded):
            if claim(match):
                spans.append(_relative(unit, back, today))
    for pattern, kind in _PATTERNS:
        for match in pattern.finditer(folded):
            start, end = match.span()
            if any(taken[start:end]):
                continue
            span = _explicit(kind, match.groups(), today)
            if span is not None and claim(match):
                spans.append(span)
    return Found(tuple(dict.fromkeys(spans)), frozenset(words))
