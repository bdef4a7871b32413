"""The page of what the assistants remembered (SPEC §7, §15; memory/manage/remembered.py):
every write of an agent or a job with its diff, filtered, reverted in one click, linked
from the agent screen and Activity."""

from __future__ import annotations

import re

from memory.attribution import attributed
from memory.models import FileVersion
from memory.tools import call_tool_result
from memory.writes import add_memory_lines_or_propose
from proposals import actions

URL = "/manage/memory/activity/writes/"


def _text(html: bytes) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.decode())).strip()


def test_the_feed_lists_writes_with_their_diff_and_counts_the_week(pages, master, workspace):
    call_tool_result(master, "memory_save", {"text": "Lan chạy bộ 5 km"}, source="telegram")
    _, proposal = add_memory_lines_or_propose(master, ["Báo cáo thứ Năm"], source="job:nightly")
    with attributed(actor="alice", via="pages"):
        actions.approve(proposal, by="alice")
    # Edited by hand: recorded as an outside edit at the next write, never in the feed.
    (workspace / "MEMORY.md").write_text((workspace / "MEMORY.md").read_text() + "- hand\n")

    response = pages.get(URL)
    assert response.status_code == 200
    text = _text(response.content)
    assert "This week your assistants wrote 2 things." in text
    assert "1–2 of 2" in text
    assert text.index("MEMORY.md lines MEMORY.md v") < text.index("daily note memory/")
    assert f"approved proposal #{proposal.pk} (by alice)" in text
    assert "written in a conversation (tool)" in text
    assert '<span class="diff-added">+Báo cáo thứ Năm</span>' in response.content.decode()


def test_the_filters_narrow_the_feed_and_a_bad_one_says_why(pages, master, helper_agent):
    call_tool_result(master, "memory_save", {"text": "a"}, source="telegram")
    call_tool_result(helper_agent, "memory_save", {"text": "b"}, source="http")

    assert "1–1 of 1" in _text(pages.get(URL, {"agent": "helper"}).content)
    assert "1–1 of 1" in _text(pages.get(URL, {"source": "telegram"}).content)
    assert "No write matches these filters." in _text(pages.get(URL, {"kind": "wiki"}).content)
    bad = _text(pages.get(URL, {"kind": "poem"}).content)
    assert "Not filtered: `kind` must be one of" in bad and "1–2 of 2" in bad


def test_revert_from_the_page_and_a_refused_one_says_what_to_do(pages, master, workspace):
    call_tool_result(master, "memory_save", {"text": "first"}, source="telegram")
    call_tool_result(master, "memory_save", {"text": "second"}, source="telegram")
    newest, older = FileVersion.objects.filter(in_feed=True).order_by("-id")
    note = workspace / newest.path
    after_first = note.read_text()[: note.read_text().rindex("- ")]

    refused = pages.post(f"{URL}{older.pk}/revert/", {"next": URL}, follow=True)
    assert f"Conflict: {older.path} changed after version {older.seq}" in _text(refused.content)
    page = _text(pages.get(URL).content)
    assert "The file changed since: reverting would undo later changes too." in page

    done = pages.post(f"{URL}{newest.pk}/revert/", {"next": URL}, follow=True)
    assert (
        f"Reverted: {newest.path} is as it was before version {newest.seq} (now version "
        f"{newest.seq + 1})." in _text(done.content)
    )
    assert note.read_text() == after_first
    assert f"Reverted (version {newest.seq + 1})" in _text(done.content)
    assert pages.post(f"{URL}999/revert/").status_code == 404
    assert pages.get(f"{URL}{newest.pk}/revert/").status_code == 405


def test_the_agent_screen_and_activity_link_to_the_feed(pages, master):
    call_tool_result(master, "memory_save", {"text": "a"}, source="telegram")
    screen = pages.get("/manage/memory/agents/master/").content.decode()
    assert 'href="/manage/memory/activity/writes/?agent=master"' in screen
    assert "What it remembered (1 write this week)" in _text(screen.encode())
    activity = pages.get("/manage/memory/activity/").content.decode()
    assert 'href="/manage/memory/activity/writes/"' in activity


def test_the_feed_in_vietnamese(pages, master):
    call_tool_result(master, "memory_save", {"text": "a"}, source="telegram")
    text = _text(pages.get(URL, HTTP_ACCEPT_LANGUAGE="vi").content)
    assert "Những gì đã được ghi nhớ" in text
