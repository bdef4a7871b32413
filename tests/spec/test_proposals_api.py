"""REST: list, read, decide once, undo; owner only."""

from __future__ import annotations

from memory import workspace
from memory.writes import add_memory_lines_or_propose
from proposals import actions
from tests.proposals.helpers import FACT, MEMORY, fact_proposal


def rows(page: dict) -> list[dict]:
    return page["results"]


def test_it_lists_pending_proposals_by_default(owner_client, helper_agent):
    pending = fact_proposal()
    decided = fact_proposal("other")
    actions.reject(decided, by="alice")

    response = owner_client.get("/api/memory/proposals")

    assert response.status_code == 200
    page = response.json()
    assert (page["count"], page["offset"], page["next"], page["previous"]) == (1, 0, None, None)
    assert [row["id"] for row in page["results"]] == [pending.pk]
    row = page["results"][0]
    for key in ("id", "kind", "status", "agent", "target", "reasons", "payload"):
        assert key in row
    assert row["previous_body"] is None
    assert row["decided_at"] is None
    assert row["source"] == "job:nightly"
    assert row["agent"] is None
    assert row["payload"]["writes"][FACT].startswith("---\n")


def test_it_lists_all_and_filters_by_status_kind_and_agent(owner_client, helper_agent):
    fact = fact_proposal()
    _, lines = add_memory_lines_or_propose(helper_agent, ["x"], source="job:1")
    actions.reject(fact, by="alice")

    every = rows(owner_client.get("/api/memory/proposals?status=all").json())
    rejected = rows(owner_client.get("/api/memory/proposals?status=rejected").json())
    by_kind = rows(owner_client.get("/api/memory/proposals?status=all&kind=user_fact").json())
    by_agent = rows(owner_client.get("/api/memory/proposals?agent=helper").json())

    assert [row["id"] for row in every] == [lines.pk, fact.pk]
    assert [row["id"] for row in rejected] == [fact.pk]
    assert [row["id"] for row in by_kind] == [fact.pk]
    assert [row["id"] for row in by_agent] == [lines.pk]
    assert by_agent[0]["agent"] == "helper"
    assert owner_client.get("/api/memory/proposals?status=nonsense").status_code == 422


def test_it_shows_one_proposal_and_404s_an_unknown_one(owner_client, helper_agent):
    proposal = fact_proposal()

    assert owner_client.get(f"/api/memory/proposals/{proposal.pk}").json()["id"] == proposal.pk
    assert owner_client.get("/api/memory/proposals/999999").status_code == 404
    assert owner_client.post("/api/memory/proposals/999999", {"approve": True}).status_code == 404


def test_it_approves_once_then_answers_409(owner_client, alice, helper_agent):
    proposal = fact_proposal()

    first = owner_client.post(
        f"/api/memory/proposals/{proposal.pk}", {"approve": True}, format="json"
    )
    second = owner_client.post(
        f"/api/memory/proposals/{proposal.pk}", {"approve": False}, format="json"
    )

    assert first.status_code == 200
    assert first.json()["status"] == "approved"
    assert first.json()["decided_by"] == "alice"
    assert first.json()["decided_at"] is not None
    assert workspace.read(FACT) == proposal.payload["writes"][FACT]
    assert second.status_code == 409
    assert second.json()["code"] == "conflict"


def test_it_rejects_and_writes_nothing(owner_client, helper_agent):
    proposal = fact_proposal()

    response = owner_client.post(
        f"/api/memory/proposals/{proposal.pk}", {"approve": False}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["status"] == "rejected"
    assert workspace.read(FACT) is None


def test_it_answers_422_for_a_decision_without_approve(owner_client, helper_agent):
    proposal = fact_proposal()

    response = owner_client.post(f"/api/memory/proposals/{proposal.pk}", {}, format="json")

    assert response.status_code == 422
    proposal.refresh_from_db()
    assert proposal.status == "pending"


def test_it_answers_409_and_supersedes_on_a_stale_base(owner_client, helper_agent):
    workspace.write(MEMORY, "old\n")
    _, proposal = add_memory_lines_or_propose(helper_agent, ["new"], source="job:1")
    workspace.write(MEMORY, "hand edit\n")

    response = owner_client.post(
        f"/api/memory/proposals/{proposal.pk}", {"approve": True}, format="json"
    )

    assert response.status_code == 409
    assert response.json()["status"] == "superseded"
    assert workspace.read(MEMORY) == "hand edit\n"
    assert owner_client.get(f"/api/memory/proposals/{proposal.pk}").json()["status"] == (
        "superseded"
    )


def test_it_undoes_over_rest_once(owner_client, helper_agent):
    workspace.write(MEMORY, "old\n")
    _, proposal = add_memory_lines_or_propose(helper_agent, ["new"], source="job:1")
    owner_client.post(f"/api/memory/proposals/{proposal.pk}", {"approve": True}, format="json")
    assert workspace.read(MEMORY) == "old\nnew\n"

    first = owner_client.post(f"/api/memory/proposals/{proposal.pk}/undo")
    second = owner_client.post(f"/api/memory/proposals/{proposal.pk}/undo")

    assert first.status_code == 200
    assert first.json()["undone_by"] == "alice"
    assert first.json()["undone_at"] is not None
    assert workspace.read(MEMORY) == "old\n"
    assert second.status_code == 409


def test_it_refuses_an_undo_after_a_later_change_over_rest(owner_client, helper_agent):
    workspace.write(MEMORY, "old\n")
    _, proposal = add_memory_lines_or_propose(helper_agent, ["new"], source="job:1")
    owner_client.post(f"/api/memory/proposals/{proposal.pk}", {"approve": True}, format="json")
    workspace.write(MEMORY, "changed later\n")

    response = owner_client.post(f"/api/memory/proposals/{proposal.pk}/undo")

    assert response.status_code == 409
    assert workspace.read(MEMORY) == "changed later\n"


def test_it_refuses_agents_and_strangers(helper_client, master_client, anon_client, helper_agent):
    _, proposal = add_memory_lines_or_propose(helper_agent, ["new"], source="job:1")

    for client in (helper_client, master_client):
        assert client.get("/api/memory/proposals").status_code == 403
        assert client.get(f"/api/memory/proposals/{proposal.pk}").status_code == 403
        decided = client.post(
            f"/api/memory/proposals/{proposal.pk}", {"approve": True}, format="json"
        )
        assert decided.status_code == 403
        assert client.post(f"/api/memory/proposals/{proposal.pk}/undo").status_code == 403
    assert anon_client.get("/api/memory/proposals").status_code in (401, 403)
    proposal.refresh_from_db()
    assert proposal.status == "pending"
    assert workspace.read(MEMORY) == ""  # as the agent was created: empty
