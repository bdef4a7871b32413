"""What the assistants remembered (SPEC §7, memory.feed): every write an agent or a job
made, attended or approved, newest first, filtered, each revertible once under restore's
rules (memory.history.revert)."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.utils import timezone

from memory import feed, history, notes
from memory.attribution import attributed
from memory.errors import Conflict, InvalidInput
from memory.models import FileVersion
from memory.tools import call_tool_result
from memory.writes import add_memory_lines_or_propose
from proposals import actions


def _feed(**filters) -> list[FileVersion]:
    return list(feed.writes(feed.parse_filters(**filters)))


def test_it_lists_agent_writes_and_approved_proposals_not_the_owners_edits(
    master, helper_agent, workspace
):
    with attributed(actor="alice", source="web", via="pages"):
        notes.write_memory(master, "- the owner's own line\n")
    call_tool_result(master, "memory_save", {"text": "Lan chạy bộ 5 km"}, source="telegram")
    call_tool_result(
        helper_agent,
        "user_memory_save",
        {"name": "tea", "description": "Uống trà xanh", "type": "preference", "body": "Trà."},
        source="telegram",
    )
    _, proposal = add_memory_lines_or_propose(master, ["Báo cáo thứ Năm"], source="job:nightly")
    with attributed(actor="alice", via="pages"):
        actions.approve(proposal, by="alice")

    rows = _feed()
    assert [(r.kind, r.by_agent, r.source) for r in rows] == [
        ("lines", "master", "job:nightly"),
        ("fact", "helper", "telegram"),
        ("note", "master", "telegram"),
    ]
    assert rows[0].proposal_id == proposal.pk and rows[0].actor == "alice"
    # INDEX.md changed with the fact: generated, never in the feed.
    assert not any(r.path.endswith("INDEX.md") for r in rows)
    assert FileVersion.objects.filter(path="users/owner/facts/INDEX.md", in_feed=False).exists()


def test_undo_restore_and_hand_edits_are_not_in_the_feed(master, workspace):
    _, proposal = add_memory_lines_or_propose(master, ["one"], source="job:a")
    actions.approve(proposal, by="alice")
    actions.undo(proposal, by="alice")
    (workspace / "MEMORY.md").write_text("by hand\n")
    call_tool_result(master, "memory_save", {"text": "after"}, source="telegram")

    rows = _feed()
    notes_of_memory = [r.note for r in rows if r.path == "MEMORY.md"]
    assert notes_of_memory == [f"approval of proposal #{proposal.pk}"]
    assert FileVersion.objects.filter(op="outside", in_feed=True).count() == 0


def test_it_filters_by_agent_kind_source_and_day(master, helper_agent, workspace):
    call_tool_result(master, "memory_save", {"text": "a"}, source="telegram")
    call_tool_result(helper_agent, "memory_save", {"text": "b"}, source="http")
    _, proposal = add_memory_lines_or_propose(helper_agent, ["c"], source="job:brief")
    actions.approve(proposal, by="alice")
    yesterday = timezone.now() - dt.timedelta(days=1)
    FileVersion.objects.filter(source="telegram").update(created_at=yesterday)

    assert [r.source for r in _feed(agent="helper")] == ["job:brief", "http"]
    assert [r.source for r in _feed(kind="lines")] == ["job:brief"]
    assert [r.kind for r in _feed(source="telegram")] == ["note"]
    local_yesterday = yesterday.astimezone(feed.clock.local_tz()).date().isoformat()
    assert [r.source for r in _feed(day=local_yesterday)] == ["telegram"]
    assert _feed(agent="nobody") == []


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("kind", "poem", "`kind` must be one of lines, memory, note, fact, user, wiki, file."),
        ("day", "2026-13-01", "`day` must be a date, YYYY-MM-DD."),
        ("source", "x" * 201, "`source` is at most 200 characters."),
    ],
)
def test_a_bad_filter_is_refused_with_a_message(field, value, message):
    with pytest.raises(InvalidInput) as caught:
        feed.parse_filters(**{field: value})
    assert caught.value.message == message


def test_it_shows_each_write_with_what_it_replaced(master, workspace):
    notes.write_memory(master, "- one\n")
    call_tool_result(master, "memory_save", {"text": "first"}, source="telegram")
    call_tool_result(master, "memory_save", {"text": "second"}, source="telegram")
    newest = _feed()[0]
    before, after = feed.texts(newest)
    assert after.endswith("second\n") and before.endswith("first\n")
    assert after == (workspace / newest.path).read_text()


def test_a_revert_restores_the_text_before_the_write_as_a_new_version(master, workspace):
    notes.write_memory(master, "- one\n")
    _, proposal = add_memory_lines_or_propose(master, ["two"], source="job:a")
    actions.approve(proposal, by="alice")
    (write,) = _feed()

    made = feed.revert(write, by="alice", via="pages")

    assert (workspace / "MEMORY.md").read_text() == "- one\n"
    assert made.reverts_id == write.pk and made.op == "restore" and not made.in_feed
    row = _feed()[0]
    assert (row.pk, row.reverted_by_seq, row.superseded) == (write.pk, made.seq, True)
    with pytest.raises(Conflict) as caught:
        feed.revert(write, by="alice")
    assert caught.value.message == (
        f"Version {write.seq} of MEMORY.md was already reverted (version {made.seq})."
    )


def test_reverting_a_write_that_created_a_file_deletes_it_and_its_index_line(master, workspace):
    call_tool_result(
        master,
        "user_memory_save",
        {"name": "tea", "description": "Uống trà xanh", "type": "preference", "body": "Trà."},
        source="telegram",
    )
    (write,) = _feed(kind="fact")
    assert "tea" in (workspace / "users/owner/facts/INDEX.md").read_text()

    made = feed.revert(write, by="alice")

    assert not (workspace / "users/owner/facts/tea.md").exists()
    assert made.op == "delete" and made.reverts_id == write.pk
    assert not (workspace / "users/owner/facts/INDEX.md").exists()  # no fact left


def test_a_revert_after_a_later_change_is_409_and_changes_nothing(master, workspace):
    call_tool_result(master, "memory_save", {"text": "first"}, source="telegram")
    call_tool_result(master, "memory_save", {"text": "second"}, source="telegram")
    older = _feed()[1]
    path = workspace / older.path
    text = path.read_text()
    count = FileVersion.objects.count()

    with pytest.raises(Conflict) as caught:
        feed.revert(older, by="alice")

    assert caught.value.message == (
        f"{older.path} changed after version {older.seq} (it is now at version "
        f"{older.seq + 1} or edited by hand): reverting would undo those changes too. Open "
        "the file's history and restore the version you want instead."
    )
    assert path.read_text() == text and FileVersion.objects.count() == count
    # Edited by hand since: the same refusal.
    newest = _feed()[0]
    path.write_text(text + "- by hand\n")
    with pytest.raises(Conflict):
        feed.revert(newest, by="alice")
    assert path.read_text().endswith("- by hand\n")


def test_two_reverts_at_once_revert_once(master, workspace, transactional_db):
    notes.write_memory(master, "- one\n")
    call_tool_result(master, "memory_save", {"text": "x"}, source="telegram")
    (write,) = _feed()
    results: list[str] = []
    barrier = threading.Barrier(4)

    def attempt() -> None:
        barrier.wait()
        try:
            feed.revert(FileVersion.objects.get(pk=write.pk), by="alice")
            results.append("reverted")
        except Conflict:
            results.append("409")
        finally:
            from django.db import connection

            connection.close()

    threads = [threading.Thread(target=attempt) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == ["409", "409", "409", "reverted"]
    assert FileVersion.objects.filter(reverts_id=write.pk).count() == 1
    assert not (workspace / write.path).exists()  # the note it created, deleted once


def test_the_digest_counts_this_weeks_writes(master, workspace):
    for text in ("a", "b", "c"):
        call_tool_result(master, "memory_save", {"text": text}, source="telegram")
    FileVersion.objects.filter(in_feed=True).order_by("id").filter(
        pk=FileVersion.objects.filter(in_feed=True).order_by("id").first().pk
    ).update(created_at=timezone.now() - dt.timedelta(days=8))
    assert feed.count_this_week() == 2


def test_kinds_of_paths():
    assert [
        history.kind_of_path(path)
        for path in (
            "MEMORY.md",
            "agents/helper/memory.md",
            "memory/2026-11-30.md",
            "agents/helper/memory/2026-11-30-1030.md",
            "users/owner/facts/tea.md",
            "users/owner/facts/INDEX.md",
            "users/owner/USER.md",
            "USER.md",
            "memory/wiki/entities/minh.md",
            "memory/wiki/reports/lint.md",
            "memory/projects/plan.md",
        )
    ] == [
        "memory",
        "memory",
        "note",
        "note",
        "fact",
        "generated",
        "user",
        "user",
        "wiki",
        "generated",
        "file",
    ]
