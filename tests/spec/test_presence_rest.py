"""End to end over REST (SPEC §5, §14.1): a job's write answers 202 with a proposal and
writes nothing; the owner approves it through the proposals API and then it is written."""

from __future__ import annotations

from memory import workspace
from tests.proposals.helpers import FACT, owner_fact


def _decide(client, proposal_id: int, approve: bool):
    return client.post(f"/api/memory/proposals/{proposal_id}", {"approve": approve}, format="json")


def test_it_turns_a_jobs_fact_put_into_a_proposal_then_writes_it_on_approve(
    owner_client, master_client
):
    response = master_client.put(
        "/api/memory/user/facts/coffee",
        {
            "description": "Likes black coffee",
            "type": "preference",
            "body": "No sugar.",
            "source": "job:nightly",
        },
        format="json",
    )

    assert response.status_code == 202, response.content
    proposal = response.json()["proposal"]
    assert proposal["kind"] == "user_fact"
    assert proposal["status"] == "pending"
    assert workspace.read(FACT) is None
    approved = _decide(owner_client, proposal["id"], True)
    assert approved.status_code == 200
    assert workspace.read(FACT) == proposal["payload"]["writes"][FACT]
    assert "source: job:nightly" in workspace.read(FACT)
    assert _decide(owner_client, proposal["id"], True).status_code == 409


def test_it_turns_a_jobs_forget_into_a_proposal_and_keeps_the_fact_on_reject(
    owner_client, master_client
):
    before = owner_fact()

    response = master_client.delete("/api/memory/user/facts/coffee?source=job:hygiene")

    assert response.status_code == 202, response.content
    proposal = response.json()["proposal"]
    assert proposal["kind"] == "user_fact_forget"
    assert proposal["previous_body"] == before
    assert workspace.read(FACT) == before
    assert _decide(owner_client, proposal["id"], False).status_code == 200
    assert workspace.read(FACT) == before
    assert _decide(owner_client, proposal["id"], True).status_code == 409


def test_it_turns_a_jobs_memory_lines_into_a_proposal_then_appends_on_approve(
    owner_client, helper_client, helper_agent
):
    workspace.write("agents/helper/MEMORY.md", "# Memory\n")

    response = helper_client.post(
        "/api/agents/helper/memory/lines",
        {"lines": ["Standup is at 09:30"], "source": "job:weekly"},
        format="json",
    )

    assert response.status_code == 202, response.content
    proposal = response.json()["proposal"]
    assert proposal["kind"] == "agent_memory"
    assert proposal["agent"] == "helper"
    assert workspace.read("agents/helper/MEMORY.md") == "# Memory\n"
    assert _decide(owner_client, proposal["id"], True).status_code == 200
    assert workspace.read("agents/helper/MEMORY.md") == "# Memory\nStandup is at 09:30\n"
    undone = owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo")
    assert undone.status_code == 200
    assert workspace.read("agents/helper/MEMORY.md") == "# Memory\n"


def test_it_counts_pending_proposals_in_stats(owner_client, master_client):
    master_client.put(
        "/api/memory/user/facts/coffee",
        {"description": "d", "type": "preference", "body": "", "source": "job:1"},
        format="json",
    )

    assert owner_client.get("/api/stats").json()["pending_proposals"] == 1
