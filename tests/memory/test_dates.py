"""The dates a search query names (SPEC §6.1, dates): memory.dates, read on folded text."""

from __future__ import annotations

import datetime as dt

import pytest

from memory import dates

TODAY = dt.date(2026, 5, 20)  # a Wednesday


def spans(text: str) -> list[str]:
    return [span.describe() for span in dates.find(text, TODAY).spans]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023-01-05", ["2023-01-05"]),
        ("2023/1/5", ["2023-01-05"]),
        ("on 9 February, 2023", ["2023-02-09"]),
        ("9th of December 2023", ["2023-12-09"]),
        ("January 5, 2024", ["2024-01-05"]),
        ("Jan. 5 2024", ["2024-01-05"]),
        ("ngày 5 tháng 1 năm 2023", ["2023-01-05"]),
        ("ngay 5 thang 1 nam 2023", ["2023-01-05"]),
        ("ngày 5/1/2023", ["2023-01-05"]),
        ("2023年1月5日", ["2023-01-05"]),
    ],
)
def test_a_day(text, expected):
    assert spans(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "January 2023",
        "jan 2023",
        "2023-01",
        "tháng 1 năm 2023",
        "thang 1 nam 2023",
        "tháng 1/2023",
        "1/2023",
        "2023年1月",
    ],
)
def test_a_month(text):
    assert spans(text) == ["2023-01-01…2023-01-31"]


def test_a_year_and_a_month_or_day_of_any_year():
    assert spans("in 2023") == ["2023-01-01…2023-12-31"]
    assert spans("năm 2024") == ["2024-01-01…2024-12-31"]
    assert spans("camping in June") == ["--06"]
    assert spans("tháng 6") == ["--06"]
    assert spans("5 January") == ["--01-05"]
    assert spans("ngày 5 tháng 1") == ["--01-05"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yesterday", ["2026-05-19"]),
        ("hôm qua", ["2026-05-19"]),
        ("hom qua", ["2026-05-19"]),
        ("昨天", ["2026-05-19"]),
        ("the day before yesterday", ["2026-05-18"]),
        ("hôm nay", ["2026-05-20"]),
        ("last week", ["2026-05-11…2026-05-17"]),
        ("tuần trước", ["2026-05-11…2026-05-17"]),
        ("this week", ["2026-05-18…2026-05-20"]),
        ("last month", ["2026-04-01…2026-04-30"]),
        ("tháng trước", ["2026-04-01…2026-04-30"]),
        ("last year", ["2025-01-01…2025-12-31"]),
        ("năm ngoái", ["2025-01-01…2025-12-31"]),
        ("3 days ago", ["2026-05-17"]),
        ("3 ngày trước", ["2026-05-17"]),
        ("two weeks ago", ["2026-05-04…2026-05-10"]),
    ],
)
def test_relative_to_the_owners_today(text, expected):
    assert spans(text) == expected


def test_words_that_are_not_dates_name_none():
    assert spans("May I come to the March rally") == []
    assert spans("room 42, call 555-1234") == []
    assert spans("2023-02-30") == ["2023-01-01…2023-12-31"]  # no such day: the year stays
    assert spans("1899") == []


def test_the_last_week_of_a_month_is_that_month_not_last_week():
    assert spans("the last week of October 2023") == ["2023-10-01…2023-10-31"]


def test_it_says_which_words_wrote_the_date():
    found = dates.find("tháng 1 năm 2023 đi Đà Lạt", TODAY)
    assert found.words == {"thang", "1", "nam", "2023"}


def test_a_span_holds_its_days():
    (june,) = dates.find("in June", TODAY).spans
    assert june.holds(dt.date(2023, 6, 30)) and not june.holds(dt.date(2023, 7, 1))
    (month,) = dates.find("January 2023", TODAY).spans
    assert month.holds(dt.date(2023, 1, 31)) and not month.holds(dt.date(2024, 1, 1))
