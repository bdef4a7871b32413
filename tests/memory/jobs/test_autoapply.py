"""The auto-apply rule as a pure function (SPEC §8): code, not the model, decides."""

from __future__ import annotations

import datetime as dt

from memory.jobs.autoapply import decide, split_date

OLD = """# Memory

- Owner lives in Hanoi (2026-10-01)
- Prefers tea over coffee (2026-09-15)
- Uses a Framework laptop
"""
NOTE_DAYS = [dt.date(2026, 11, 28), dt.date(2026, 11, 29)]
TODAY = dt.date(2026, 11, 30)
ALLOWED = [*NOTE_DAYS, TODAY]


def test_it_applies_a_rewrite_that_only_adds_lines():
    new = OLD + "- Started learning the piano (2026-11-29)\n"

    decision = decide(OLD, new, allowed_dates=ALLOWED)

    assert decision.apply is True
    assert decision.added == ["- Started learning the piano (2026-11-29)"]
    assert decision.reasons == []


def test_it_applies_a_rewrite_that_only_changes_dates():
    new = OLD.replace("(2026-10-01)", "(2026-11-28)").replace(
        "- Uses a Framework laptop", "- Uses a Framework laptop (2026-11-30)"
    )

    decision = decide(OLD, new, allowed_dates=ALLOWED)

    assert decision.apply is True
    assert decision.redated == [
        "- Owner lives in Hanoi (2026-11-28)",
        "- Uses a Framework laptop (2026-11-30)",
    ]


def test_it_applies_added_lines_and_changed_dates_together():
    new = OLD.replace("(2026-09-15)", "(2026-11-29)") + "- Has a cat named Mochi (2026-11-28)\n"

    assert decide(OLD, new, allowed_dates=ALLOWED).apply is True


def test_it_holds_a_rewrite_that_drops_a_line():
    new = OLD.replace("- Prefers tea over coffee (2026-09-15)\n", "")

    decision = decide(OLD, new, allowed_dates=ALLOWED)

    assert decision.apply is False
    assert decision.dropped == ["- Prefers tea over coffee (2026-09-15)"]
    assert decision.reasons == ["drops a line: - Prefers tea over coffee (2026-09-15)"]


def test_it_holds_a_rewrite_that_changes_a_line():
    new = OLD.replace("Owner lives in Hanoi (2026-10-01)", "Owner lives in Da Nang (2026-11-29)")

    decision = decide(OLD, new, allowed_dates=ALLOWED)

    assert decision.apply is False
    assert decision.changed == [
        ("- Owner lives in Hanoi (2026-10-01)", "- Owner lives in Da Nang (2026-11-29)")
    ]
    assert decision.reasons == [
        "changes a line: - Owner lives in Hanoi (2026-10-01) → "
        "- Owner lives in Da Nang (2026-11-29)"
    ]


def test_it_holds_a_rewrite_with_a_date_of_unknown_origin():
    new = OLD + "- Bought a bike (2026-11-02)\n"

    decision = decide(OLD, new, allowed_dates=ALLOWED)

    assert decision.apply is False
    assert decision.unknown_dates == ["2026-11-02"]
    assert decision.reasons == [
        "carries the date 2026-11-02, which is not in MEMORY.md, not the date of a note "
        "read, and not today"
    ]


def test_it_allows_the_date_of_a_note_read():
    new = OLD + "- Bought a bike (2026-11-28)\n"

    assert decide(OLD, new, allowed_dates=ALLOWED).apply is True


def test_it_allows_today():
    new = OLD + "- Bought a bike (2026-11-30)\n"

    assert decide(OLD, new, allowed_dates=ALLOWED).apply is True


def test_it_allows_a_date_already_in_memory():
    new = OLD + "- Moved in together with the cat (2026-09-15)\n"

    assert decide(OLD, new, allowed_dates=[]).apply is True


def test_it_checks_dates_anywhere_in_a_line_not_only_at_the_end():
    new = OLD + "- Passport expires 2031-05-02\n"

    assert decide(OLD, new, allowed_dates=ALLOWED).unknown_dates == ["2031-05-02"]


def test_it_holds_a_rewrite_that_moves_a_line():
    lines = OLD.splitlines()
    new = "\n".join([lines[0], "", lines[3], lines[2], lines[4]]) + "\n"

    decision = decide(OLD, new, allowed_dates=ALLOWED)

    assert decision.apply is False
    assert decision.reasons[0].startswith("moves a line:")


def test_it_ignores_blank_lines_and_trailing_spaces():
    new = OLD.replace("\n\n", "\n").replace("(2026-10-01)", "(2026-10-01)   ") + "\n\n"

    decision = decide(OLD, new, allowed_dates=[])

    assert decision.apply is True
    assert decision.added == []


def test_it_treats_a_new_memory_file_as_only_additions():
    assert decide("", "- Owner is called Lan (2026-11-30)\n", allowed_dates=[TODAY]).apply


def test_it_splits_the_trailing_date_from_the_content():
    assert split_date("- Likes pho (2026-11-01)") == ("- Likes pho", "2026-11-01")
    assert split_date("- Likes pho") == ("- Likes pho", None)
    assert split_date("- Likes pho (2026-11-01) really") == (
        "- Likes pho (2026-11-01) really",
        None,
    )
