"""SPEC §7 Proposals: a job's write waits for a person (the presence rule of §5); decided
exactly once (also under concurrent requests), stale base, undo byte for byte, history kept;
the proposals API."""

from __future__ import annotations

import httpx
import pytest
from django.test import Client

from tests.helpers import all_at_once, call_tool
from tests.spec.steps import consolidate, memory_token, proposals, text_hash

TEA = {"description": "likes tea", "type": "preference", "body": "Green tea."}


def _job_fact(client, name="tea", **overrides):
    response = client.put(
        f"/api/memory/user/facts/{name}",
        data={**TEA, "source": "job:nightly", **overrides},
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
    owner_client.put("/api/memory/user/facts/tea", data=TEA, format="json")
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
    owner_client.put("/api/memory/user/facts/tea", data=TEA, format="json")
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
    owner_client.put("/api/memory/user/facts/tea", data=TEA, format="json")
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
        "/api/memory/user/facts/tea", data={**TEA, "source": source}, format="json"
    )
    assert response.status_code in (200, 201)
    assert f"source: {source}" in (workspace / "users/owner/facts/tea.md").read_text(
        encoding="utf-8"
    )


def test_it_makes_a_proposal_from_the_job_tool_call(master, owner_client, workspace):
    from rest_framework.test import APIClient

    key = memory_token("agent", "master", "--job", "nightly")
    job = APIClient()
    job.credentials(HTTP_AUTHORIZATION=f"Token {key}", HTTP_X_MEMORY_SOURCE="chat")
    response = job.post(
        "/api/agents/master/tools/user_memory_save", data={**TEA, "name": "tea"}, format="json"
    )
    assert response.status_code == 202
    assert "result" in response.json()
    assert response.json()["proposal"]["kind"] == "user_fact"
    assert not (workspace / "users/owner/facts/tea.md").exists()
    assert [row["source"] for row in proposals(owner_client)] == ["job:nightly"]


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
    owner_client, helper_agent, workspace, fake_llm, owner_today, runs_inline
):
    """§7 Replaced: a new memory_rewrite supersedes the older pending one; approving it is 409."""
    import os
    import time

    memory = workspace / "agents/helper/MEMORY.md"
    memory.write_text("- old (2026-01-01)\n", encoding="utf-8")
    today = owner_today
    note = workspace / f"agents/helper/memory/{today}.md"
    ids = []
    for round_ in range(2):
        os.utime(memory, (time.time() - 7200, time.time() - 7200))
        note.write_text(f"# {today}\n- 09:00 x{round_}\n", encoding="utf-8")
        fake_llm.script({"memory": f"- new {round_}\n", "reasons": []}, {"pages": []})
        assert consolidate(owner_client, "helper")["status"] == "succeeded"
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


# --- test_history_kept.py --------------------
# SPEC §7: "History keeps everything; nothing is deleted" — neither over REST nor in the
# admin can a proposal row be removed.


def _proposal(owner_client):
    response = owner_client.put(
        "/api/memory/user/facts/tea",
        data={"description": "likes tea", "type": "preference", "body": "", "source": "job:n"},
        format="json",
    )
    assert response.status_code == 202
    return response.json()["proposal"]["id"]


def test_it_offers_no_delete_over_rest(owner_client, master, workspace):
    pid = _proposal(owner_client)
    assert owner_client.delete(f"/api/memory/proposals/{pid}").status_code in (403, 405)
    assert owner_client.get(f"/api/memory/proposals/{pid}").status_code == 200


def test_it_offers_no_delete_in_the_admin(owner_client, alice, master, workspace):
    pid = _proposal(owner_client)
    client = Client()
    client.force_login(alice)
    page = client.post(f"/admin/proposals/proposal/{pid}/delete/", {"post": "yes"})
    assert page.status_code in (302, 403, 404)
    bulk = client.post(
        "/admin/proposals/proposal/",
        {"action": "delete_selected", "_selected_action": [pid], "post": "yes"},
    )
    assert bulk.status_code in (200, 302, 403)
    assert owner_client.get(f"/api/memory/proposals/{pid}").status_code == 200


# --- the proposals API ------------------------------------------------------------------
# REST: list, read, decide once, undo; owner only. A job's fact write (master's token,
# source job:nightly) and a job's lines for helper's MEMORY.md make the proposals.

FACT = "users/owner/facts/coffee.md"
MEMORY = "agents/helper/MEMORY.md"


def fact_proposal(master_client, description: str = "Likes black coffee") -> dict:
    """A nightly job's `user_fact` proposal for the fact `coffee` (nothing written yet)."""
    response = master_client.put(
        "/api/memory/user/facts/coffee",
        {"description": description, "type": "preference", "body": "No sugar.",
         "source": "job:nightly"},
        format="json",
    )  # fmt: skip
    assert response.status_code == 202, response.content
    return response.json()["proposal"]


def lines_proposal(helper_client, lines: list[str]) -> dict:
    """A job's `agent_memory` proposal of lines for helper's MEMORY.md."""
    response = helper_client.post(
        "/api/agents/helper/memory/lines", {"lines": lines, "source": "job:1"}, format="json"
    )
    assert response.status_code == 202, response.content
    return response.json()["proposal"]


def _read(workspace, path: str) -> str | None:
    file = workspace / path
    return file.read_text(encoding="utf-8") if file.exists() else None


def _write(workspace, path: str, text: str) -> None:
    (workspace / path).write_text(text, encoding="utf-8")


def rows(page: dict) -> list[dict]:
    return page["results"]


def test_it_lists_pending_proposals_by_default(
    owner_client, master_client, helper_client, workspace
):
    pending = fact_proposal(master_client)
    decided = fact_proposal(master_client, "other")
    _decide(owner_client, decided["id"], approve=False)

    response = owner_client.get("/api/memory/proposals")

    assert response.status_code == 200
    page = response.json()
    assert (page["count"], page["offset"], page["next"], page["previous"]) == (1, 0, None, None)
    assert [row["id"] for row in page["results"]] == [pending["id"]]
    row = page["results"][0]
    for key in ("id", "kind", "status", "agent", "target", "reasons", "payload"):
        assert key in row
    assert row["previous_body"] is None
    assert row["decided_at"] is None
    assert row["source"] == "job:nightly"
    assert row["agent"] is None
    assert row["payload"]["writes"][FACT].startswith("---\n")


def test_it_lists_all_and_filters_by_status_kind_and_agent(
    owner_client, master_client, helper_client, workspace
):
    fact = fact_proposal(master_client)
    lines = lines_proposal(helper_client, ["x"])
    _decide(owner_client, fact["id"], approve=False)

    every = rows(owner_client.get("/api/memory/proposals?status=all").json())
    rejected = rows(owner_client.get("/api/memory/proposals?status=rejected").json())
    by_kind = rows(owner_client.get("/api/memory/proposals?status=all&kind=user_fact").json())
    by_agent = rows(owner_client.get("/api/memory/proposals?agent=helper").json())

    assert [row["id"] for row in every] == [lines["id"], fact["id"]]
    assert [row["id"] for row in rejected] == [fact["id"]]
    assert [row["id"] for row in by_kind] == [fact["id"]]
    assert [row["id"] for row in by_agent] == [lines["id"]]
    assert by_agent[0]["agent"] == "helper"
    assert owner_client.get("/api/memory/proposals?status=nonsense").status_code == 422


def test_it_shows_one_proposal_and_404s_an_unknown_one(
    owner_client, master_client, helper_client, workspace
):
    proposal = fact_proposal(master_client)

    assert (
        owner_client.get(f"/api/memory/proposals/{proposal['id']}").json()["id"] == proposal["id"]
    )
    assert owner_client.get("/api/memory/proposals/999999").status_code == 404
    assert owner_client.post("/api/memory/proposals/999999", {"approve": True}).status_code == 404


def test_it_approves_once_then_answers_409(owner_client, master_client, helper_client, workspace):
    proposal = fact_proposal(master_client)

    first = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}", {"approve": True}, format="json"
    )
    second = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}", {"approve": False}, format="json"
    )

    assert first.status_code == 200
    assert first.json()["status"] == "approved"
    assert first.json()["decided_by"] == "alice"
    assert first.json()["decided_at"] is not None
    assert _read(workspace, FACT) == proposal["payload"]["writes"][FACT]
    assert second.status_code == 409
    assert second.json()["code"] == "conflict"


def test_it_rejects_and_writes_nothing(owner_client, master_client, helper_client, workspace):
    proposal = fact_proposal(master_client)

    response = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}", {"approve": False}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["status"] == "rejected"
    assert _read(workspace, FACT) is None


def test_it_answers_422_for_a_decision_without_approve(
    owner_client, master_client, helper_client, workspace
):
    proposal = fact_proposal(master_client)

    response = owner_client.post(f"/api/memory/proposals/{proposal['id']}", {}, format="json")

    assert response.status_code == 422
    assert owner_client.get(f"/api/memory/proposals/{proposal['id']}").json()["status"] == (
        "pending"
    )


def rewrite_proposal(helper_client, body: str) -> dict:
    """A job's `memory_rewrite` proposal of helper's whole MEMORY.md (a PUT from a job)."""
    response = helper_client.put(
        "/api/agents/helper/memory", {"body": body, "source": "job:1"}, format="json"
    )
    assert response.status_code == 202, response.content
    return response.json()["proposal"]


def test_it_answers_409_and_supersedes_on_a_stale_base(
    owner_client, master_client, helper_client, workspace
):
    _write(workspace, MEMORY, "old\n")
    proposal = rewrite_proposal(helper_client, "new\n")
    _write(workspace, MEMORY, "hand edit\n")

    response = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}", {"approve": True}, format="json"
    )

    assert response.status_code == 409
    assert response.json()["status"] == "superseded"
    assert _read(workspace, MEMORY) == "hand edit\n"
    assert owner_client.get(f"/api/memory/proposals/{proposal['id']}").json()["status"] == (
        "superseded"
    )


def test_lines_apply_to_the_file_as_it_is_after_a_hand_edit(
    owner_client, master_client, helper_client, workspace
):
    _write(workspace, MEMORY, "old\n")
    proposal = lines_proposal(helper_client, ["new"])
    _write(workspace, MEMORY, "hand edit\n")

    response = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}", {"approve": True}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["status"] == "approved"
    assert _read(workspace, MEMORY) == "hand edit\nnew\n"


def test_it_undoes_over_rest_once(owner_client, master_client, helper_client, workspace):
    _write(workspace, MEMORY, "old\n")
    proposal = lines_proposal(helper_client, ["new"])
    owner_client.post(f"/api/memory/proposals/{proposal['id']}", {"approve": True}, format="json")
    assert _read(workspace, MEMORY) == "old\nnew\n"

    first = owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo")
    second = owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo")

    assert first.status_code == 200
    assert first.json()["undone_by"] == "alice"
    assert first.json()["undone_at"] is not None
    assert _read(workspace, MEMORY) == "old\n"
    assert second.status_code == 409


def test_it_refuses_an_undo_after_a_later_change_over_rest(
    owner_client, master_client, helper_client, workspace
):
    _write(workspace, MEMORY, "old\n")
    proposal = lines_proposal(helper_client, ["new"])
    owner_client.post(f"/api/memory/proposals/{proposal['id']}", {"approve": True}, format="json")
    _write(workspace, MEMORY, "changed later\n")

    response = owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo")

    assert response.status_code == 409
    assert _read(workspace, MEMORY) == "changed later\n"


def test_it_refuses_agents_and_strangers(
    helper_client, master_client, anon_client, owner_client, workspace
):
    proposal = lines_proposal(helper_client, ["new"])

    for client in (helper_client, master_client):
        assert client.get("/api/memory/proposals").status_code == 403
        assert client.get(f"/api/memory/proposals/{proposal['id']}").status_code == 403
        decided = client.post(
            f"/api/memory/proposals/{proposal['id']}", {"approve": True}, format="json"
        )
        assert decided.status_code == 403
        assert client.post(f"/api/memory/proposals/{proposal['id']}/undo").status_code == 403
    assert anon_client.get("/api/memory/proposals").status_code in (401, 403)
    assert owner_client.get(f"/api/memory/proposals/{proposal['id']}").json()["status"] == (
        "pending"
    )
    assert _read(workspace, MEMORY) == ""  # as the agent was created: empty


# The live server's listen backlog is small (socketserver's request_queue_size): more
# simultaneous connects than that are reset by the kernel, which would test the harness.
THREADS = 8


def test_it_undoes_once_under_concurrent_http_requests(live_server, live_owner_key, workspace):
    headers = {"Authorization": f"Token {live_owner_key}"}
    base = live_server.url
    with httpx.Client(timeout=60, headers=headers) as client:
        assert client.put(
            f"{base}/api/memory/user/facts/tea",
            json={"description": "likes tea", "type": "preference", "body": "b"},
        ).status_code in (200, 201)
        original = (workspace / "users/owner/facts/tea.md").read_bytes()
        proposal = client.put(
            f"{base}/api/memory/user/facts/tea",
            json={
                "description": "likes oolong",
                "type": "preference",
                "body": "b",
                "source": "job:n",
            },
        ).json()["proposal"]
        assert (
            client.post(
                f"{base}/api/memory/proposals/{proposal['id']}", json={"approve": True}
            ).status_code
            == 200
        )
    url = f"{base}/api/memory/proposals/{proposal['id']}/undo"
    answers = all_at_once([lambda c: c.post(url, headers=headers)] * THREADS)
    codes = sorted(r.status_code for r in answers)
    assert codes == [200] + [409] * (THREADS - 1), codes
    assert (workspace / "users/owner/facts/tea.md").read_bytes() == original


def test_it_supersedes_a_rewrite_proposal_when_memory_md_changed(owner_client, master, workspace):
    (workspace / "MEMORY.md").write_text("- base\n", encoding="utf-8")
    proposal = owner_client.put(
        "/api/agents/master/memory",
        data={"body": "- base\n- from the job\n", "source": "job:nightly"},
        format="json",
    ).json()["proposal"]
    owner_client.put(
        "/api/agents/master/memory", data={"body": "- owner rewrote it\n"}, format="json"
    )
    answer = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}", data={"approve": True}, format="json"
    )
    assert answer.status_code == 409
    assert (
        owner_client.get(f"/api/memory/proposals/{proposal['id']}").json()["status"] == "superseded"
    )
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == "- owner rewrote it\n"


def test_it_adds_job_lines_to_a_memory_md_the_owner_rewrote_since(owner_client, master, workspace):
    (workspace / "MEMORY.md").write_text("- base\n", encoding="utf-8")
    proposal = owner_client.post(
        "/api/agents/master/memory/lines",
        data={"lines": ["- from the job"], "source": "job:nightly"},
        format="json",
    ).json()["proposal"]
    owner_client.put(
        "/api/agents/master/memory", data={"body": "- owner rewrote it\n"}, format="json"
    )
    answer = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}", data={"approve": True}, format="json"
    )
    assert answer.status_code == 200
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == (
        "- owner rewrote it\n- from the job\n"
    )


def _save_note(client, text):
    return client.post("/api/agents/master/tools/memory_save", data={"text": text}, format="json")


def test_stats_count_pending_proposals(owner_client, helper_client, master, workspace):
    helper_client.post(
        "/api/agents/helper/memory/lines", {"lines": ["- x"], "source": "job:1"}, format="json"
    )
    assert _save_note(owner_client, "a").status_code == 200
    response = owner_client.get("/api/stats")
    assert response.status_code == 200
    assert response.json() == {"pending_proposals": 1, "agents": 2, "facts": 0, "notes": 1}


# --- appends stack (SPEC §7): the review day with 40 proposals from two jobs ---------------


MEMORY_START = (
    "# MEMORY.md\n\n## Lịch\n\n- Chạy bộ thứ Ba, thứ Năm.\n\n"
    "## Công việc\n\n- Báo cáo gửi anh Minh.\n"
)


def _review_day(owner_client, token_client, workspace, *, chat: bool = True) -> dict:
    """Two jobs of master propose 40 writes — 30 single lines for MEMORY.md, 10 new facts —
    while master, in chat, appends a line to MEMORY.md after every fifth proposal."""
    _write(workspace, "MEMORY.md", MEMORY_START)
    nightly = token_client("master", job="nightly")
    digest = token_client("master", job="digest")
    present = token_client("master")
    lines, facts = [], []
    for n in range(30):
        job = nightly if n % 2 == 0 else digest
        answer = job.post(
            "/api/agents/master/memory/lines", {"lines": [f"Dòng {n} của job"]}, format="json"
        )
        assert answer.status_code == 202, answer.content
        lines.append(answer.json()["proposal"]["id"])
        if chat and n % 5 == 4:
            said = present.post(
                "/api/agents/master/memory/lines",
                {"lines": [f"Chat line {n}"], "source": "chat"},
                format="json",
            )
            assert said.status_code == 200, said.content
    for n in range(10):
        answer = digest.put(
            f"/api/memory/user/facts/fact-{n}",
            {"description": f"fact {n}", "type": "reference", "body": f"Body {n}."},
            format="json",
        )
        assert answer.status_code == 202, answer.content
        facts.append(answer.json()["proposal"]["id"])
    return {"lines": lines, "facts": facts}


def _statuses(owner_client) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in proposals(owner_client):
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    return counts


def test_appends_stack_through_a_review_day_of_40_proposals(
    owner_client, token_client, master, workspace
):
    made = _review_day(owner_client, token_client, workspace)
    assert _statuses(owner_client) == {"pending": 40}

    # One approval applies one line on the file as it is now (chat lines included) and
    # leaves the 39 others pending.
    assert _decide(owner_client, made["lines"][0]).status_code == 200
    assert _statuses(owner_client) == {"approved": 1, "pending": 39}

    # Bulk-approving 6 line proposals of one file applies 6, each reported.
    six = made["lines"][1:7]
    answer = owner_client.post(
        "/api/memory/proposals/bulk", {"ids": six, "approve": True}, format="json"
    )
    assert answer.status_code == 200
    assert answer.json()["decided"] == six and answer.json()["refused"] == []
    assert [item["status"] for item in answer.json()["results"]] == ["approved"] * 6

    # The rest, in one bulk approval: nothing lost.
    rest = made["lines"][7:] + made["facts"]
    answer = owner_client.post(
        "/api/memory/proposals/bulk", {"ids": rest, "approve": True}, format="json"
    )
    assert answer.json()["refused"] == []
    assert _statuses(owner_client) == {"approved": 40}
    memory = _read(workspace, "MEMORY.md")
    for n in range(30):
        assert memory.count(f"\nDòng {n} của job\n") == 1
    for n in (4, 9, 14, 19, 24, 29):
        assert memory.count(f"\nChat line {n}\n") == 1
    assert memory.startswith(MEMORY_START)
    assert all(_read(workspace, f"users/owner/facts/fact-{n}.md") for n in range(10))


# --- the job's reason and where a line goes (SPEC §5, §7) -----------------------------------


def _owner_pages(alice) -> Client:
    pages = Client()
    pages.force_login(alice)
    return pages


def test_a_job_s_reason_is_kept_and_shown_as_its_own_words(
    owner_client, token_client, alice, master, workspace
):
    job = token_client("master", job="nightly")
    why = "Lan nói sáng nay: từ nay gửi báo cáo vào thứ Năm."
    by_tool = call_tool(
        job,
        "user_memory_save",
        name="report-day",
        description="Báo cáo gửi thứ Năm",
        type="preference",
        body="",
        reason=why,
    )
    by_rest = job.put(
        "/api/memory/user/facts/tea", {**TEA, "reason": "Said twice this week."}, format="json"
    )
    by_lines = job.post(
        "/api/agents/master/memory/lines", {"lines": ["x"], "reason": "A durable rule."}
    )
    by_rewrite = job.put("/api/agents/master/memory", {"body": "y\n", "reason": "Tidied."})
    by_forget = job.delete("/api/memory/user/facts/tea?reason=Wrong")

    assert by_tool.status_code == 202, by_tool.content
    proposal = by_tool.json()["proposal"]
    assert proposal["reason"] == why
    assert by_rest.json()["proposal"]["reason"] == "Said twice this week."
    assert by_lines.json()["proposal"]["reason"] == "A durable rule."
    assert by_rewrite.json()["proposal"]["reason"] == "Tidied."
    assert by_forget.status_code == 404  # tea is only proposed: nothing to forget yet
    card = _owner_pages(alice).get(f"/manage/memory/proposals/{proposal['id']}/").content
    assert "The job's own words</span> " + why in card.decode()


def test_a_reason_past_1000_characters_is_422_and_proposes_nothing(
    owner_client, token_client, master, workspace
):
    job = token_client("master", job="nightly")
    answer = job.put("/api/memory/user/facts/tea", {**TEA, "reason": "x" * 1001}, format="json")
    assert answer.status_code == 422
    assert "at most 1000 characters" in answer.json()["detail"]
    assert proposals(owner_client) == []


def test_a_job_s_line_goes_under_the_heading_it_names(owner_client, token_client, workspace):
    _write(workspace, "MEMORY.md", MEMORY_START)
    job = token_client("master", job="nightly")
    under = job.post(
        "/api/agents/master/memory/lines", {"lines": ["- Bơi thứ Bảy."], "heading": "Lịch"}
    ).json()["proposal"]
    new = job.post(
        "/api/agents/master/memory/lines", {"lines": ["- 128/82"], "heading": "## Sức khỏe"}
    ).json()["proposal"]

    assert _decide(owner_client, under["id"]).status_code == 200
    assert _decide(owner_client, new["id"]).status_code == 200

    assert _read(workspace, "MEMORY.md") == (
        "# MEMORY.md\n\n## Lịch\n\n- Chạy bộ thứ Ba, thứ Năm.\n- Bơi thứ Bảy.\n\n"
        "## Công việc\n\n- Báo cáo gửi anh Minh.\n\n## Sức khỏe\n\n- 128/82\n"
    )


def test_the_card_puts_a_contradicting_line_beside_the_one_memory_holds(
    owner_client, token_client, alice, workspace
):
    _write(workspace, "MEMORY.md", "# MEMORY.md\n\n- Báo cáo gửi anh Minh mỗi thứ Sáu.\n")
    job = token_client("master", job="nightly")
    proposal = job.post(
        "/api/agents/master/memory/lines", {"lines": ["- Báo cáo gửi anh Minh mỗi thứ Năm."]}
    ).json()["proposal"]

    html = _owner_pages(alice).get(f"/manage/memory/proposals/{proposal['id']}/").content
    html = html.decode()

    assert "A proposed line may contradict a line the file already holds:" in html
    assert "<code>- Báo cáo gửi anh Minh mỗi thứ Sáu.</code>" in html
    assert "day: thứ Sáu → thứ Năm" in html


# --- stale is a step: re-apply on the current text (SPEC §7) -------------------------------

BEFORE = "# MEMORY.md\n\n- Lan lives in Đà Nẵng.\n- Report to Minh on Fridays.\n- Runs at 6.\n"
REWRITE = (
    "# MEMORY.md\n\n- Lan lives in Đà Nẵng. (2026-01-05)\n- Report to Minh on Fridays.\n"
    "- Runs at 6.\n- Swims on Saturdays. (2026-01-05)\n"
)


def _stale_rewrite(owner_client, token_client, workspace, *, edit: str) -> dict:
    """A job's rewrite of MEMORY.md, then the owner's own change of the file."""
    _write(workspace, "MEMORY.md", BEFORE)
    job = token_client("master", job="nightly")
    proposal = job.put("/api/agents/master/memory", {"body": REWRITE}).json()["proposal"]
    owner_client.put("/api/agents/master/memory", {"body": edit}, format="json")
    return proposal


def _seen(owner_client, pid) -> dict:
    plan = owner_client.get(f"/api/memory/proposals/{pid}/reapply")
    assert plan.status_code == 200, plan.content
    return plan.json()


def test_the_card_says_the_file_changed_before_approve_and_offers_reapply(
    owner_client, token_client, alice, workspace
):
    edited = BEFORE.replace("Fridays", "Thursdays")
    proposal = _stale_rewrite(owner_client, token_client, workspace, edit=edited)

    html = _owner_pages(alice).get(f"/manage/memory/proposals/{proposal['id']}/").content
    html = html.decode()

    assert "Changed since it was proposed:" in html
    assert "What changed in MEMORY.md since" in html
    assert '<span class="diff-added">+- Report to Minh on <mark>Thursdays</mark>.</span>' in html
    assert f'href="/manage/memory/proposals/{proposal["id"]}/reapply/"' in html
    assert f'action="/manage/memory/proposals/{proposal["id"]}/approve/"' not in html


def test_a_stale_rewrite_is_merged_into_the_current_text_and_approved_once(
    owner_client, token_client, workspace
):
    edited = BEFORE.replace("Fridays", "Thursdays") + "- Chat line.\n"
    proposal = _stale_rewrite(owner_client, token_client, workspace, edit=edited)

    plan = _seen(owner_client, proposal["id"])
    (file,) = plan["files"]
    assert file["changed_since"] and file["conflicts"] == 0
    assert file["merged"] == (
        "# MEMORY.md\n\n- Lan lives in Đà Nẵng. (2026-01-05)\n- Report to Minh on Thursdays.\n"
        "- Runs at 6.\n- Chat line.\n- Swims on Saturdays. (2026-01-05)\n"
    )
    answer = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}/reapply",
        {"base_hashes": {"MEMORY.md": file["current_hash"]}},
        format="json",
    )

    assert answer.status_code == 200, answer.content
    assert answer.json()["status"] == "approved"
    assert answer.json()["decision"]["reapplied"] == {"MEMORY.md": {"dropped": 0, "edited": False}}
    assert _read(workspace, "MEMORY.md") == file["merged"]
    again = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}/reapply",
        {"base_hashes": {"MEMORY.md": text_hash(file["merged"])}},
        format="json",
    )
    assert again.status_code == 422  # decided: nothing to re-apply
    # Undo puts back the text the merge replaced, the owner's change included.
    assert owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo").status_code == 200
    assert _read(workspace, "MEMORY.md") == edited


def test_a_conflicting_change_is_shown_and_the_owner_s_resolution_is_written(
    owner_client, token_client, workspace
):
    edited = BEFORE.replace("- Lan lives in Đà Nẵng.", "- Lan lives in Hội An.")
    proposal = _stale_rewrite(owner_client, token_client, workspace, edit=edited)

    (file,) = _seen(owner_client, proposal["id"])["files"]
    conflict = [hunk for hunk in file["hunks"] if not hunk["applied"]]
    assert conflict == [
        {
            "hunk": [2, 3, 2, 3],
            "removed": ["- Lan lives in Đà Nẵng.\n"],
            "added": ["- Lan lives in Đà Nẵng. (2026-01-05)\n"],
            "applied": False,
            "current": ["- Lan lives in Hội An.\n"],
        }
    ]
    resolved = file["merged"].replace("Hội An.", "Hội An. (2026-01-05)")
    answer = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}/reapply",
        {"base_hashes": {"MEMORY.md": file["current_hash"]}, "texts": {"MEMORY.md": resolved}},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    assert _read(workspace, "MEMORY.md") == resolved
    assert answer.json()["decision"]["reapplied"]["MEMORY.md"] == {"dropped": 1, "edited": True}


def test_a_file_changed_again_after_the_merge_was_shown_is_409(
    owner_client, token_client, workspace
):
    proposal = _stale_rewrite(owner_client, token_client, workspace, edit=BEFORE + "- one\n")
    (file,) = _seen(owner_client, proposal["id"])["files"]
    owner_client.put("/api/agents/master/memory", {"body": BEFORE + "- two\n"}, format="json")

    answer = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}/reapply",
        {"base_hashes": {"MEMORY.md": file["current_hash"]}},
        format="json",
    )

    assert answer.status_code == 409
    assert _read(workspace, "MEMORY.md") == BEFORE + "- two\n"
    assert owner_client.get(f"/api/memory/proposals/{proposal['id']}").json()["status"] == (
        "pending"
    )


def test_a_superseded_rewrite_is_reapplied_as_a_new_proposal_once(
    owner_client, token_client, workspace
):
    proposal = _stale_rewrite(owner_client, token_client, workspace, edit=BEFORE + "- chat\n")
    assert _decide(owner_client, proposal["id"]).status_code == 409  # now superseded
    (file,) = _seen(owner_client, proposal["id"])["files"]
    body = {"base_hashes": {"MEMORY.md": file["current_hash"]}}

    made = owner_client.post(f"/api/memory/proposals/{proposal['id']}/reapply", body)
    twice = owner_client.post(f"/api/memory/proposals/{proposal['id']}/reapply", body)

    assert made.status_code == 201, made.content
    new = made.json()
    assert new["status"] == "pending" and new["reapplies"] == proposal["id"]
    assert new["payload"]["writes"] == {"MEMORY.md": file["merged"]}
    assert twice.status_code == 409
    assert f"already re-applied as #{new['id']}" in twice.json()["detail"]
    assert (
        owner_client.get(f"/api/memory/proposals/{proposal['id']}").json()["reapplied_as"]
        == (new["id"])
    )
    assert _read(workspace, "MEMORY.md") == BEFORE + "- chat\n"  # nothing written yet
    assert _decide(owner_client, new["id"]).status_code == 200
    assert _read(workspace, "MEMORY.md") == file["merged"]


def test_lines_need_no_reapply(owner_client, token_client, workspace):
    _write(workspace, "MEMORY.md", BEFORE)
    job = token_client("master", job="nightly")
    lines = job.post("/api/agents/master/memory/lines", {"lines": ["x"]}).json()["proposal"]
    answer = owner_client.get(f"/api/memory/proposals/{lines['id']}/reapply")
    assert answer.status_code == 422
    assert "applies to the file as it is" in answer.json()["detail"]


@pytest.mark.parametrize("superseded", [False, True])
def test_a_reapply_is_decided_once_under_concurrent_requests(
    live_server, live_owner_key, workspace, superseded
):
    headers = {"Authorization": f"Token {live_owner_key}"}
    base = live_server.url
    _write(workspace, "MEMORY.md", BEFORE)
    with httpx.Client(timeout=60, headers=headers) as client:
        proposal = client.put(
            f"{base}/api/agents/master/memory", json={"body": REWRITE, "source": "job:n"}
        ).json()["proposal"]
        client.put(f"{base}/api/agents/master/memory", json={"body": BEFORE + "- chat\n"})
        if superseded:
            client.post(f"{base}/api/memory/proposals/{proposal['id']}", json={"approve": True})
        (file,) = client.get(f"{base}/api/memory/proposals/{proposal['id']}/reapply").json()[
            "files"
        ]
    url = f"{base}/api/memory/proposals/{proposal['id']}/reapply"
    body = {"base_hashes": {"MEMORY.md": file["current_hash"]}}
    answers = all_at_once([lambda c: c.post(url, json=body, headers=headers)] * THREADS)

    codes = sorted(r.status_code for r in answers)
    won = 201 if superseded else 200
    # The losers: 409 (decided, or re-applied, meanwhile), or 422 when they came after the
    # winner's commit (a decided proposal has nothing to re-apply).
    assert codes.count(won) == 1 and set(codes) <= {won, 409, 422}, codes
    with httpx.Client(timeout=60, headers=headers) as client:
        rows = client.get(f"{base}/api/memory/proposals", params={"status": "all"}).json()
    assert len(rows["results"]) == (2 if superseded else 1)
    if not superseded:
        assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == file["merged"]


# --- an edited approval never deletes (SPEC §7) ---------------------------------------------


@pytest.mark.parametrize("texts", [{"MEMORY.md": None}, {}])
def test_an_edited_approval_without_a_text_is_422_and_changes_nothing(
    owner_client, token_client, workspace, texts
):
    _write(workspace, "MEMORY.md", BEFORE)
    job = token_client("master", job="nightly")
    proposal = job.put("/api/agents/master/memory", {"body": REWRITE}).json()["proposal"]

    answer = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}", {"approve": True, "texts": texts}, format="json"
    )

    assert answer.status_code == 422
    assert _read(workspace, "MEMORY.md") == BEFORE
    assert owner_client.get(f"/api/memory/proposals/{proposal['id']}").json()["status"] == (
        "pending"
    )


# --- the feed of what was remembered ------------------------------------------------------


def _feed(client, **params):
    response = client.get("/api/memory/activity/writes", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_the_feed_lists_what_agents_and_jobs_wrote_newest_first_with_diffs(
    owner_client, master_client, token_client, master, workspace
):
    assert _save_note(master_client, "Lan chạy bộ 5 km").status_code == 200
    job = token_client("master", job="nightly")
    proposal = job.post(
        "/api/agents/master/memory/lines", {"lines": ["Báo cáo thứ Năm"]}, format="json"
    ).json()["proposal"]
    assert _decide(owner_client, proposal["id"]).status_code == 200

    page = _feed(owner_client)
    assert (page["count"], page["offset"], page["limit"]) == (2, 0, 50)
    approved, attended = page["results"]
    assert (approved["path"], approved["kind"]) == ("MEMORY.md", "lines")
    assert approved["how"] == "approved"
    assert (approved["source"], approved["by_agent"], approved["proposal"]) == (
        "job:nightly",
        "master",
        proposal["id"],
    )
    assert ["+", "Báo cáo thứ Năm"] in approved["diff"]
    assert (attended["kind"], attended["how"]) == ("note", "attended")
    assert attended["actor"] == "agent:master"
    note = (workspace / attended["path"]).read_text(encoding="utf-8")
    assert [row for row in attended["diff"] if row[0] == "+"] == [
        ["+", line] for line in note.splitlines()
    ]
    assert note.rstrip().endswith("Lan chạy bộ 5 km")
    assert attended["revertible"] is True and attended["reverted_by"] is None

    assert [r["kind"] for r in _feed(owner_client, kind="note")["results"]] == ["note"]
    assert _feed(owner_client, source="job:nightly")["count"] == 1
    assert _feed(owner_client, agent="helper")["count"] == 0
    assert _feed(owner_client, limit=1, offset=1)["results"][0]["id"] == attended["id"]


def test_a_write_is_reverted_once_and_a_changed_file_is_409(
    owner_client, master_client, master, workspace
):
    _save_note(master_client, "first")
    _save_note(master_client, "second")
    newest, older = _feed(owner_client)["results"]
    note = workspace / newest["path"]
    text = note.read_text(encoding="utf-8")

    refused = owner_client.post(f"/api/memory/activity/writes/{older['id']}/revert")
    assert refused.status_code == 409
    assert refused.json()["detail"] == (
        f"{older['path']} changed after version {older['seq']} (it is now at version "
        f"{newest['seq']} or edited by hand): reverting would undo those changes too. Open the "
        "file's history and restore the version you want instead."
    )
    assert note.read_text(encoding="utf-8") == text

    done = owner_client.post(f"/api/memory/activity/writes/{newest['id']}/revert")
    assert done.status_code == 200, done.content
    assert done.json()["op"] == "restore"
    assert note.read_text(encoding="utf-8") == text[: text.rindex("- ")]  # "second" gone
    again = owner_client.post(f"/api/memory/activity/writes/{newest['id']}/revert")
    assert again.status_code == 409
    row = _feed(owner_client)["results"][0]
    assert (row["id"], row["reverted_by"], row["revertible"]) == (
        newest["id"],
        done.json()["id"],
        False,
    )


def test_the_feed_is_the_owners_and_refuses_bad_filters(
    owner_client, master_client, master, workspace
):
    assert master_client.get("/api/memory/activity/writes").status_code == 403
    assert master_client.post("/api/memory/activity/writes/1/revert").status_code == 403
    bad = owner_client.get("/api/memory/activity/writes", {"kind": "poem"})
    assert bad.status_code == 422
    assert bad.json()["detail"] == (
        "`kind` must be one of lines, memory, note, fact, user, wiki, file."
    )
    assert owner_client.get("/api/memory/activity/writes", {"day": "30/11"}).status_code == 422
    assert owner_client.get("/api/memory/activity/writes", {"limit": "x"}).status_code == 422
    assert owner_client.post("/api/memory/activity/writes/999/revert").status_code == 404


# --- notices on screen and over the API ----------------------------------------------------


def test_notifications_status_a_test_and_its_deliveries_over_the_api(
    owner_client, master_client, master, settings
):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    received: list[tuple[str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's API
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.headers["Content-Type"], body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    settings.MEMORY_NOTIFY_EMAIL = ""
    settings.MEMORY_NOTIFY_WEBHOOK_URL = ""
    none = owner_client.get("/api/memory/notifications").json()
    assert (none["email"]["configured"], none["webhook"]["configured"]) == (False, False)
    refused = owner_client.post("/api/memory/notifications/test")
    assert refused.status_code == 422
    assert refused.json()["detail"].startswith("No channel to send to: set MEMORY_NOTIFY_EMAIL")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/topic/memory?token=abc"
        settings.MEMORY_NOTIFY_WEBHOOK_URL = url
        settings.MEMORY_NOTIFY_WEBHOOK_FORMAT = "text"
        status = owner_client.get("/api/memory/notifications").json()
        host = f"http://127.0.0.1:{server.server_address[1]}"
        assert status["webhook"] == {
            "configured": True,
            "target": host,
            "signed": False,
            "format": "text",
        }
        sent = owner_client.post("/api/memory/notifications/test")
    finally:
        server.shutdown()
    assert sent.status_code == 200, sent.content
    (delivery,) = sent.json()["deliveries"]
    assert (delivery["channel"], delivery["what"], delivery["ok"], delivery["target"]) == (
        "webhook",
        "test",
        True,
        host,
    )
    ((content_type, body),) = received
    assert content_type == "text/plain; charset=utf-8"
    assert body.decode().startswith("A test from the Settings page: this is what a notice")
    page = owner_client.get("/api/memory/notifications/deliveries").json()
    assert page["count"] == 1 and page["results"][0]["id"] == delivery["id"]
    for path in ("/api/memory/notifications", "/api/memory/notifications/deliveries"):
        assert master_client.get(path).status_code == 403
    assert master_client.post("/api/memory/notifications/test").status_code == 403
