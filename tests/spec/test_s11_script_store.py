"""The script store over REST (SPEC §11, §14.1) and its Python API."""

import pytest

from memory import scripts
from memory.errors import InvalidInput
from memory.models import ScriptEntry

URL = "/api/agents/{agent}/script-store"


def test_it_stores_and_loads_through_the_bound_helper(master):
    kv = scripts.ScriptStore(master, schedule="morning")
    assert kv.load("last") is None
    kv.store("last", {"day": "2026-11-30", "count": 3})
    assert kv.load("last") == {"day": "2026-11-30", "count": 3}
    kv.store("last", [1, 2])
    assert ScriptEntry.objects.get(agent=master, scope="schedule", scope_id="morning").value == [
        1,
        2,
    ]
    other = scripts.ScriptStore(master, conversation="morning")
    assert other.load("last", "nothing") == "nothing"


def test_it_refuses_a_helper_bound_to_both_or_neither(master):
    with pytest.raises(InvalidInput):
        scripts.ScriptStore(master)
    with pytest.raises(InvalidInput):
        scripts.ScriptStore(master, schedule="a", conversation="b")


def test_it_puts_gets_lists_and_deletes_an_entry(owner_client, master):
    url = URL.format(agent="master") + "/schedule/bulletin/last_sent"
    response = owner_client.put(url, {"value": {"at": "07:00", "ok": True}}, format="json")
    assert response.status_code == 200
    assert response.json()["value"] == {"at": "07:00", "ok": True}
    assert ScriptEntry.objects.get(key="last_sent").value == {"at": "07:00", "ok": True}

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
    assert not ScriptEntry.objects.filter(key="last_sent").exists()
    assert owner_client.delete(url).status_code == 404
    assert owner_client.get(url).status_code == 404


def test_it_lets_an_agent_token_reach_only_its_own_store(master_client, helper_client, master):
    url = URL.format(agent="master") + "/schedule/s/k"
    assert master_client.put(url, {"value": 1}, format="json").status_code == 200
    assert helper_client.get(url).status_code == 403
    assert helper_client.put(url, {"value": 2}, format="json").status_code == 403
    assert helper_client.delete(url).status_code == 403
    assert helper_client.get(URL.format(agent="master")).status_code == 403
    assert ScriptEntry.objects.get(key="k").value == 1
    assert (
        helper_client.put(
            URL.format(agent="helper") + "/schedule/s/k", {"value": 3}, format="json"
        ).status_code
        == 200
    )
    assert master_client.get(URL.format(agent="master")).json()["results"][0]["value"] == 1


def test_it_refuses_anonymous_callers(anon_client, master):
    assert anon_client.get(URL.format(agent="master")).status_code in (401, 403)
    assert anon_client.put(
        URL.format(agent="master") + "/schedule/s/k", {"value": 1}, format="json"
    ).status_code in (401, 403)
    assert not ScriptEntry.objects.exists()


def test_it_answers_422_for_a_bad_scope_or_a_missing_value(owner_client, master):
    bad = owner_client.put(URL.format(agent="master") + "/daily/s/k", {"value": 1}, format="json")
    assert bad.status_code == 422
    assert owner_client.get(URL.format(agent="master") + "/daily/s/k").status_code == 422
    missing = owner_client.put(
        URL.format(agent="master") + "/schedule/s/k", {"other": 1}, format="json"
    )
    assert missing.status_code == 422
    assert not ScriptEntry.objects.exists()


def test_it_answers_404_for_an_unknown_agent(owner_client, master):
    assert owner_client.get(URL.format(agent="nobody")).status_code == 404
    assert (
        owner_client.put(
            URL.format(agent="nobody") + "/schedule/s/k", {"value": 1}, format="json"
        ).status_code
        == 404
    )
