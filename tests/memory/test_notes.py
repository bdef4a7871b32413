"""Agent scope (SPEC §3, §5): MEMORY.md, daily notes, memory_save, durable lines."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from memory import clock, notes
from memory.errors import InvalidInput, NotFound

AT = dt.datetime(2026, 11, 30, 8, 5, tzinfo=ZoneInfo("Asia/Ho_Chi_Minh"))


@pytest.fixture
def hcm(settings):
    settings.MEMORY_TIME_ZONE = "Asia/Ho_Chi_Minh"


def test_it_keeps_the_masters_files_at_the_root_and_others_under_agents(master, helper_agent):
    assert notes.memory_path(master) == "MEMORY.md"
    assert notes.note_path(master, "2026-11-30") == "memory/2026-11-30.md"
    assert notes.memory_path(helper_agent) == "agents/helper/MEMORY.md"
    assert notes.note_path(helper_agent, "2026-11-30-1030.md") == (
        "agents/helper/memory/2026-11-30-1030.md"
    )


def test_it_saves_a_line_under_a_heading_written_once(master, workspace, hcm):
    assert notes.memory_save(master, "Huyết áp 128/82", now=AT).line == "- 08:05 Huyết áp 128/82"
    notes.memory_save(master, "  Đã gửi bản tin\nsáng nay  ", now=AT + dt.timedelta(minutes=7))
    assert (workspace / "memory/2026-11-30.md").read_text(encoding="utf-8") == (
        "# 2026-11-30\n\n- 08:05 Huyết áp 128/82\n- 08:12 Đã gửi bản tin sáng nay\n"
    )


def test_it_uses_the_owners_time_zone_for_today_and_the_time(master, workspace, hcm):
    # 18:30 UTC on the 30th is 01:30 on 1 December in Ho Chi Minh City.
    saved = notes.memory_save(master, "late", now=dt.datetime(2026, 11, 30, 18, 30, tzinfo=dt.UTC))
    assert (workspace / "memory/2026-12-01.md").read_text() == "# 2026-12-01\n\n- 01:30 late\n"
    # The day it reports is the day it wrote to, from the same reading of the clock.
    assert (saved.day, saved.name) == (dt.date(2026, 12, 1), "2026-12-01.md")


def test_it_saves_to_today_by_default(master, workspace, hcm):
    notes.memory_save(master, "now")
    today = dt.datetime.now(ZoneInfo("Asia/Ho_Chi_Minh")).date()
    assert clock.today() == today
    assert (
        (workspace / f"memory/{today.isoformat()}.md")
        .read_text()
        .startswith(f"# {today.isoformat()}\n\n- ")
    )


def test_it_refuses_text_over_the_limit(master, workspace):
    with pytest.raises(InvalidInput):
        notes.memory_save(master, "x" * (notes.MAX_SAVE_CHARS + 1), now=AT)
    assert not (workspace / "memory/2026-11-30.md").exists()


def test_it_appends_under_an_existing_hand_written_note(master, workspace, hcm):
    (workspace / "memory").mkdir()
    (workspace / "memory/2026-11-30.md").write_text("# 30/11\n\nviết tay\n", encoding="utf-8")
    notes.memory_save(master, "máy ghi", now=AT)
    assert (workspace / "memory/2026-11-30.md").read_text(encoding="utf-8") == (
        "# 30/11\n\nviết tay\n- 08:05 máy ghi\n"
    )


# The other bad names are refused over REST (tests/spec/test_user_and_agent_scope.py);
# an empty name cannot be put in a URL, so it is checked here.
@pytest.mark.parametrize("name", [""])
def test_it_refuses_a_note_name_that_is_not_a_day(master, workspace, name):
    with pytest.raises(InvalidInput):
        notes.write_note(master, name, "x\n")
    with pytest.raises(InvalidInput):
        notes.read_note(master, name)
    assert list(workspace.rglob("*.md")) == []


def test_it_reads_and_rewrites_notes(master, workspace):
    assert notes.write_note(master, "2026-11-29", "# 2026-11-29\r\n\r\n- a\r\n") is True
    assert notes.write_note(master, "2026-11-29.md", "# 2026-11-29\n\n- b\n") is False
    assert notes.read_note(master, "2026-11-29") == "# 2026-11-29\n\n- b\n"
    with pytest.raises(NotFound):
        notes.read_note(master, "2026-11-28")


def test_it_lists_notes_newest_first_and_keeps_hand_kept_files_apart(master, workspace):
    memory = workspace / "memory"
    memory.mkdir()
    for name in (
        "2026-11-28.md",
        "2026-11-30.md",
        "2026-11-30-1030.md",
        "2026-11-29-trip.md",
        "facebook-books.md",
        "2026-02-30.md",
        "notes.txt",
    ):
        (memory / name).write_text("x\n")
    (memory / "wiki").mkdir()
    (memory / "wiki" / "2026-11-30.md").write_text("page\n")

    assert [(n.day.isoformat(), n.name) for n in notes.list_notes(master)] == [
        ("2026-11-30", "2026-11-30-1030.md"),
        ("2026-11-30", "2026-11-30.md"),
        ("2026-11-29", "2026-11-29-trip.md"),
        ("2026-11-28", "2026-11-28.md"),
    ]
    everything = notes.list_notes(master, include_other=True)
    assert [n.name for n in everything[4:]] == ["2026-02-30.md", "facebook-books.md"]
    assert all(n.day is None for n in everything[4:])
    # Listing never deletes or changes a hand-kept file.
    assert (memory / "facebook-books.md").read_text() == "x\n"


def test_it_reads_and_writes_memory_md(master, workspace):
    assert notes.read_memory(master) == ""
    notes.write_memory(master, "- Owner: Minh\n")
    assert (workspace / "MEMORY.md").read_text() == "- Owner: Minh\n"


def test_it_appends_durable_lines_to_memory_md(helper_agent, workspace):
    (workspace / "agents/helper/MEMORY.md").write_text("- Owner: Minh")
    body = notes.append_memory_lines(helper_agent, ["- Takes metformin (2026-11-30)", "- B\nC"])
    assert body == "- Owner: Minh\n- Takes metformin (2026-11-30)\n- B C\n"
    assert (workspace / "agents/helper/MEMORY.md").read_text() == body


@pytest.mark.parametrize("lines", [[], [""], ["ok", "  "], "one string", [1], ["x"] * 101])
def test_it_refuses_bad_lines(helper_agent, workspace, lines):
    with pytest.raises(InvalidInput):
        notes.append_memory_lines(helper_agent, lines)
    assert (workspace / "agents/helper/MEMORY.md").read_text() == ""  # as created


def test_memory_with_lines_is_pure():
    assert notes.memory_with_lines("", ["- a"]) == "- a\n"
    assert notes.memory_with_lines("- x\n", ["- a", "- b"]) == "- x\n- a\n- b\n"


# --- lines placed under their heading (SPEC §5) --------------------------------------------

SECTIONS = "# MEMORY.md\n\n## Lịch\n\n- Chạy bộ thứ Ba.\n\n## Công việc\n\n- Báo cáo.\n"


def test_lines_go_at_the_end_of_their_heading_s_section():
    assert notes.memory_with_lines(SECTIONS, ["- Bơi thứ Bảy."], heading="lich") == (
        "# MEMORY.md\n\n## Lịch\n\n- Chạy bộ thứ Ba.\n- Bơi thứ Bảy.\n\n"
        "## Công việc\n\n- Báo cáo.\n"
    )
    assert notes.memory_with_lines(SECTIONS, ["- Gửi thứ Năm."], heading="## CÔNG VIỆC") == (
        SECTIONS + "- Gửi thứ Năm.\n"
    )


def test_a_missing_heading_is_added_at_the_end():
    assert notes.memory_with_lines(SECTIONS, ["- 128/82"], heading="Sức khỏe") == (
        SECTIONS + "\n## Sức khỏe\n\n- 128/82\n"
    )
    assert notes.memory_with_lines("", ["- x"], heading="Notes") == "## Notes\n\n- x\n"


def test_a_section_ends_at_the_next_heading_of_its_level_not_at_a_subheading():
    text = "## Lịch\n\n### Sáng\n\n- chạy\n\n## Việc\n"
    assert notes.memory_with_lines(text, ["- bơi"], heading="Lịch") == (
        "## Lịch\n\n### Sáng\n\n- chạy\n- bơi\n\n## Việc\n"
    )
    assert notes.memory_with_lines("# A\n## Empty\n## B\n", ["- y"], heading="empty") == (
        "# A\n## Empty\n- y\n## B\n"
    )


@pytest.mark.parametrize("heading", [5, "two\nlines", "x" * 201])
def test_a_bad_heading_is_refused(heading):
    with pytest.raises(InvalidInput):
        notes.memory_with_lines(SECTIONS, ["- x"], heading=heading)
