"""Prompt context (SPEC §4): system sections, the pre-turn block and its cursors."""

from __future__ import annotations

import datetime as dt

import pytest

from memory import clock, context, notes
from memory.models import NoteCursor
from tests.helpers import write_by_hand


@pytest.fixture
def days(master):
    today = clock.today()
    return today.isoformat(), (today - dt.timedelta(days=1)).isoformat()


def part(title: str, text: str) -> str:
    """One part of the pre-turn block: its heading, the note's text fenced as data."""
    return f"## {title}\n```markdown\n{text}\n```"


# --- §4.1 system prompt ----------------------------------------------------------------


def test_it_renders_the_sections_in_order(master, workspace):
    write_by_hand(workspace / "MEMORY.md", "- Owner: Minh\n")
    write_by_hand(
        workspace / "users/owner/facts/INDEX.md", "- [pho](pho.md) (preference) — phở bò\n"
    )
    write_by_hand(workspace / "users/owner/USER.md", "Tôi là Minh.\n")
    assert context.system_prompt(master) == (
        "## USER.md\nTôi là Minh.\n\n"
        "## INDEX.md\n- [pho](pho.md) (preference) — phở bò\n\n"
        "## MEMORY.md\n- Owner: Minh"
    )


def test_it_skips_missing_files(master, helper_agent, workspace):
    assert context.system_prompt(master) == ""
    write_by_hand(workspace / "MEMORY.md", "master only\n")
    write_by_hand(workspace / "agents/helper/MEMORY.md", "helper only\n")
    assert context.system_prompt(master) == "## MEMORY.md\nmaster only"
    assert context.system_prompt(helper_agent) == "## MEMORY.md\nhelper only"


def test_it_caps_each_section(master, workspace):
    write_by_hand(workspace / "users/owner/USER.md", "u" * 5000)
    write_by_hand(workspace / "users/owner/facts/INDEX.md", "i" * 4000)
    write_by_hand(workspace / "MEMORY.md", "m" * 30000)
    user, index, memory = context.system_prompt(master).split("\n\n")
    assert user == "## USER.md\n" + "u" * 3999 + "…"
    assert index == "## INDEX.md\n" + "i" * 4000
    assert memory == "## MEMORY.md\n" + "m" * 23999 + "…"
    # The files themselves stay whole.
    assert len((workspace / "MEMORY.md").read_text()) == 30000


# --- §4.2 pre-turn block ---------------------------------------------------------------


def test_it_walks_the_cursor_sequence(master, workspace, days):
    today, yesterday = days
    write_by_hand(workspace / f"memory/{yesterday}.md", f"# {yesterday}\n\n- 21:00 hôm qua\n")
    write_by_hand(workspace / f"memory/{today}.md", f"# {today}\n\n- 07:00 sáng\n")
    write_by_hand(workspace / f"memory/{today}-1030.md", "# Session 10:30\n\n- đặt lịch\n")

    # First turn: every note of both days whole, newest first (today's plain note, then
    # its session note, then yesterday's).
    assert context.pre_turn_block(master, "conv-1") == (
        part(f"memory/{today}.md", f"# {today}\n\n- 07:00 sáng")
        + "\n\n"
        + part(f"memory/{today}-1030.md", "# Session 10:30\n\n- đặt lịch")
        + "\n\n"
        + part(f"memory/{yesterday}.md", f"# {yesterday}\n\n- 21:00 hôm qua")
    )
    # Nothing new: empty.
    assert context.pre_turn_block(master, "conv-1") == ""

    # A memory_save during the turn shows from the next opening message on, alone.
    line = notes.memory_save(master, "uống thuốc").line
    assert context.pre_turn_block(master, "conv-1") == (
        part(f"memory/{today}.md (new since last shown)", line)
    )
    assert context.pre_turn_block(master, "conv-1") == ""

    # Another conversation starts from the beginning.
    assert context.pre_turn_block(master, "conv-2") == (
        part(f"memory/{today}.md", f"# {today}\n\n- 07:00 sáng\n{line}")
        + "\n\n"
        + part(f"memory/{today}-1030.md", "# Session 10:30\n\n- đặt lịch")
        + "\n\n"
        + part(f"memory/{yesterday}.md", f"# {yesterday}\n\n- 21:00 hôm qua")
    )

    # A rewrite (what was shown is no longer a prefix) shows the whole new version.
    notes.write_note(master, today, f"# {today}\n\n- 07:00 sáng (sửa)\n")
    assert context.pre_turn_block(master, "conv-1") == (
        part(f"memory/{today}.md", f"# {today}\n\n- 07:00 sáng (sửa)")
    )
    assert context.pre_turn_block(master, "conv-1") == ""

    # A shorter rewrite that keeps a prefix of nothing is whole too.
    notes.write_note(master, today, f"# {today}\n")
    assert context.pre_turn_block(master, "conv-1") == part(f"memory/{today}.md", f"# {today}")

    cursor = NoteCursor.objects.get(agent=master, conversation="conv-1", note=f"{today}.md")
    assert cursor.shown_size == len(f"# {today}\n".encode())


def test_it_shows_a_note_created_after_the_first_turn_whole(master, workspace, days):
    today, _ = days
    assert context.pre_turn_block(master, "c") == ""
    notes.memory_save(master, "first of the day")
    block = context.pre_turn_block(master, "c")
    assert block.startswith(f"## memory/{today}.md\n```markdown\n# {today}\n\n- ")
    assert block.endswith(" first of the day\n```")


def test_it_counts_bytes_not_characters(master, workspace, days):
    today, _ = days
    write_by_hand(workspace / f"memory/{today}.md", "- 07:00 Đức ăn phở\n")
    context.pre_turn_block(master, "c")
    with open(workspace / f"memory/{today}.md", "a", encoding="utf-8") as handle:
        handle.write("- 08:00 bún chả\n")
    assert context.pre_turn_block(master, "c") == (
        part(f"memory/{today}.md (new since last shown)", "- 08:00 bún chả")
    )


def test_the_preview_writes_no_cursor(master, workspace, days):
    today, _ = days
    write_by_hand(workspace / f"memory/{today}.md", "- 07:00 a\n")
    expected = part(f"memory/{today}.md", "- 07:00 a")
    assert context.preview_pre_turn(master) == expected
    assert context.pre_turn_block(master, "c", advance=False) == expected
    assert NoteCursor.objects.count() == 0
    assert context.pre_turn_block(master, "c") == expected
    assert NoteCursor.objects.count() == 1


def test_it_keeps_agents_apart(master, helper_agent, workspace, days):
    today, _ = days
    write_by_hand(workspace / f"agents/helper/memory/{today}.md", "- helper's\n")
    assert context.pre_turn_block(master, "c") == ""
    assert context.pre_turn_block(helper_agent, "c") == part(f"memory/{today}.md", "- helper's")


# --- §4.3 group chats and build_context ------------------------------------------------


def test_a_group_chat_gets_no_private_memory(master, workspace, days):
    today, _ = days
    write_by_hand(workspace / "MEMORY.md", "private\n")
    write_by_hand(workspace / "users/owner/USER.md", "private\n")
    write_by_hand(workspace / f"memory/{today}.md", "private\n")
    assert context.build_context(master, "group-1", "group") == {"system": "", "pre_turn": ""}
    assert NoteCursor.objects.count() == 0
    direct = context.build_context(master, "dm-1", "direct")
    assert direct["system"] == "## USER.md\nprivate\n\n## MEMORY.md\nprivate"
    assert direct["pre_turn"] == part(f"memory/{today}.md", "private")


def test_it_refuses_an_unknown_chat_kind(master):
    from memory.errors import InvalidInput

    with pytest.raises(InvalidInput):
        context.build_context(master, "c", "public")
    with pytest.raises(InvalidInput):
        context.pre_turn_block(master, "x" * 201)


def test_the_context_request_records_one_cursor_row_per_conversation(
    owner_client, master, workspace
):
    """Over the API, what the database holds: one cursor row for a conversation; none for
    a preview, a group chat or a refused request (the behaviour: tests/spec §4)."""
    day = clock.today().isoformat()
    (workspace / "MEMORY.md").write_text("- Owner: Minh\n")
    notes.memory_save(master, "sáng")
    url = "/api/agents/master/memory/context"
    first = owner_client.get(url, {"conversation": "tg-42"}).json()
    assert first["system"] == "## MEMORY.md\n- Owner: Minh"
    assert first["pre_turn"].startswith(f"## memory/{day}.md\n```markdown\n# {day}\n\n- ")
    assert owner_client.get(url, {"conversation": "tg-42"}).json()["pre_turn"] == ""
    assert NoteCursor.objects.filter(conversation="tg-42").count() == 1
    # Without a conversation: the preview, nothing recorded.
    assert owner_client.get(url).json()["pre_turn"] == first["pre_turn"]
    group = owner_client.get(url, {"conversation": "g", "chat": "group"}).json()
    assert group == {"system": "", "pre_turn": ""}
    assert owner_client.get(url, {"chat": "public"}).status_code == 422
    assert NoteCursor.objects.count() == 1
