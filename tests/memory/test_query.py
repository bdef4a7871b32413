"""A query is read once (memory.query, SPEC §6.1 word rules): its folded words, the rule
each matches by, and the one refusal of a query without a letter or digit."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memory.errors import InvalidInput
from memory.query import NO_WORDS, Query, QueryWord, as_query
from memory.text import fold

ROOT = Path(__file__).resolve().parents[2]


def test_it_folds_the_words_in_order_without_repeats():
    query = Query.parse("Sách, đang-đọc!! sách")

    assert query.text == "Sách, đang-đọc!! sách"
    assert [word.text for word in query.words] == ["sach", "dang", "doc"]


def test_each_word_says_the_rule_it_matches_by():
    query = Query.parse("doc docs 心 東京タワー 한국어 ab1")

    assert [(word.text, word.rule) for word in query.words] == [
        ("doc", "whole"),  # three characters or fewer: only as a word of its own
        ("docs", "inside"),  # four or more: also inside a word
        ("心", "anywhere"),  # Han, Kana, Hangul: at any length, anywhere
        ("東京タワー", "anywhere"),
        (fold("한국어"), "anywhere"),  # folded: NFD turns syllables into jamo
        ("ab1", "whole"),
    ]


def test_a_words_pattern_is_the_rule_over_folded_text():
    doc, docs = Query.parse("doc docs").words

    assert doc.pattern.search("i read a doc today")
    assert not doc.pattern.search("the docs")
    assert docs.pattern.search("docstring")


@pytest.mark.parametrize("text", ["", "   ", "!!!", "— … ·", "_"])
def test_a_query_without_letters_or_digits_is_refused_with_one_sentence(text):
    with pytest.raises(InvalidInput) as refused:
        Query.parse(text)

    assert refused.value.status_code == 422
    assert refused.value.message == "The query has no letters or digits to search for."


def test_highlighting_and_filters_may_read_a_query_without_words():
    assert Query.parse("!!!", allow_empty=True) == Query("!!!", ())


def test_a_query_is_a_value_and_as_query_parses_only_text():
    query = Query.parse("hạn eco")

    with pytest.raises(dataclasses.FrozenInstanceError):
        query.text = "other"  # type: ignore[misc]
    assert as_query(query) is query
    assert as_query("hạn eco") == query
    assert query.words == (QueryWord("han", "whole"), QueryWord("eco", "whole"))
    with pytest.raises(InvalidInput):
        as_query("?")


def test_the_refusal_is_written_once_in_the_apps():
    saying = [
        path.relative_to(ROOT).as_posix()
        for app in ("memory", "wiki", "proposals", "memoryproject")
        for path in (ROOT / app).rglob("*.py")
        if "no letters or digits" in path.read_text(encoding="utf-8")
    ]

    assert saying == ["memory/query.py"]
    assert NO_WORDS == "The query has no letters or digits to search for."
