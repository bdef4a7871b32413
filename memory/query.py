"""A search query, read once where it comes in (SPEC §6.1 word rules).

Every search — memory_search, the owner's search across scopes, wiki_search and the
wiki's list, the highlighting of hits — works from a `Query`: the folded words of what was
typed, each with the rule it matches by. The interface that receives the text parses it
(`Query.parse`: 422 when it has no letter or digit, the one place that says so) and
hands the value down; an operation called with a plain string parses it itself
(`as_query`), so a query is never read twice.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Literal

from memory import clock
from memory import dates as date_rules
from memory import text as text_rules
from memory.errors import InvalidInput

NO_WORDS = "The query has no letters or digits to search for."

# How a folded query word matches the folded text (SPEC §6.1):
WHOLE = "whole"  # three characters or fewer: only as a word of its own (`doc` not in `docs`)
INSIDE = "inside"  # four or more: also inside a word (`sach` in `sachs`)
ANYWHERE = "anywhere"  # a run of Han, Kana or Hangul (no spaces between words): at any length
Rule = Literal["whole", "inside", "anywhere"]


@dataclass(frozen=True)
class QueryWord:
    """One folded word of a query and the rule it matches by."""

    text: str
    rule: Rule

    @property
    def pattern(self) -> re.Pattern[str]:
        """The word as a regex over folded text (memory.text.word_pattern)."""
        return text_rules.word_pattern(self.text)


def _rule(word: str) -> Rule:
    if text_rules.is_short(word):
        return WHOLE
    return ANYWHERE if text_rules.is_spaceless(word) else INSIDE


@dataclass(frozen=True)
class Query:
    """What was typed (`text`) and its words: folded, in order, without repeats; the
    folded words as typed (`sequence`, repeats kept: which words stand side by side); and
    the dates it names (`dates`: memory.dates, relative ones counted from the owner's
    today when it was parsed), with the words they were written in."""

    text: str
    words: tuple[QueryWord, ...]
    sequence: tuple[str, ...] = ()
    dates: date_rules.Found = field(default_factory=lambda: date_rules.Found((), frozenset()))

    @classmethod
    def parse(cls, text: str, *, allow_empty: bool = False, today: dt.date | None = None) -> Query:
        """The query `text` reads as. Raises InvalidInput (422) when it has no letter or
        digit, unless `allow_empty` (highlighting and filters, which then match nothing
        or everything). `today` (default: the owner's, memory.clock) anchors "yesterday",
        "hôm qua", "last week"."""
        words = tuple(QueryWord(word, _rule(word)) for word in text_rules.words(text))
        if not words and not allow_empty:
            raise InvalidInput(NO_WORDS)
        sequence = tuple(text_rules._WORD_RE.findall(text_rules.fold(text)))
        if today is None:
            today = clock.today()
        return cls(text, words, sequence, date_rules.find(text, today))


def as_query(query: Query | str) -> Query:
    """`query` itself, or the text parsed (Query.parse: InvalidInput without words)."""
    return query if isinstance(query, Query) else Query.parse(query)
