"""SPEC §17: every bad input gets a clear error (never a 500) and changes nothing.

Written from the SPEC text: each write endpoint is fed malformed JSON, wrong JSON types,
lists where objects are expected, huge numbers and unicode in ids; the answer must be a
4xx and the workspace must be byte-for-byte what it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _snapshot(home: Path) -> dict[str, bytes]:
    # The lock pool (.memory-locks/) is the workspace's own machinery.
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and ".memory-locks" not in p.parts
    }


WRITE_ENDPOINTS = [
    ("put", "/api/memory/user"),
    ("put", "/api/memory/user/facts/coffee"),
    ("put", "/api/agents/master/memory"),
    ("post", "/api/agents/master/memory/lines"),
    ("post", "/api/agents/master/memory/save"),
    ("put", "/api/agents/master/memory/notes/2026-01-02"),
    ("put", "/api/agents/master/memory/wiki/pages/han-eco"),
    ("post", "/api/agents/master/tools/memory_save"),
    ("post", "/api/agents/master/tools/user_memory_save"),
    ("post", "/api/agents/master/tools/wiki_apply"),
    ("post", "/api/agents/master/tools/memory_get"),
    ("post", "/api/agents/master/tools/memory_search"),
    ("put", "/api/agents/master/script-store/schedule/s1/k"),
    ("post", "/api/agents"),
    ("patch", "/api/agents/master"),
]

RAW_BODIES = ["{not json", "[]", "[1, 2]", '"a string"', "5", "null", '{"a": ']

# Field-level wrong types, per endpoint: the field the endpoint needs, given a JSON type
# that is not text (objects, lists, null).
FIELD_BODIES = [
    ("put", "/api/memory/user", {"body": {"a": 1}}),
    ("put", "/api/memory/user", {"body": None}),
    ("put", "/api/memory/user", {"body": ["x"]}),
    ("put", "/api/agents/master/memory", {"body": {"a": 1}}),
    ("put", "/api/agents/master/memory", {}),
    ("put", "/api/agents/master/memory/notes/2026-01-02", {"body": ["x"]}),
    ("put", "/api/memory/user/facts/coffee", {"description": ["x"], "type": "profile", "body": ""}),
    ("put", "/api/memory/user/facts/coffee", {"description": "d", "type": ["profile"], "body": ""}),
    ("put", "/api/memory/user/facts/coffee", {"description": "d", "type": "profile", "body": {}}),
    ("post", "/api/agents/master/memory/lines", {"lines": {"a": 1}, "source": "chat"}),
    ("post", "/api/agents/master/memory/lines", {"lines": [{"a": 1}], "source": "chat"}),
    ("post", "/api/agents/master/memory/lines", {"lines": None, "source": "chat"}),
    ("post", "/api/agents/master/memory/save", {"text": None}),
    ("post", "/api/agents/master/memory/save", {"text": ["a"]}),
    ("post", "/api/agents/master/tools/memory_save", {"text": {"a": 1}}),
    ("post", "/api/agents/master/tools/memory_get", {"path": "MEMORY.md", "lines": "x"}),
    ("post", "/api/agents/master/tools/memory_get", {"path": "MEMORY.md", "from_line": []}),
    ("post", "/api/agents/master/tools/memory_get", {"path": ["MEMORY.md"]}),
    ("post", "/api/agents/master/tools/memory_search", {"query": {"a": 1}}),
    (
        "post",
        "/api/agents/master/tools/wiki_apply",
        {"title": "T", "kind": "entity", "sources": "note:2026-01-01", "body": "x"},
    ),
    (
        "post",
        "/api/agents/master/tools/wiki_apply",
        {"title": "T", "kind": "entity", "sources": [5], "body": "x"},
    ),
    (
        "post",
        "/api/agents/master/tools/wiki_apply",
        {"title": None, "kind": "entity", "sources": ["note:2026-01-01"], "body": "x"},
    ),
    (
        "put",
        "/api/agents/master/memory/wiki/pages/han-eco",
        {"title": "Han Eco", "kind": "entity", "sources": "note:2026-01-01", "body": "x"},
    ),
    (
        "put",
        "/api/agents/master/memory/wiki/pages/han-eco",
        {"title": "Han Eco", "kind": "entity", "sources": ["note:2026-01-01"], "body": {"a": 1}},
    ),
    (
        "put",
        "/api/agents/master/memory/wiki/pages/han-eco",
        {"title": "Han Eco", "kind": "place", "sources": ["note:2026-01-01"], "body": "x"},
    ),
    (
        "put",
        "/api/agents/master/memory/wiki/pages/han-eco",
        {
            "title": "Han Eco",
            "kind": "entity",
            "sources": ["note:2026-01-01"],
            "questions": "q",
            "body": "x",
        },
    ),
    (
        "post",
        "/api/agents/master/tools/user_memory_save",
        {"name": "a--b", "description": "d", "type": "profile"},
    ),
    (
        "post",
        "/api/agents/master/tools/user_memory_save",
        {"name": "ok", "description": 5, "type": "nope"},
    ),
    ("post", "/api/agents", {"id": "Bad Id", "name": "x"}),
    ("post", "/api/agents", {"id": "\u00e9t\u00e9", "name": "x"}),
    ("post", "/api/agents", {"id": "ok-agent", "name": "x", "memory_consolidate": "not a cron"}),
    ("patch", "/api/agents/master", {"memory_consolidate": "61 * * * *"}),
    ("patch", "/api/agents/master", {"autonomous": "maybe"}),
]


@pytest.mark.parametrize("method,url", WRITE_ENDPOINTS)
@pytest.mark.parametrize("raw", RAW_BODIES)
def test_it_answers_bad_bodies_with_a_4xx_and_writes_nothing(
    owner_client, master, workspace, method, url, raw
):
    (workspace / "MEMORY.md").write_text("keep\n", encoding="utf-8")
    before = _snapshot(workspace)
    response = getattr(owner_client, method)(url, data=raw, content_type="application/json")
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    assert _snapshot(workspace) == before


@pytest.mark.parametrize("method,url,payload", FIELD_BODIES)
def test_it_answers_wrong_field_types_with_422_and_writes_nothing(
    owner_client, master, workspace, method, url, payload
):
    (workspace / "MEMORY.md").write_text("keep\n", encoding="utf-8")
    before = _snapshot(workspace)
    response = getattr(owner_client, method)(url, data=payload, format="json")
    assert response.status_code == 422, (response.status_code, response.content[:300])
    assert _snapshot(workspace) == before


@pytest.mark.parametrize(
    "url,payload",
    [
        ("/api/memory/user", {"body": 5}),
        ("/api/agents/master/memory", {"body": 5}),
        ("/api/agents/master/memory/notes/2026-01-02", {"body": 5}),
    ],
)
def test_it_refuses_a_number_where_the_body_text_belongs(
    owner_client, master, workspace, url, payload
):
    before = _snapshot(workspace)
    response = owner_client.put(url, data=payload, format="json")
    assert response.status_code == 422, response.content
    assert _snapshot(workspace) == before


def test_it_refuses_a_number_as_memory_save_text_over_rest(owner_client, master, workspace):
    before = _snapshot(workspace)
    response = owner_client.post("/api/agents/master/memory/save", data={"text": 5}, format="json")
    assert response.status_code == 422, response.content
    assert _snapshot(workspace) == before


def test_it_refuses_a_number_as_memory_save_text(owner_client, master, workspace):
    before = _snapshot(workspace)
    response = owner_client.post(
        "/api/agents/master/tools/memory_save", data={"text": 5}, format="json"
    )
    assert response.status_code == 422, response.content
    assert _snapshot(workspace) == before


def test_it_refuses_lines_that_are_not_a_list(owner_client, master, workspace):
    (workspace / "MEMORY.md").write_text("keep\n", encoding="utf-8")
    response = owner_client.post(
        "/api/agents/master/memory/lines", data={"lines": "x", "source": "chat"}, format="json"
    )
    assert response.status_code == 422
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == "keep\n"


@pytest.mark.parametrize(
    "url",
    [
        "/api/agents/%C3%A9t%C3%A9/memory",
        "/api/agents/%E6%9D%B1%E4%BA%AC/memory/notes",
        "/api/agents/master/memory/notes/%EF%BC%92026-01-01",
        "/api/agents/master/memory/notes/2026-01-01%00",
        "/api/agents/master/memory/wiki/pages/%00",
        "/api/memory/proposals/%E6%9D%B1",
        "/api/memory/proposals/99999999999999999999999999",
        "/api/runs/99999999999999999999999999",
        "/api/memory/user/facts/%E6%9D%B1%E4%BA%AC",
    ],
)
def test_it_never_answers_a_500_to_unicode_or_huge_ids(owner_client, master, workspace, url):
    before = _snapshot(workspace)
    for method in ("get", "put", "post", "delete"):
        response = getattr(owner_client, method)(url, data={"body": "x"}, format="json")
        assert response.status_code < 500, (method, url, response.status_code)
    assert _snapshot(workspace) == before


@pytest.mark.parametrize("limit", ["0", "-1", "101", "100000000000000000000", "x", "1e3"])
def test_it_answers_bad_search_limits_without_a_500(owner_client, master, workspace, limit):
    response = owner_client.get("/api/memory/search", {"q": "x", "limit": limit})
    assert response.status_code < 500
    if limit in ("101", "100000000000000000000"):
        # "limit (default 12, max 100)": over the max is refused or clamped, never served.
        if response.status_code == 200:
            assert len(response.json()["results"]) <= 100


def test_it_answers_413_to_a_body_over_the_limit(owner_client, master, workspace, settings):
    big = json.dumps({"body": "x" * (settings.MEMORY_MAX_BODY_BYTES + 10)})
    response = owner_client.put(
        "/api/agents/master/memory", data=big, content_type="application/json"
    )
    assert response.status_code == 413
    assert not (workspace / "MEMORY.md").exists() or "x" * 100 not in (
        workspace / "MEMORY.md"
    ).read_text(encoding="utf-8")


def test_it_answers_413_to_a_big_tool_call(owner_client, master, workspace, settings):
    big = json.dumps({"text": "y" * (settings.MEMORY_MAX_BODY_BYTES + 10)})
    response = owner_client.post(
        "/api/agents/master/tools/memory_save", data=big, content_type="application/json"
    )
    assert response.status_code == 413
    assert not list((workspace / "memory").glob("*.md"))


@pytest.mark.parametrize(
    "query",
    [{"q": ""}, {"q": "x" * 20000}, {"q": "\x00"}, {"q": "a", "agent_id": "nobody"}, {}],
)
def test_it_answers_odd_searches_without_a_500(owner_client, master, workspace, query):
    response = owner_client.get("/api/memory/search", query)
    assert response.status_code < 500, response.content[:200]


@pytest.mark.parametrize("body", ['{"approve": 5}', "[]", "{}", "{bad", '{"approve": null}'])
def test_it_refuses_a_bad_decision_body_and_leaves_the_proposal_pending(
    owner_client, master, workspace, body
):
    response = owner_client.put(
        "/api/memory/user/facts/tea",
        data={"description": "likes tea", "type": "preference", "body": "b", "source": "job:x"},
        format="json",
    )
    assert response.status_code == 202
    pid = response.json()["proposal"]["id"]
    answer = owner_client.post(
        f"/api/memory/proposals/{pid}", data=body, content_type="application/json"
    )
    assert 400 <= answer.status_code < 500
    assert owner_client.get(f"/api/memory/proposals/{pid}").json()["status"] == "pending"
    assert not (workspace / "users/owner/facts/tea.md").exists()


def test_it_refuses_a_number_as_an_agent_name(owner_client, master, workspace):
    response = owner_client.post("/api/agents", data={"id": "scout", "name": 5}, format="json")
    assert response.status_code == 422, response.content
    assert not (workspace / "agents" / "scout").exists()
