"""Each kind: a job's write becomes a proposal and writes nothing; approve writes exactly
what the proposal showed; reject writes nothing; a second decision is 409."""

from __future__ import annotations

import pytest

from memory import facts, workspace
from memory.errors import Conflict, InvalidInput, NotFound
from memory.writes import (
    add_memory_lines_or_propose,
    forget_fact_or_propose,
    save_fact_or_propose,
)
from proposals import actions
from proposals.models import Proposal
from tests.proposals.helpers import FACT, owner_fact


def _fact_proposal() -> Proposal:
    fact, proposal = save_fact_or_propose(
        "coffee",
        description="Likes black coffee",
        type="preference",
        body="No sugar, ever.",
        source="job:nightly",
        written_by="master",
    )
    assert fact is None
    return proposal


def test_it_turns_a_jobs_fact_into_a_proposal_and_writes_nothing(master):
    proposal = _fact_proposal()

    assert proposal.status == "pending"
    assert proposal.kind == "user_fact"
    assert proposal.target == FACT
    assert proposal.previous_body is None
    assert proposal.base_hash == workspace.ABSENT
    assert proposal.source == "job:nightly"
    assert workspace.read(FACT) is None
    assert workspace.read(facts.INDEX_PATH) is None
    assert "description: Likes black coffee" in proposal.payload["writes"][FACT]


def test_it_writes_the_fact_and_the_index_on_approve(master):
    proposal = _fact_proposal()

    actions.approve(proposal, by="alice")

    assert workspace.read(FACT) == proposal.payload["writes"][FACT]
    assert workspace.read(facts.INDEX_PATH) == (
        "- [coffee](coffee.md) (preference) — Likes black coffee\n"
    )
    proposal.refresh_from_db()
    assert proposal.status == "approved"
    assert proposal.decided_by == "alice"
    assert proposal.decided_at is not None
    assert proposal.applied_hashes == {FACT: workspace.file_hash(FACT)}


def test_it_writes_nothing_on_reject(master):
    proposal = _fact_proposal()

    actions.reject(proposal, by="alice")

    assert workspace.read(FACT) is None
    proposal.refresh_from_db()
    assert proposal.status == "rejected"
    assert proposal.decided_by == "alice"


@pytest.mark.parametrize("first", ["approve", "reject"])
@pytest.mark.parametrize("second", ["approve", "reject"])
def test_it_refuses_a_second_decision(master, first, second):
    proposal = _fact_proposal()
    getattr(actions, first)(proposal, by="alice")
    on_disk = workspace.read(FACT)

    with pytest.raises(Conflict):
        getattr(actions, second)(proposal, by="bob")

    assert workspace.read(FACT) == on_disk
    proposal.refresh_from_db()
    assert proposal.status == ("approved" if first == "approve" else "rejected")
    assert proposal.decided_by == "alice"


def test_it_proposes_to_forget_a_fact_and_deletes_it_on_approve(master):
    before = owner_fact()

    proposal = forget_fact_or_propose("coffee", source="job:hygiene", written_by="master")

    assert proposal.kind == "user_fact_forget"
    assert proposal.previous_body == before
    assert workspace.read(FACT) == before
    actions.approve(proposal, by="alice")
    assert workspace.read(FACT) is None
    assert workspace.read(facts.INDEX_PATH) is None
    with pytest.raises(Conflict):
        actions.reject(proposal, by="alice")


def test_it_rejects_a_forget_and_keeps_the_fact(master):
    before = owner_fact()
    proposal = forget_fact_or_propose("coffee", source="job:hygiene", written_by="master")

    actions.reject(proposal, by="alice")

    assert workspace.read(FACT) == before


def test_it_refuses_to_propose_forgetting_an_unknown_fact(master):
    with pytest.raises(NotFound):
        actions.propose(
            "user_fact_forget",
            agent=None,
            target=FACT,
            payload={"name": "coffee"},
            reasons=[],
            source="job:x",
        )
    assert Proposal.objects.count() == 0


def test_it_proposes_memory_lines_and_appends_them_on_approve(helper_agent):
    workspace.write("agents/helper/MEMORY.md", "# Memory\n- owner lives in Hanoi")

    body, proposal = add_memory_lines_or_propose(
        helper_agent, ["prefers mornings", "runs on Sundays"], source="job:7"
    )

    assert body is None
    assert proposal.kind == "agent_memory"
    assert proposal.agent_id == "helper"
    assert proposal.payload["lines"] == ["prefers mornings", "runs on Sundays"]
    assert workspace.read("agents/helper/MEMORY.md") == "# Memory\n- owner lives in Hanoi"
    actions.approve(proposal, by="alice")
    assert workspace.read("agents/helper/MEMORY.md") == (
        "# Memory\n- owner lives in Hanoi\nprefers mornings\nruns on Sundays\n"
    )
    with pytest.raises(Conflict):
        actions.approve(proposal, by="alice")


def test_it_rejects_memory_lines_and_writes_nothing(helper_agent):
    _, proposal = add_memory_lines_or_propose(helper_agent, ["a line"], source="job:7")

    actions.reject(proposal, by="alice")

    assert workspace.read("agents/helper/MEMORY.md") == ""  # as created: empty


def test_it_refuses_bad_payloads_and_keeps_no_row(master):
    with pytest.raises(InvalidInput):
        actions.propose(
            "user_fact",
            agent=None,
            target="x",
            payload={"name": "Not A Slug", "description": "d", "type": "profile"},
            source="job:1",
        )
    with pytest.raises(InvalidInput):
        actions.propose("agent_memory", agent=master, target="MEMORY.md", payload={"lines": []})
    with pytest.raises(InvalidInput):
        actions.propose("no_such_kind", agent=None, target="x", payload={})
    assert Proposal.objects.count() == 0


def test_it_supersedes_older_pending_proposals_of_a_kind(helper_agent, master):
    _, first = add_memory_lines_or_propose(helper_agent, ["one"], source="job:1")
    _, second = add_memory_lines_or_propose(helper_agent, ["two"], source="job:1")
    _, other_agent = add_memory_lines_or_propose(master, ["three"], source="job:1")

    count = actions.supersede_pending("agent_memory", agent=helper_agent, except_id=second.pk)

    assert count == 1
    first.refresh_from_db()
    second.refresh_from_db()
    other_agent.refresh_from_db()
    assert (first.status, second.status, other_agent.status) == (
        "superseded",
        "pending",
        "pending",
    )
    with pytest.raises(Conflict):
        actions.approve(first, by="alice")
    assert workspace.read("agents/helper/MEMORY.md") == ""  # as created: empty
