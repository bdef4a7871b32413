"""SPEC §7, exactly once across a crash: a process killed (SIGKILL) between the file write and the
commit of an approval leaves the change on disk and the proposal `pending`. History must tell the
truth: approving again finds exactly the planned bytes and records the approval (writing only what
is missing), undo then restores what it replaced, and rejecting such a proposal is refused — with a
real process killed at that point."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from memory import workspace
from proposals import actions
from proposals.models import Proposal
from tests.ops import batch_kind

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = Path(__file__).with_name("approve_crash.py")
OLD = "# Memory\n\n- Đi bơi sáng thứ Bảy (2026-01-03)\n"


def crash_while_approving(proposal: Proposal, point: str) -> None:
    """Start a process approving `proposal`, SIGKILL it once it stopped at `point`."""
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), connection.settings_dict["NAME"], str(proposal.pk), point],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline().strip()
        assert line == "written", proc.stderr.read()
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.fixture
def memory_proposal(helper_agent) -> Proposal:
    workspace.write(helper_agent.path("MEMORY.md"), OLD)
    return actions.propose(
        "agent_memory",
        agent=helper_agent,
        target="MEMORY.md",
        payload={"lines": ["Thích trà sen"]},
    )


def test_a_retry_after_a_crash_records_the_approval_and_undo_restores(
    memory_proposal, helper_agent, owner_client
):
    path = helper_agent.path("MEMORY.md")
    planned = memory_proposal.payload["writes"][path]

    crash_while_approving(memory_proposal, "after-write")

    # What the crash left: the change on disk, the row never committed.
    assert workspace.read(path) == planned
    memory_proposal.refresh_from_db()
    assert memory_proposal.status == "pending"

    # The owner approves again (over the API): recorded, not "superseded".
    response = owner_client.post(
        f"/api/memory/proposals/{memory_proposal.pk}", {"approve": True}, format="json"
    )
    assert response.status_code == 200, response.json()
    memory_proposal.refresh_from_db()
    assert memory_proposal.status == "approved"
    assert memory_proposal.decided_by == "alice"
    assert workspace.read(path) == planned  # nothing written twice

    response = owner_client.post(f"/api/memory/proposals/{memory_proposal.pk}/undo")
    assert response.status_code == 200, response.json()
    assert workspace.read(path) == OLD
    memory_proposal.refresh_from_db()
    assert memory_proposal.undone_at is not None


def test_rejecting_a_change_already_on_disk_is_refused(memory_proposal, helper_agent, owner_client):
    crash_while_approving(memory_proposal, "after-write")

    response = owner_client.post(
        f"/api/memory/proposals/{memory_proposal.pk}", {"approve": False}, format="json"
    )

    assert response.status_code == 409
    assert "already on disk" in response.json()["detail"]
    memory_proposal.refresh_from_db()
    assert memory_proposal.status == "pending"  # history does not say "not applied"


def test_lines_written_by_a_killed_approval_are_recorded_not_added_twice(
    memory_proposal, helper_agent
):
    """Lines for MEMORY.md apply to the file as it is (SPEC §7): a file changed after the
    crash does not strand them, and the retry finds them on disk instead of adding them
    again."""
    path = helper_agent.path("MEMORY.md")
    crash_while_approving(memory_proposal, "after-write")
    hand_edit = workspace.read(path) + "- viết tay sau đó\n"
    workspace.write(path, hand_edit)

    actions.approve(memory_proposal, by="alice")

    memory_proposal.refresh_from_db()
    assert memory_proposal.status == "approved"
    assert workspace.read(path) == hand_edit
    assert hand_edit.count("Thích trà sen") == 1
    actions.undo(memory_proposal, by="alice")
    assert workspace.read(path) == OLD + "- viết tay sau đó\n"


def test_a_replacing_proposal_whose_file_changed_after_the_crash_still_supersedes(
    helper_agent,
):
    path = helper_agent.path("MEMORY.md")
    workspace.write(path, OLD)
    proposal = actions.propose(
        "memory_rewrite", agent=helper_agent, target="MEMORY.md", payload={"memory": "mới\n"}
    )
    crash_while_approving(proposal, "after-write")
    hand_edit = workspace.read(path) + "- viết tay sau đó\n"
    workspace.write(path, hand_edit)

    with pytest.raises(actions.Conflict):
        actions.approve(proposal, by="alice")

    proposal.refresh_from_db()
    assert proposal.status == "superseded"
    assert workspace.read(path) == hand_edit


@pytest.mark.usefixtures("workspace")
def test_a_batch_cut_after_its_first_file_is_completed_by_the_retry():
    batch_kind.register()
    workspace.write("notes/a.md", "a before\n")
    proposal = actions.propose(
        "test_two_files",
        agent=None,
        target="two files",
        payload={"files": {"notes/a.md": "a after\n", "notes/b.md": "b new\n"}},
    )

    crash_while_approving(proposal, "mid-batch")
    assert workspace.read("notes/a.md") == "a after\n"
    assert workspace.read("notes/b.md") is None  # the crash came before it

    actions.approve(proposal, by="alice")

    proposal.refresh_from_db()
    assert proposal.status == "approved"
    assert (workspace.read("notes/a.md"), workspace.read("notes/b.md")) == ("a after\n", "b new\n")
    actions.undo(proposal, by="alice")
    assert (workspace.read("notes/a.md"), workspace.read("notes/b.md")) == ("a before\n", None)


@pytest.mark.parametrize("point", ["after-write", "after-commit"])
def test_index_md_agrees_with_the_facts_after_a_kill_at_any_point(
    point, master, owner_client, workspace
):
    """SPEC §2, §7: an approval killed just after its commit left the fact out of INDEX.md
    until a later fact write (4 of 18 kills). Every reader sees the fact's line at once;
    the worker's upkeep writes it."""
    from memory import facts, maintenance, writes

    facts.save_fact(
        "coffee", description="black", type="preference", body="", written_by="owner", source="web"
    )
    _, proposal = writes.save_fact_or_propose(
        "tea", description="green tea, no sugar", type="preference", body="Sencha.",
        source="job:nightly", written_by="master",
    )  # fmt: skip
    crash_while_approving(proposal, point)
    assert (workspace / facts.fact_path("tea")).exists()  # the fact is on disk

    line = "- [tea](tea.md) (preference) — green tea, no sugar"
    assert line in owner_client.get("/api/memory/user").json()["index"]
    context = owner_client.get("/api/agents/master/memory/context").json()["system"]
    assert line in context
    assert maintenance.upkeep().index_healed
    on_disk = (workspace / facts.INDEX_PATH).read_text(encoding="utf-8")
    assert line in on_disk and "[coffee](coffee.md)" in on_disk
    assert not maintenance.upkeep().index_healed  # agrees now: nothing more to write
