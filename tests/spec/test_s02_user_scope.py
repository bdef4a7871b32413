"""`/api/memory/user` and its facts (SPEC §2, §5, §14.1)."""

from __future__ import annotations

import pytest

from memory import clock, facts
from memory.workspace import ABSENT, hash_text
from proposals.models import Proposal

FACT = {"description": "Thích phở bò", "type": "preference", "body": "Nói hôm 2026-11-02."}


def test_it_shows_user_md_with_the_facts_and_the_index(owner_client, workspace):
    assert owner_client.get("/api/memory/user").json() == {
        "body": "",
        "facts": [],
        "index": "",
        "hash": ABSENT,
        "invalid_utf8": False,
    }
    assert (
        owner_client.put("/api/memory/user", {"body": "Tôi là Minh.\n"}, format="json").status_code
        == 200
    )
    owner_client.put("/api/memory/user/facts/pho", {**FACT, "source": "web"}, format="json")
    today = clock.today().isoformat()
    assert owner_client.get("/api/memory/user").json() == {
        "body": "Tôi là Minh.\n",
        "facts": [
            {
                "name": "pho",
                "description": "Thích phở bò",
                "type": "preference",
                "written_by": "owner",
                "source": "web",
                "updated": today,
                "body": "Nói hôm 2026-11-02.",
                "stale": False,
                "invalid_utf8": False,
            }
        ],
        "index": "- [pho](pho.md) (preference) — Thích phở bò\n",
        "hash": hash_text("Tôi là Minh.\n"),
        "invalid_utf8": False,
    }
    assert (workspace / "users/owner/USER.md").read_text(encoding="utf-8") == "Tôi là Minh.\n"


def test_put_creates_then_updates_a_fact(master_client, workspace):
    created = master_client.put("/api/memory/user/facts/pho", FACT, format="json")
    assert created.status_code == 201
    assert created.json()["written_by"] == "master"
    assert created.json()["source"] == "http"
    updated = master_client.put(
        "/api/memory/user/facts/pho",
        {**FACT, "description": "Thích phở gà", "source": "telegram"},
        format="json",
    )
    assert updated.status_code == 200
    assert updated.json()["description"] == "Thích phở gà"
    assert facts.get_fact("pho").source == "telegram"
    assert facts.read_index() == "- [pho](pho.md) (preference) — Thích phở gà\n"


def test_a_job_proposes_a_fact_and_writes_nothing(master_client, workspace):
    response = master_client.put(
        "/api/memory/user/facts/pho", {**FACT, "source": "job:nightly"}, format="json"
    )
    assert response.status_code == 202
    proposal = response.json()["proposal"]
    assert proposal["kind"] == "user_fact"
    assert proposal["status"] == "pending"
    assert proposal["agent"] is None
    assert proposal["target"] == "users/owner/facts/pho.md"
    assert {k: proposal["payload"][k] for k in ("name", "type", "written_by", "source")} == {
        "name": "pho",
        "type": "preference",
        "written_by": "master",
        "source": "job:nightly",
    }
    assert not (workspace / "users/owner/facts").exists()
    assert Proposal.objects.get().source == "job:nightly"


def test_a_job_proposes_to_forget_a_fact(owner_client, workspace):
    owner_client.put("/api/memory/user/facts/pho", FACT, format="json")
    response = owner_client.delete("/api/memory/user/facts/pho?source=job:hygiene")
    assert response.status_code == 202
    assert response.json()["proposal"]["kind"] == "user_fact_forget"
    assert response.json()["proposal"]["payload"]["name"] == "pho"
    assert (workspace / "users/owner/facts/pho.md").exists()
    assert owner_client.delete("/api/memory/user/facts/nope?source=job:x").status_code == 404
    assert Proposal.objects.count() == 1


def test_delete_forgets_a_fact_when_a_person_is_present(owner_client, workspace):
    owner_client.put("/api/memory/user/facts/pho", FACT, format="json")
    assert owner_client.delete("/api/memory/user/facts/pho?source=web").status_code == 204
    assert not (workspace / "users/owner/facts/pho.md").exists()
    assert owner_client.delete("/api/memory/user/facts/pho").status_code == 404
    assert owner_client.get("/api/memory/user").json()["index"] == ""


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("Pho", FACT),
        ("pho_bo", FACT),
        ("..", FACT),
        ("a%2Fb", FACT),
        ("pho", {**FACT, "type": "opinion"}),
        ("pho", {"type": "preference", "body": "x"}),
        ("pho", {**FACT, "description": "  "}),
        ("pho", {**FACT, "source": "job:"}),
    ],
)
@pytest.mark.parametrize("source", [None, "job:nightly"])
def test_bad_facts_are_422_and_nothing_is_written_or_proposed(
    owner_client, workspace, name, body, source
):
    if source and "source" not in body:
        body = {**body, "source": source}
    response = owner_client.put(f"/api/memory/user/facts/{name}", body, format="json")
    assert response.status_code == 422, response.content
    assert not (workspace / "users").exists()
    assert Proposal.objects.count() == 0


def test_a_job_may_not_rewrite_user_md(master_client, workspace):
    response = master_client.put(
        "/api/memory/user", {"body": "x", "source": "job:nightly"}, format="json"
    )
    assert response.status_code == 403
    assert not (workspace / "users/owner/USER.md").exists()


def test_an_agent_token_reads_the_user_scope_but_may_not_rewrite_user_md(
    helper_client, owner_client, workspace
):
    owner_client.put("/api/memory/user", {"body": "Tôi là Minh.\n"}, format="json")
    answer = helper_client.put("/api/memory/user", {"body": "hi\n"}, format="json")
    assert answer.status_code == 403
    assert answer.json()["detail"] == "USER.md is the owner's words: only the owner may rewrite it."
    assert (workspace / "users/owner/USER.md").read_text() == "Tôi là Minh.\n"
    assert helper_client.get("/api/memory/user").json()["body"] == "Tôi là Minh.\n"
    assert helper_client.get("/api/memory/user/facts/nope").status_code == 404
