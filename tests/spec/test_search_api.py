"""GET /api/memory/search (SPEC §6.2): scopes, interleaving across agents, who may search
what, and bad input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory import facts

URL = "/api/memory/search"
OLD = 1_600_000_000


def put(home: Path, rel: str, body: str, *, mtime: int) -> None:
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    os.utime(path, (mtime, mtime))


def fact(name: str, description: str, body: str) -> None:
    facts.save_fact(
        name,
        description=description,
        type="reference",
        body=body,
        written_by="owner",
        source="chat",
    )


@pytest.fixture
def memories(master, helper_agent, workspace):
    """Three `melon` entries for master, three for helper, two facts; master's files are
    the newest, so a plain ranking by recency would list all of master's first."""
    put(workspace, "memory/2026-01-03.md", "- melon m1\n- melon m2\n- melon m3\n", mtime=OLD + 300)
    put(
        workspace,
        "agents/helper/memory/2026-01-02.md",
        "- melon h1\n- melon h2\n- melon h3\n",
        mtime=OLD + 200,
    )
    fact("melon-a", "melon fact a", "body a")
    fact("melon-b", "melon fact b", "body b")
    for name in ("melon-a", "melon-b"):
        path = workspace / f"users/owner/facts/{name}.md"
        os.utime(path, (OLD + 100, OLD + 100))
    return workspace


def results(response) -> list[tuple[str, str, int | None]]:
    assert response.status_code == 200, response.content
    return [(item["scope"], item["text"], item["line"]) for item in response.json()["results"]]


def test_it_interleaves_every_agent_and_the_user_scope_by_rank(owner_client, memories):
    response = owner_client.get(URL, {"q": "melon"})

    assert results(response) == [
        ("agent:master", "- melon m1", 1),
        ("agent:helper", "- melon h1", 1),
        ("user", "melon fact b — body b", None),
        ("agent:master", "- melon m2", 2),
        ("agent:helper", "- melon h2", 2),
        ("user", "melon fact a — body a", None),
        ("agent:master", "- melon m3", 3),
        ("agent:helper", "- melon h3", 3),
    ]


def test_each_result_carries_scope_agent_path_lines_text_score_date_and_weight(
    owner_client, memories
):
    items = owner_client.get(URL, {"q": "melon", "limit": 3}).json()["results"]

    # melon stands in all 8 entries of the workspace: it weighs next to nothing.
    same = {"score": 1, "heading": None, "weight": 0.057, "matched": ["melon"]}
    assert items == [
        {
            "scope": "agent:master",
            "agent": "master",
            "path": "memory/2026-01-03.md",
            "line": 1,
            "end_line": 1,
            "date": "2026-01-03",
            "text": "- melon m1",
            **same,
        },
        {
            "scope": "agent:helper",
            "agent": "helper",
            "path": "memory/2026-01-02.md",
            "line": 1,
            "end_line": 1,
            "date": "2026-01-02",
            "text": "- melon h1",
            **same,
        },
        {
            "scope": "user",
            "agent": None,
            "path": "users/owner/facts/melon-b.md",
            "line": None,
            "end_line": None,
            "date": None,
            "text": "melon fact b — body b",
            **same,
        },
    ]


def test_explain_says_how_each_word_counted(owner_client, memories, workspace):
    put(workspace, "memory/2026-01-04.md", "# Quả\n\n- melon seeds, dưa lưới\n", mtime=OLD)

    body = owner_client.get(URL, {"q": "melon seeds o", "explain": "true"}).json()

    assert body["results"][0]["text"] == "- melon seeds, dưa lưới"
    assert body["results"][0]["heading"] == "# Quả"
    assert body["explain"] == {
        "entries": 10,
        "words": [
            {"word": "melon", "rule": "inside", "entries": 9, "weight": 0.147, "forms": ["melon"]},
            {"word": "seeds", "rule": "inside", "entries": 1, "weight": 1.992, "forms": ["seeds"]},
            {"word": "o", "rule": "whole", "entries": 0, "weight": 3.091, "forms": []},
        ],
    }
    assert "explain" not in owner_client.get(URL, {"q": "melon"}).json()


def test_entries_with_every_word_come_first_across_scopes(owner_client, memories, workspace):
    put(workspace, "agents/helper/memory/2026-01-01.md", "- melon seeds\n", mtime=OLD)

    assert results(owner_client.get(URL, {"q": "melon seeds"})) == [
        ("agent:helper", "- melon seeds", 1)
    ]


def test_with_agent_id_it_searches_that_agent_and_the_user_scope(owner_client, memories):
    scopes = {
        scope
        for scope, _, _ in results(owner_client.get(URL, {"q": "melon", "agent_id": "helper"}))
    }

    assert scopes == {"agent:helper", "user"}


def test_an_agent_token_without_agent_id_searches_its_own_agent(helper_client, memories):
    found = results(helper_client.get(URL, {"q": "melon"}))

    assert {scope for scope, _, _ in found} == {"agent:helper", "user"}
    assert ("agent:helper", "- melon h1", 1) in found


def test_an_agent_token_may_name_its_own_agent(helper_client, memories):
    assert results(helper_client.get(URL, {"q": "melon", "agent_id": "helper"}))


def test_an_agent_token_gets_403_for_another_agent(helper_client, memories):
    response = helper_client.get(URL, {"q": "melon", "agent_id": "master"})

    assert response.status_code == 403
    assert "melon" not in response.content.decode()


def test_another_agents_token_gets_403_even_for_an_unknown_agent(helper_client, memories):
    assert helper_client.get(URL, {"q": "melon", "agent_id": "nobody"}).status_code == 403


def test_the_owner_gets_404_for_an_unknown_agent(owner_client, memories):
    assert owner_client.get(URL, {"q": "melon", "agent_id": "nobody"}).status_code == 404


def test_anonymous_callers_are_refused(anon_client, memories):
    assert anon_client.get(URL, {"q": "melon"}).status_code in (401, 403)


def test_limit_defaults_to_12_and_goes_up_to_100(owner_client, master, workspace):
    put(workspace, "memory/2026-01-05.md", "".join(f"- plum {n}\n" for n in range(150)), mtime=OLD)

    assert len(results(owner_client.get(URL, {"q": "plum"}))) == 12
    assert len(results(owner_client.get(URL, {"q": "plum", "limit": 100}))) == 100
    assert len(results(owner_client.get(URL, {"q": "plum", "limit": 1}))) == 1


@pytest.mark.parametrize("limit", ["0", "101", "-3", "ten", "1.5", "1e2"])
def test_a_bad_limit_is_422(owner_client, master, limit):
    assert owner_client.get(URL, {"q": "plum", "limit": limit}).status_code == 422


@pytest.mark.parametrize("params", [{}, {"q": ""}, {"q": "   "}, {"q": "?!…"}])
def test_an_empty_query_is_422(owner_client, master, params):
    response = owner_client.get(URL, params)

    assert response.status_code == 422
    assert response.json()  # says what is wrong


def test_a_weaker_agent_still_gets_its_best_entry_before_anyones_second(
    owner_client, master, helper_agent, workspace
):
    put(workspace, "memory/2026-01-03.md", "- lime tart\n- lime tart again\n", mtime=OLD + 300)
    put(workspace, "agents/helper/memory/2026-01-02.md", "- lime\n- lime too\n", mtime=OLD + 200)

    found = owner_client.get(URL, {"q": "lime tart zzzz"}).json()["results"]

    assert [(item["scope"], item["text"], item["score"]) for item in found] == [
        ("agent:master", "- lime tart", 2),
        ("agent:helper", "- lime", 1),
        ("agent:master", "- lime tart again", 2),
        ("agent:helper", "- lime too", 1),
    ]
