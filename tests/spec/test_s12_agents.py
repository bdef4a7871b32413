"""`/api/agents` and the agent-scope routes: MEMORY.md, lines, save, context, stats."""

from __future__ import annotations

import pytest

from memory import clock, notes
from memory.models import Agent, NoteCursor
from memory.workspace import hash_text
from proposals.models import Proposal

AGENT_FIELDS = {"id", "name", "is_default", "autonomous", "memory_consolidate"}


def test_it_lists_agents_for_the_owner(owner_client, master, helper_agent):
    response = owner_client.get("/api/agents")
    assert response.status_code == 200
    assert response.json()["count"] == 2
    assert response.json()["results"] == [
        {
            "id": "master",
            "name": master.name,
            "is_default": True,
            "autonomous": False,
            "memory_consolidate": "",
        },
        {
            "id": "helper",
            "name": "Helper",
            "is_default": False,
            "autonomous": False,
            "memory_consolidate": "",
        },
    ]


def test_an_agent_token_lists_only_its_own_agent(helper_client, master):
    assert [a["id"] for a in helper_client.get("/api/agents").json()["results"]] == ["helper"]


def test_the_owner_creates_an_agent_with_its_directories(owner_client, master, workspace):
    response = owner_client.post(
        "/api/agents",
        {"id": "health", "name": "Sức khoẻ", "autonomous": True, "memory_consolidate": "0 3 * * *"},
        format="json",
    )
    assert response.status_code == 201
    assert response.json() == {
        "id": "health",
        "name": "Sức khoẻ",
        "is_default": False,
        "autonomous": True,
        "memory_consolidate": "0 3 * * *",
    }
    assert (workspace / "agents/health/memory").is_dir()
    agent = Agent.objects.get(pk="health")
    assert (agent.name, agent.is_default, agent.autonomous) == ("Sức khoẻ", False, True)


def test_creating_an_existing_agent_is_a_conflict(owner_client, helper_agent):
    response = owner_client.post("/api/agents", {"id": "helper", "name": "X"}, format="json")
    assert response.status_code == 409
    assert Agent.objects.get(pk="helper").name == "Helper"


@pytest.mark.parametrize(
    "body",
    [
        {"id": "Bad Id", "name": "x"},
        {"id": "../x", "name": "x"},
        {"id": "a_b", "name": "x"},
        {"id": "", "name": "x"},
        {"id": "ok", "name": ""},
        {"id": "ok", "name": "x", "memory_consolidate": "every night"},
    ],
)
def test_it_refuses_a_bad_agent(owner_client, master, workspace, body):
    response = owner_client.post("/api/agents", body, format="json")
    assert response.status_code == 422
    assert Agent.objects.count() == 1
    assert not (workspace / "agents").exists()


def test_only_the_owner_creates_or_edits_agents(master_client, helper_agent, workspace):
    assert master_client.post("/api/agents", {"id": "x", "name": "X"}).status_code == 403
    assert (
        master_client.patch("/api/agents/master", {"name": "Me"}, format="json").status_code == 403
    )
    assert Agent.objects.get(pk="master").name != "Me"


def test_the_owner_edits_an_agent_but_never_its_id(owner_client, helper_agent):
    response = owner_client.patch(
        "/api/agents/helper",
        {"id": "renamed", "name": "Trợ lý", "autonomous": True, "memory_consolidate": ""},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["id"] == "helper"
    assert response.json()["name"] == "Trợ lý"
    assert Agent.objects.get(pk="helper").autonomous is True
    assert not Agent.objects.filter(pk="renamed").exists()
    assert owner_client.patch("/api/agents/nobody", {"name": "x"}).status_code == 404


def test_it_reads_and_writes_memory_md(owner_client, helper_agent, workspace):
    empty = {"body": "", "hash": hash_text(""), "invalid_utf8": False}
    assert owner_client.get("/api/agents/helper/memory").json() == empty
    response = owner_client.put(
        "/api/agents/helper/memory", {"body": "- Owner: Minh\n"}, format="json"
    )
    assert response.status_code == 200
    written = {
        "body": "- Owner: Minh\n",
        "hash": hash_text("- Owner: Minh\n"),
        "invalid_utf8": False,
    }
    assert response.json() == written
    assert (workspace / "agents/helper/MEMORY.md").read_text() == "- Owner: Minh\n"
    assert owner_client.get("/api/agents/helper/memory").json() == written


def test_an_agent_adds_durable_lines_when_a_person_is_present(helper_client, workspace):
    response = helper_client.post(
        "/api/agents/helper/memory/lines",
        {"lines": ["- Bác sĩ: BS Lan (2026-11-30)"], "source": "telegram"},
        format="json",
    )
    assert response.status_code == 200
    assert response.json() == {"body": "- Bác sĩ: BS Lan (2026-11-30)\n"}
    assert (workspace / "agents/helper/MEMORY.md").read_text() == "- Bác sĩ: BS Lan (2026-11-30)\n"
    assert Proposal.objects.count() == 0


def test_a_job_proposes_durable_lines_instead(helper_client, workspace):
    (workspace / "agents/helper/MEMORY.md").write_text("- old\n")
    response = helper_client.post(
        "/api/agents/helper/memory/lines",
        {"lines": ["- new line"], "source": "job:nightly"},
        format="json",
    )
    assert response.status_code == 202
    proposal = response.json()["proposal"]
    assert proposal["kind"] == "agent_memory"
    assert proposal["status"] == "pending"
    assert proposal["agent"] == "helper"
    assert proposal["target"] == "agents/helper/MEMORY.md"
    assert proposal["payload"]["lines"] == ["- new line"]
    assert proposal["previous_body"] == "- old\n"
    assert (workspace / "agents/helper/MEMORY.md").read_text() == "- old\n"
    row = Proposal.objects.get()
    assert (row.kind, row.source, row.agent_id) == ("agent_memory", "job:nightly", "helper")


@pytest.mark.parametrize(
    "body",
    [
        {"lines": [], "source": "job:nightly"},
        {"lines": ["  "], "source": "job:nightly"},
        {"lines": ["ok"], "source": "job:"},
        {"lines": ["ok"], "source": "two words"},
        {"lines": "ok", "source": "web"},
    ],
)
def test_bad_lines_are_422_from_a_job_too(helper_client, workspace, body):
    response = helper_client.post("/api/agents/helper/memory/lines", body, format="json")
    assert response.status_code == 422
    assert Proposal.objects.count() == 0
    assert (workspace / "agents/helper/MEMORY.md").read_text() == ""  # as created


def test_memory_save_over_rest_appends_to_todays_note(helper_client, workspace):
    response = helper_client.post(
        "/api/agents/helper/memory/save",
        {"text": "Đo huyết áp\n128/82", "source": "telegram"},
        format="json",
    )
    assert response.status_code == 200
    day = clock.today().isoformat()
    body = response.json()
    assert (body["day"], body["name"]) == (day, f"{day}.md")
    assert body["line"].endswith(" Đo huyết áp 128/82")
    assert (workspace / f"agents/helper/memory/{day}.md").read_text(encoding="utf-8") == (
        f"# {day}\n\n{body['line']}\n"
    )


@pytest.mark.parametrize("body", [{"text": ""}, {"text": " \n "}, {}, {"text": "x", "source": ""}])
def test_memory_save_refuses_empty_text(helper_client, workspace, body):
    response = helper_client.post("/api/agents/helper/memory/save", body, format="json")
    assert response.status_code == 422
    assert list((workspace / "agents/helper/memory").iterdir()) == []


def test_it_serves_the_prompt_context_and_moves_the_cursor(owner_client, master, workspace):
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


def test_stats_count_pending_proposals(owner_client, helper_client, master, workspace):
    helper_client.post(
        "/api/agents/helper/memory/lines", {"lines": ["- x"], "source": "job:1"}, format="json"
    )
    notes.memory_save(master, "a")
    response = owner_client.get("/api/stats")
    assert response.status_code == 200
    assert response.json() == {"pending_proposals": 1, "agents": 2, "facts": 0, "notes": 1}


def test_an_unknown_agent_is_404_for_the_owner(owner_client, master):
    assert owner_client.get("/api/agents/nobody").status_code == 404
    assert owner_client.get("/api/agents/nobody/memory").status_code == 404


def test_it_refuses_a_six_field_cron_that_the_schedule_could_not_use(owner_client):
    response = owner_client.post(
        "/api/agents",
        {"id": "night", "name": "Night", "memory_consolidate": "0 3 * * * 0"},
        format="json",
    )
    assert response.status_code == 422
    assert not Agent.objects.filter(pk="night").exists()
