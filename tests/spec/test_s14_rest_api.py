"""SPEC §14 / §14.1: authentication, agent-token scoping, and every minimum response shape."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.spec.shapes import RUN_KEYS


def _rows(data):
    return data["results"] if isinstance(data, dict) and "results" in data else data


def test_it_serves_the_minimum_shapes(owner_client, master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    owner_client.put("/api/memory/user", data={"body": "I am Lan.\n"}, format="json")
    fact = owner_client.put(
        "/api/memory/user/facts/tea",
        data={"description": "likes tea", "type": "preference", "body": "b"},
        format="json",
    )
    assert fact.status_code in (200, 201)
    for key in ("name", "description", "type", "written_by", "source", "updated", "body", "stale"):
        assert key in fact.json()
    user = owner_client.get("/api/memory/user").json()
    assert {"body", "facts", "index"} <= set(user)
    assert {
        "name",
        "description",
        "type",
        "written_by",
        "source",
        "updated",
        "body",
        "stale",
    } <= set(user["facts"][0])
    assert "- [tea](tea.md) (preference) — likes tea" in user["index"]

    assert set(
        owner_client.put("/api/agents/master/memory", data={"body": "m\n"}, format="json").json()
    ) >= {"body"}
    assert owner_client.get("/api/agents/master/memory").json()["body"] == "m\n"
    note = owner_client.put(
        "/api/agents/master/memory/notes/2026-01-01", data={"body": "n\n"}, format="json"
    )
    assert {"day", "body"} <= set(note.json())
    assert (
        owner_client.get("/api/agents/master/memory/notes/2026-01-01").json()["day"] == "2026-01-01"
    )
    notes = _rows(owner_client.get("/api/agents/master/memory/notes").json())
    assert {"day", "name", "size", "modified"} <= set(notes[0])

    context = owner_client.get("/api/agents/master/memory/context", {"conversation": "x"}).json()
    assert {"system", "pre_turn"} <= set(context)

    tools = owner_client.get("/api/agents/master/tools")
    assert tools.status_code == 200
    names = str(tools.json())
    for tool in (
        "memory_save",
        "memory_search",
        "memory_get",
        "user_memory_save",
        "user_memory_forget",
        "wiki_get",
        "wiki_search",
        "wiki_apply",
    ):
        assert tool in names
    assert {"pending_proposals"} <= set(owner_client.get("/api/stats").json())
    agents = _rows(owner_client.get("/api/agents").json())
    assert {"id", "name", "is_default", "autonomous", "memory_consolidate"} <= set(agents[0])
    master_row = owner_client.get("/api/agents/master").json()
    assert master_row["is_default"] is True

    runs = owner_client.get("/api/runs")
    assert runs.status_code == 200
    assert owner_client.get("/api/schema/").status_code == 200


def test_it_answers_202_with_a_run_and_409_while_one_runs(owner_client, helper_agent, workspace):
    first = owner_client.post("/api/agents/helper/memory/consolidate")
    assert first.status_code == 202
    assert {"id", "status"} <= set(first.json()["run"])
    run = owner_client.get(f"/api/runs/{first.json()['run']['id']}").json()
    assert RUN_KEYS <= set(run)
    if run["status"] == "running":
        assert owner_client.post("/api/agents/helper/memory/consolidate").status_code == 409
        assert owner_client.post("/api/agents/helper/memory/wiki/compile").status_code == 409


def test_it_scopes_script_store_entries(
    owner_client, helper_client, master, helper_agent, workspace
):
    put = owner_client.put(
        "/api/agents/helper/script-store/schedule/s1/counter",
        data={"value": {"n": [1, 2]}},
        format="json",
    )
    assert put.status_code in (200, 201)
    one = owner_client.get("/api/agents/helper/script-store/schedule/s1/counter").json()
    assert one["value"] == {"n": [1, 2]}
    rows = _rows(helper_client.get("/api/agents/helper/script-store").json())
    assert {"scope", "scope_id", "key", "value", "updated_at"} <= set(rows[0])
    assert rows[0]["scope"] == "schedule"
    assert helper_client.get("/api/agents/master/script-store").status_code == 403
    assert helper_client.delete(
        "/api/agents/helper/script-store/schedule/s1/counter"
    ).status_code in (200, 204)
    assert (
        owner_client.get("/api/agents/helper/script-store/schedule/s1/counter").status_code == 404
    )


AGENT_ROUTES = [
    ("get", "/api/agents/master/memory"),
    ("put", "/api/agents/master/memory"),
    ("get", "/api/agents/master/memory/notes"),
    ("get", "/api/agents/master/memory/notes/2026-01-01"),
    ("put", "/api/agents/master/memory/notes/2026-01-01"),
    ("post", "/api/agents/master/memory/lines"),
    ("post", "/api/agents/master/memory/save"),
    ("get", "/api/agents/master/memory/context"),
    ("post", "/api/agents/master/memory/consolidate"),
    ("get", "/api/agents/master/memory/wiki"),
    ("get", "/api/agents/master/memory/wiki/report"),
    ("get", "/api/agents/master/memory/wiki/pages/x"),
    ("put", "/api/agents/master/memory/wiki/pages/x"),
    ("delete", "/api/agents/master/memory/wiki/pages/x"),
    ("post", "/api/agents/master/memory/wiki/compile"),
    ("get", "/api/agents/master/tools"),
    ("post", "/api/agents/master/tools/memory_save"),
    ("post", "/api/agents/master/tools/memory_get"),
    ("get", "/api/agents/master/script-store"),
    ("put", "/api/agents/master/script-store/schedule/s/k"),
]


@pytest.mark.parametrize("method,url", AGENT_ROUTES)
def test_it_answers_403_to_another_agents_token(helper_client, master, workspace, method, url):
    (workspace / "MEMORY.md").write_text("master only\n", encoding="utf-8")
    response = getattr(helper_client, method)(
        url,
        data={
            "body": "x",
            "text": "x",
            "lines": ["x"],
            "source": "chat",
            "value": 1,
            "path": "MEMORY.md",
        },
        format="json",
    )
    assert response.status_code == 403, (method, url, response.status_code)
    assert "master only" not in response.content.decode()
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == "master only\n"


@pytest.mark.parametrize(
    "method,url",
    AGENT_ROUTES
    + [
        ("get", "/api/memory/user"),
        ("get", "/api/memory/search?q=x"),
        ("get", "/api/memory/proposals"),
        ("get", "/api/stats"),
        ("get", "/api/runs"),
    ],
)
def test_it_refuses_anonymous_requests(anon_client, master, workspace, method, url):
    response = getattr(anon_client, method)(url, data={}, format="json")
    assert response.status_code in (401, 403)


def test_it_lets_an_agent_token_use_the_user_scope_but_not_decide_proposals(
    master_client, master, workspace
):
    assert master_client.get("/api/memory/user").status_code == 200
    response = master_client.put(
        "/api/memory/user/facts/tea",
        data={"description": "likes tea", "type": "preference", "body": "", "source": "job:x"},
        format="json",
    )
    assert response.status_code == 202
    pid = response.json()["proposal"]["id"]
    # Deciding is the owner's: an agent approving its own job's write defeats §7.
    assert (
        master_client.post(
            f"/api/memory/proposals/{pid}", data={"approve": True}, format="json"
        ).status_code
        == 403
    )
    assert not (workspace / "users/owner/facts/tea.md").exists()


def test_it_refuses_agent_tokens_creating_or_editing_agents(master_client, master, workspace):
    assert (
        master_client.post(
            "/api/agents", data={"id": "rogue", "name": "r"}, format="json"
        ).status_code
        == 403
    )
    assert (
        master_client.patch(
            "/api/agents/master", data={"autonomous": True}, format="json"
        ).status_code
        == 403
    )


def test_it_records_the_agent_as_written_by(master_client, master, workspace):
    master_client.put(
        "/api/memory/user/facts/tea",
        data={"description": "likes tea", "type": "preference", "body": "", "source": "chat"},
        format="json",
    )
    assert "written_by: master" in (workspace / "users/owner/facts/tea.md").read_text(
        encoding="utf-8"
    )


@pytest.mark.django_db(transaction=True)
def test_it_prints_only_the_key_from_memory_token(alice, master, workspace):
    import os

    from tests.processes import test_database_url

    env = {**os.environ, "MY_AGENT_HOME": str(workspace), "DATABASE_URL": test_database_url()}
    for args in (["owner"], ["agent", "master"]):
        done = subprocess.run(
            [sys.executable, "manage.py", "memory_token", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.strip().splitlines()
        assert len(lines) == 1 and " " not in lines[0] and len(lines[0]) >= 20
