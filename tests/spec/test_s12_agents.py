"""`/api/agents` and the agent-scope routes: MEMORY.md, lines, save, context, stats."""

from __future__ import annotations

import json

import pytest

from tests.spec.shapes import RUN_KEYS
from tests.spec.steps import agent

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


def test_the_owner_creates_an_agent_and_no_folder_before_its_first_write(
    owner_client, master, workspace
):
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
    assert not (workspace / "agents/health").exists()  # SPEC §1: made by its first write
    health = agent(owner_client, "health")
    assert (health["name"], health["is_default"], health["autonomous"]) == ("Sức khoẻ", False, True)


def test_creating_an_existing_agent_is_a_conflict(owner_client, helper_agent):
    response = owner_client.post("/api/agents", {"id": "helper", "name": "X"}, format="json")
    assert response.status_code == 409
    assert agent(owner_client, "helper")["name"] == "Helper"


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
    assert owner_client.get("/api/agents").json()["count"] == 1
    assert not (workspace / "agents").exists()


def test_only_the_owner_creates_or_edits_agents(
    master_client, helper_agent, workspace, owner_client
):
    assert master_client.post("/api/agents", {"id": "x", "name": "X"}).status_code == 403
    assert (
        master_client.patch("/api/agents/master", {"name": "Me"}, format="json").status_code == 403
    )
    assert agent(owner_client, "master")["name"] != "Me"


def test_the_owner_edits_an_agent_but_never_its_id(owner_client, helper_agent):
    response = owner_client.patch(
        "/api/agents/helper",
        {"id": "renamed", "name": "Trợ lý", "autonomous": True, "memory_consolidate": ""},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["id"] == "helper"
    assert response.json()["name"] == "Trợ lý"
    assert agent(owner_client, "helper")["autonomous"] is True
    assert agent(owner_client, "renamed") is None
    assert owner_client.patch("/api/agents/nobody", {"name": "x"}).status_code == 404


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
    assert agent(owner_client, "night") is None


def test_it_has_the_default_master_agent_after_migrate(owner_client):
    assert agent(owner_client, "master")["is_default"] is True
    rows = owner_client.get("/api/agents").json()["results"]
    assert [row["id"] for row in rows if row["is_default"]] == ["master"]


@pytest.mark.parametrize("cron", ["0 0 31 2 *", "0 0 30 2 *"])
def test_a_cron_that_never_fires_is_422_and_nothing_is_saved(owner_client, master, cron):
    from django_q.models import Schedule

    owner_client.patch("/api/agents/master", {"memory_consolidate": "0 3 * * *"})
    schedule = Schedule.objects.get(name="memory-consolidate:master")
    response = owner_client.patch("/api/agents/master", {"memory_consolidate": cron})
    assert response.status_code == 422, response.content
    assert "never fires" in json.dumps(response.json())
    assert agent(owner_client, "master")["memory_consolidate"] == "0 3 * * *"
    schedule.refresh_from_db()
    assert schedule.cron == "0 3 * * *"
    created = owner_client.post(
        "/api/agents", {"id": "night", "name": "N", "memory_consolidate": cron}
    )
    assert created.status_code == 422
    assert agent(owner_client, "night") is None


def test_an_agent_id_with_a_trailing_newline_is_422_not_trimmed(owner_client, workspace):
    response = owner_client.post("/api/agents", {"id": "scout\n", "name": "Scout"})
    assert response.status_code == 422, response.content
    assert agent(owner_client, "scout") is None
    assert not (workspace / "agents/scout").exists()


def test_it_lists_runs_newest_first_and_filters(
    owner_client, master, helper_agent, workspace, record_run
):
    made = [
        record_run("master", "consolidate", "succeeded", minutes=0),
        record_run("helper", "compile", "failed", minutes=1),
        record_run("master", "fact_review", "skipped", minutes=2),
    ]

    def ids(**params):
        data = owner_client.get("/api/runs", params).json()
        rows = data["results"] if isinstance(data, dict) else data
        return [row["id"] for row in rows]

    assert ids() == list(reversed(made))
    assert ids(agent="master") == [made[2], made[0]]
    assert ids(kind="compile") == [made[1]]
    assert ids(status="skipped") == [made[2]]
    row = owner_client.get(f"/api/runs/{made[1]}").json()
    assert RUN_KEYS <= set(row)
