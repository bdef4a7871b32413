"""SPEC §5 presence rule and §7 proposals: exactly once, stale base, undo byte for byte."""

from __future__ import annotations

import pytest

from memory import clock
from proposals.models import Proposal

FACT = {"description": "likes tea", "type": "preference", "body": "Green tea."}


def _job_fact(client, name="tea", **overrides):
    response = client.put(
        f"/api/memory/user/facts/{name}",
        data={**FACT, "source": "job:nightly", **overrides},
        format="json",
    )
    assert response.status_code == 202, response.content
    return response.json()["proposal"]


def _decide(client, pid, approve=True):
    return client.post(f"/api/memory/proposals/{pid}", data={"approve": approve}, format="json")


def _pending_count(client):
    return client.get("/api/stats").json()["pending_proposals"]


PROPOSAL_KEYS = (
    "id",
    "kind",
    "status",
    "agent",
    "target",
    "reasons",
    "payload",
    "previous_body",
    "created_at",
    "decided_at",
)


def test_it_turns_a_job_fact_write_into_a_pending_proposal_and_writes_nothing(
    owner_client, master, workspace
):
    proposal = _job_fact(owner_client)
    for key in PROPOSAL_KEYS:
        assert key in proposal
    assert proposal["status"] == "pending" and proposal["kind"] == "user_fact"
    assert proposal["agent"] is None
    assert not (workspace / "users/owner/facts/tea.md").exists()
    assert _pending_count(owner_client) == 1


def test_it_applies_on_approve_and_answers_409_to_a_second_decision(
    owner_client, master, workspace
):
    proposal = _job_fact(owner_client)
    first = _decide(owner_client, proposal["id"])
    assert first.status_code == 200
    assert first.json()["status"] == "approved" and first.json()["decided_at"]
    text = (workspace / "users/owner/facts/tea.md").read_text(encoding="utf-8")
    assert "Green tea." in text and "source: job:nightly" in text
    assert "- [tea](tea.md) (preference) — likes tea" in (
        workspace / "users/owner/facts/INDEX.md"
    ).read_text(encoding="utf-8")
    before = (workspace / "users/owner/facts/tea.md").read_bytes()
    assert _decide(owner_client, proposal["id"]).status_code == 409
    assert _decide(owner_client, proposal["id"], approve=False).status_code == 409
    assert (workspace / "users/owner/facts/tea.md").read_bytes() == before
    assert _pending_count(owner_client) == 0


def test_it_writes_nothing_on_reject_and_answers_409_after(owner_client, master, workspace):
    proposal = _job_fact(owner_client)
    response = _decide(owner_client, proposal["id"], approve=False)
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    assert not (workspace / "users/owner/facts/tea.md").exists()
    assert _decide(owner_client, proposal["id"]).status_code == 409
    assert not (workspace / "users/owner/facts/tea.md").exists()
    assert owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo").status_code == 409


def test_it_supersedes_on_a_stale_base_and_keeps_the_hand_edit(owner_client, master, workspace):
    owner_client.put("/api/memory/user/facts/tea", data=FACT, format="json")
    proposal = _job_fact(owner_client, description="likes oolong")
    path = workspace / "users/owner/facts/tea.md"
    path.write_text(path.read_text(encoding="utf-8") + "hand edit\n", encoding="utf-8")
    before = path.read_bytes()
    assert _decide(owner_client, proposal["id"]).status_code == 409
    assert (
        owner_client.get(f"/api/memory/proposals/{proposal['id']}").json()["status"] == "superseded"
    )
    assert path.read_bytes() == before
    # A superseded proposal has no undo, and cannot be decided again.
    assert owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo").status_code == 409
    assert _decide(owner_client, proposal["id"]).status_code == 409


def test_it_undoes_byte_for_byte_once(owner_client, master, workspace):
    owner_client.put("/api/memory/user/facts/tea", data=FACT, format="json")
    path = workspace / "users/owner/facts/tea.md"
    # An odd original (no final newline, trailing spaces, a unicode line) must come back exactly.
    original = path.read_bytes().rstrip(b"\n") + "  \nđọc  ".encode()
    path.write_bytes(original)
    proposal = _job_fact(owner_client, description="likes oolong")
    assert _decide(owner_client, proposal["id"]).status_code == 200
    assert path.read_bytes() != original
    undo = owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo")
    assert undo.status_code == 200
    for key in PROPOSAL_KEYS:
        assert key in undo.json()
    assert path.read_bytes() == original
    assert owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo").status_code == 409
    assert path.read_bytes() == original


def test_it_removes_a_fact_the_undone_proposal_created(owner_client, master, workspace):
    proposal = _job_fact(owner_client)
    _decide(owner_client, proposal["id"])
    assert owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo").status_code == 200
    assert not (workspace / "users/owner/facts/tea.md").exists()
    index = workspace / "users/owner/facts/INDEX.md"
    assert not index.exists() or "[tea]" not in index.read_text(encoding="utf-8")


def test_it_refuses_undo_after_a_later_change(owner_client, master, workspace):
    proposal = _job_fact(owner_client)
    _decide(owner_client, proposal["id"])
    path = workspace / "users/owner/facts/tea.md"
    path.write_text(path.read_text(encoding="utf-8") + "later\n", encoding="utf-8")
    before = path.read_bytes()
    assert owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo").status_code == 409
    assert path.read_bytes() == before


def test_it_proposes_forgetting_from_a_job_and_deletes_on_approve(owner_client, master, workspace):
    owner_client.put("/api/memory/user/facts/tea", data=FACT, format="json")
    response = owner_client.delete("/api/memory/user/facts/tea?source=job:nightly")
    assert response.status_code == 202
    proposal = response.json()["proposal"]
    assert proposal["kind"] == "user_fact_forget"
    assert (workspace / "users/owner/facts/tea.md").exists()
    assert _decide(owner_client, proposal["id"]).status_code == 200
    assert not (workspace / "users/owner/facts/tea.md").exists()
    assert owner_client.delete("/api/memory/user/facts/tea").status_code == 404


def test_it_turns_job_memory_lines_into_an_agent_memory_proposal(owner_client, master, workspace):
    (workspace / "MEMORY.md").write_bytes(b"old line\nno newline at end")
    response = owner_client.post(
        "/api/agents/master/memory/lines",
        data={"lines": ["new durable line"], "source": "job:nightly"},
        format="json",
    )
    assert response.status_code == 202
    proposal = response.json()["proposal"]
    assert (
        proposal["kind"] == "agent_memory"
        and proposal["agent"] in ("master", {"id": "master"})
        or proposal["agent"]
    )
    assert "new durable line" in str(proposal["payload"])
    assert (workspace / "MEMORY.md").read_bytes() == b"old line\nno newline at end"
    assert _decide(owner_client, proposal["id"]).status_code == 200
    text = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert text.startswith("old line\nno newline at end\n") and "new durable line" in text
    assert owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo").status_code == 200
    assert (workspace / "MEMORY.md").read_bytes() == b"old line\nno newline at end"


def test_it_writes_present_memory_lines_at_once(owner_client, master, workspace):
    response = owner_client.post(
        "/api/agents/master/memory/lines",
        data={"lines": ["present line"], "source": "telegram"},
        format="json",
    )
    assert response.status_code == 200
    assert "present line" in response.json()["body"]
    assert "present line" in (workspace / "MEMORY.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("source", ["chat", "telegram", "web", "http"])
def test_it_writes_a_fact_at_once_for_every_present_source(owner_client, master, workspace, source):
    response = owner_client.put(
        "/api/memory/user/facts/tea", data={**FACT, "source": source}, format="json"
    )
    assert response.status_code in (200, 201)
    assert f"source: {source}" in (workspace / "users/owner/facts/tea.md").read_text(
        encoding="utf-8"
    )


def test_it_makes_a_proposal_from_the_job_tool_call(master, workspace):
    from rest_framework.test import APIClient

    from memory.models import ApiToken

    _, key = ApiToken.issue(agent=master, job="nightly")
    job = APIClient()
    job.credentials(HTTP_AUTHORIZATION=f"Token {key}", HTTP_X_MEMORY_SOURCE="chat")
    response = job.post(
        "/api/agents/master/tools/user_memory_save", data={**FACT, "name": "tea"}, format="json"
    )
    assert response.status_code == 202
    assert "result" in response.json()
    assert response.json()["proposal"]["kind"] == "user_fact"
    assert not (workspace / "users/owner/facts/tea.md").exists()
    assert Proposal.objects.get().source == "job:nightly"


def test_it_lists_pending_by_default_and_everything_with_status_all(
    owner_client, master, workspace
):
    first = _job_fact(owner_client, "one")
    second = _job_fact(owner_client, "two")
    _decide(owner_client, first["id"], approve=False)
    pending = owner_client.get("/api/memory/proposals").json()
    pending = pending["results"] if isinstance(pending, dict) else pending
    assert [p["id"] for p in pending] == [second["id"]]
    everything = owner_client.get("/api/memory/proposals", {"status": "all"}).json()
    everything = everything["results"] if isinstance(everything, dict) else everything
    assert sorted(p["id"] for p in everything) == sorted([first["id"], second["id"]])


def test_it_answers_404_to_an_unknown_proposal(owner_client, master, workspace):
    assert _decide(owner_client, 999999).status_code == 404


def test_it_supersedes_an_older_pending_rewrite_with_a_newer_one(
    owner_client, helper_agent, workspace, fake_llm
):
    """§7 Replaced: a new memory_rewrite supersedes the older pending one; approving it is 409."""
    import os
    import time

    from memory.jobs.nightly import consolidate_agent

    memory = workspace / "agents/helper/MEMORY.md"
    memory.write_text("- old (2026-01-01)\n", encoding="utf-8")
    today = clock.today()
    note = workspace / f"agents/helper/memory/{today}.md"
    ids = []
    for round_ in range(2):
        os.utime(memory, (time.time() - 7200, time.time() - 7200))
        note.write_text(f"# {today}\n- 09:00 x{round_}\n", encoding="utf-8")
        fake_llm.script({"memory": f"- new {round_}\n", "reasons": []}, {"pages": []})
        assert consolidate_agent(helper_agent, trigger="test").status == "succeeded"
        listed = owner_client.get("/api/memory/proposals", {"status": "all"}).json()
        listed = listed["results"] if isinstance(listed, dict) else listed
        ids = sorted(p["id"] for p in listed if p["kind"] == "memory_rewrite")
    assert len(ids) == 2, ids
    older, newer = ids
    assert owner_client.get(f"/api/memory/proposals/{older}").json()["status"] == "superseded"
    assert _decide(owner_client, older).status_code == 409
    assert memory.read_text(encoding="utf-8") == "- old (2026-01-01)\n"
    assert _decide(owner_client, newer).status_code == 200
    assert memory.read_text(encoding="utf-8") == "- new 1\n"
