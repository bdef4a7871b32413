"""SPEC §11 Script store, over REST (§14.1): put, get, list and delete entries by schedule
and by conversation, any JSON value, each agent only its own (the Python helper scripts use:
tests/memory/test_scripts.py)."""

from __future__ import annotations

import pytest

URL = "/api/agents/{agent}/script-store"


def _entries(owner_client, agent: str = "master") -> list[tuple]:
    """(scope, scope_id, key, value) of every entry of the agent's store."""
    rows = owner_client.get(URL.format(agent=agent)).json()["results"]
    return [(row["scope"], row["scope_id"], row["key"], row["value"]) for row in rows]


def test_it_puts_gets_lists_and_deletes_an_entry(owner_client, master):
    url = URL.format(agent="master") + "/schedule/bulletin/last_sent"
    response = owner_client.put(url, {"value": {"at": "07:00", "ok": True}}, format="json")
    assert response.status_code == 200
    assert response.json()["value"] == {"at": "07:00", "ok": True}
    assert _entries(owner_client) == [
        ("schedule", "bulletin", "last_sent", {"at": "07:00", "ok": True})
    ]

    got = owner_client.get(url).json()
    assert (got["scope"], got["scope_id"], got["key"]) == ("schedule", "bulletin", "last_sent")
    assert "updated_at" in got

    owner_client.put(
        URL.format(agent="master") + "/conversation/c1/draft", {"value": None}, format="json"
    )
    listing = owner_client.get(URL.format(agent="master")).json()["results"]
    assert [(e["scope"], e["scope_id"], e["key"], e["value"]) for e in listing] == [
        ("conversation", "c1", "draft", None),
        ("schedule", "bulletin", "last_sent", {"at": "07:00", "ok": True}),
    ]
    only = owner_client.get(URL.format(agent="master") + "?schedule=bulletin").json()["results"]
    assert [e["key"] for e in only] == ["last_sent"]
    only = owner_client.get(URL.format(agent="master") + "?conversation=c1").json()["results"]
    assert [e["key"] for e in only] == ["draft"]

    assert owner_client.delete(url).status_code == 204
    assert [key for _, _, key, _ in _entries(owner_client)] == ["draft"]
    assert owner_client.delete(url).status_code == 404
    assert owner_client.get(url).status_code == 404


def test_it_lets_an_agent_token_reach_only_its_own_store(
    master_client, helper_client, owner_client, master
):
    url = URL.format(agent="master") + "/schedule/s/k"
    assert master_client.put(url, {"value": 1}, format="json").status_code == 200
    assert helper_client.get(url).status_code == 403
    assert helper_client.put(url, {"value": 2}, format="json").status_code == 403
    assert helper_client.delete(url).status_code == 403
    assert helper_client.get(URL.format(agent="master")).status_code == 403
    assert _entries(owner_client) == [("schedule", "s", "k", 1)]
    assert (
        helper_client.put(
            URL.format(agent="helper") + "/schedule/s/k", {"value": 3}, format="json"
        ).status_code
        == 200
    )
    assert master_client.get(URL.format(agent="master")).json()["results"][0]["value"] == 1


def test_it_refuses_anonymous_callers(anon_client, owner_client, master):
    assert anon_client.get(URL.format(agent="master")).status_code in (401, 403)
    assert anon_client.put(
        URL.format(agent="master") + "/schedule/s/k", {"value": 1}, format="json"
    ).status_code in (401, 403)
    assert _entries(owner_client) == []


def test_it_answers_422_for_a_bad_scope_or_a_missing_value(owner_client, master):
    bad = owner_client.put(URL.format(agent="master") + "/daily/s/k", {"value": 1}, format="json")
    assert bad.status_code == 422
    assert owner_client.get(URL.format(agent="master") + "/daily/s/k").status_code == 422
    missing = owner_client.put(
        URL.format(agent="master") + "/schedule/s/k", {"other": 1}, format="json"
    )
    assert missing.status_code == 422
    assert _entries(owner_client) == []


def test_it_answers_404_for_an_unknown_agent(owner_client, master):
    assert owner_client.get(URL.format(agent="nobody")).status_code == 404
    assert (
        owner_client.put(
            URL.format(agent="nobody") + "/schedule/s/k", {"value": 1}, format="json"
        ).status_code
        == 404
    )


# --- test_more_edges.py --------------------
# More SPEC edges: appends after a file without a final newline (§5), agent_memory stale
# base (§7), runs listing (§14.1), wiki title refusal over REST (§10.2), script-store values
# (§11/§14.1).


@pytest.mark.parametrize(
    "value", [None, 0, "text", [1, "a", None], {"deep": {"er": [True, 1.5]}}, "đọc 東京"]
)
def test_it_stores_any_json_value_in_the_script_store(owner_client, master, workspace, value):
    url = "/api/agents/master/script-store/conversation/c-1/k"
    assert owner_client.put(url, data={"value": value}, format="json").status_code in (200, 201)
    assert owner_client.get(url).json()["value"] == value
    rows = owner_client.get("/api/agents/master/script-store", {"conversation": "c-1"}).json()
    rows = rows["results"] if isinstance(rows, dict) else rows
    assert [(r["scope"], r["scope_id"], r["key"], r["value"]) for r in rows] == [
        ("conversation", "c-1", "k", value)
    ]


@pytest.mark.parametrize("scope", ["global", "Schedule", "x"])
def test_it_refuses_an_unknown_script_store_scope(owner_client, master, workspace, scope):
    response = owner_client.put(
        f"/api/agents/master/script-store/{scope}/s/k", data={"value": 1}, format="json"
    )
    assert response.status_code in (404, 422)


def test_it_refuses_a_script_store_put_without_value(owner_client, master, workspace):
    response = owner_client.put(
        "/api/agents/master/script-store/schedule/s/k", data={}, format="json"
    )
    assert response.status_code == 422
    assert owner_client.get("/api/agents/master/script-store/schedule/s/k").status_code == 404


def _rows(data):
    return data["results"] if isinstance(data, dict) and "results" in data else data


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
