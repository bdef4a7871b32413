"""What a consolidation reads (SPEC §8): up to 7 days counted by day, 40,000 characters,
newest first."""

from __future__ import annotations

from memory.notes import NOTES_BUDGET, read_notes_block
from tests.memory.jobs.conftest import day, write_note


def test_it_reads_seven_days_counted_by_day_newest_first(master):
    for offset in range(0, -9, -1):
        write_note(master, f"{day(offset)}.md", f"plain note of day {offset}\n")
    # Two more notes on days already counted: still seven days.
    write_note(master, f"{day(0)}-1030.md", "suffixed note of today\n")
    write_note(master, f"{day(-3)}-evening.md", "suffixed note of day -3\n")
    write_note(master, "facebook-books.md", "not a note\n")

    block = read_notes_block(master)

    assert block.days == [day(offset) for offset in range(0, -7, -1)]
    assert block.note_names[:3] == [f"{day(0)}.md", f"{day(0)}-1030.md", f"{day(-1)}.md"]
    assert f"{day(-3)}-evening.md" in block.note_names
    assert len(block.note_names) == 9
    assert "plain note of day -6" in block.text
    assert "plain note of day -7" not in block.text
    assert "not a note" not in block.text
    assert block.text.index("suffixed note of today") < block.text.index("plain note of day -1")
    assert block.cut is False  # days beyond the seventh are not the budget's doing


def test_it_stays_within_forty_thousand_characters(master):
    for offset in range(0, -5, -1):
        write_note(master, f"{day(offset)}.md", f"day {offset} " + "x" * 15_000 + "\n")

    block = read_notes_block(master)

    assert len(block.text) <= NOTES_BUDGET
    # Two days fit whole; the third is cut to what is left; older days are left out.
    assert block.days == [day(0), day(-1), day(-2)]
    assert "more characters of this day left out]" in block.text
    assert "day -3" not in block.text
    assert block.cut is True


def test_it_cuts_a_newest_day_larger_than_the_budget(master):
    write_note(master, f"{day(0)}.md", "y" * 50_000 + "\n")
    write_note(master, f"{day(-1)}.md", "yesterday\n")

    block = read_notes_block(master)

    assert len(block.text) == NOTES_BUDGET
    assert block.days == [day(0)]
    assert "yesterday" not in block.text


def test_it_reads_a_helper_agents_own_notes(helper_agent, master):
    write_note(master, f"{day(0)}.md", "master's note\n")
    write_note(helper_agent, f"{day(0)}.md", "helper's note\n")

    block = read_notes_block(helper_agent)

    assert "helper's note" in block.text
    assert "master's note" not in block.text


def test_it_is_empty_without_notes(master):
    block = read_notes_block(master)

    assert (block.text, block.days, block.note_names, block.newest_mtime) == ("", [], [], None)
