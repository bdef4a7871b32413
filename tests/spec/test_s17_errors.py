"""SPEC §17: every bad input gets a clear error (never a 500) and changes nothing.

Written from the SPEC text: each write endpoint is fed malformed JSON, wrong JSON types,
lists where objects are expected, huge numbers and unicode in ids; the answer must be a
4xx and the workspace must be byte-for-byte what it was."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from django.test import Client

from tests.helpers import call_tool, tool_text


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


# --- test_body_limit_http.py --------------------
# SPEC §17 over real HTTP: a body over the size limit is 413 (never a 500), on the API and
# on the management pages' forms, and nothing is written.


@pytest.mark.parametrize(
    "method,path",
    [
        ("PUT", "/api/agents/master/memory"),
        ("PUT", "/api/memory/user"),
        ("PUT", "/api/agents/master/memory/notes/2026-01-01"),
        ("POST", "/api/agents/master/tools/memory_save"),
        ("POST", "/api/agents/master/memory/lines"),
        ("PUT", "/api/agents/master/script-store/schedule/s/k"),
    ],
)
def test_it_answers_413_over_http(live_server, live_owner_key, workspace, settings, method, path):
    big = b'{"body": "' + b"x" * (settings.MEMORY_MAX_BODY_BYTES + 1) + b'"}'
    with httpx.Client(timeout=60) as client:
        response = client.request(
            method,
            f"{live_server.url}{path}",
            content=big,
            headers={
                "Authorization": f"Token {live_owner_key}",
                "Content-Type": "application/json",
            },
        )
    assert response.status_code == 413
    memory_md = workspace / "MEMORY.md"  # absent, or empty as the agent's creation left it
    assert not memory_md.exists() or memory_md.read_text() == ""
    assert not (workspace / "users/owner/USER.md").exists()
    assert not list((workspace / "memory").glob("*.md"))


def test_it_answers_413_to_a_big_form_on_the_pages(alice, master, workspace, settings):
    from django.test import Client

    client = Client()
    client.force_login(alice)
    response = client.post(
        "/manage/memory/user/", {"body": "y" * (settings.MEMORY_MAX_BODY_BYTES + 1)}
    )
    assert response.status_code == 413
    assert not (workspace / "users/owner/USER.md").exists()


# --- test_errors.py --------------------
# Bad input (SPEC §17): a clear 4xx, the same error shape everywhere, nothing changed.


def _files(root):
    return sorted(
        (p.relative_to(root).as_posix(), p.read_bytes())
        for p in root.rglob("*")
        if p.is_file() and ".memory-locks" not in p.parts
    )


@pytest.mark.parametrize(
    ("method", "url", "field"),
    [
        ("put", "/api/agents/master/memory", "body"),
        ("put", "/api/agents/master/memory/notes/2026-11-30", "body"),
        ("put", "/api/memory/user", "body"),
        ("post", "/api/agents/master/memory/save", "text"),
    ],
)
def test_a_body_over_the_limit_is_413_and_nothing_is_written(
    owner_client, master, workspace, settings, method, url, field
):
    settings.MEMORY_MAX_BODY_BYTES = 1000
    before = _files(workspace)
    response = getattr(owner_client, method)(url, {field: "x" * 1000}, format="json")
    assert response.status_code == 413
    assert response.json()["code"] == "too_large"
    assert _files(workspace) == before
    # Just under the limit goes through.
    assert getattr(owner_client, method)(url, {field: "x" * 900}, format="json").status_code < 300


def test_errors_have_one_shape(owner_client, master, workspace):
    response = owner_client.put(
        "/api/memory/user/facts/Bad_Name", {"description": "d", "type": "profile"}, format="json"
    )
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid"
    assert "Bad_Name" in body["detail"]

    missing = owner_client.get("/api/agents/master/memory/notes/2026-11-01")
    assert missing.status_code == 404
    assert missing.json()["code"] == "not_found"


@pytest.mark.parametrize(
    "raw",
    [b"{not json", b"[1, 2]", b'"just a string"', b'{"body": null}', b'{"body": ["x"]}'],
)
def test_malformed_json_is_a_4xx_not_a_500(owner_client, master, workspace, raw):
    response = owner_client.generic(
        "PUT", "/api/agents/master/memory", raw, content_type="application/json"
    )
    assert 400 <= response.status_code < 500
    assert not (workspace / "MEMORY.md").exists()


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/api/agents/master/memory/lines", {"lines": [{"x": 1}], "source": "web"}),
        ("/api/agents/master/memory/lines", {"lines": ["ok"], "source": "web\n"}),
        ("/api/agents/master/memory/save", {"text": ["list"], "source": "web"}),
        ("/api/agents/master/memory/save", {"text": "ok", "source": "job: x"}),
    ],
)
def test_wrong_types_are_422(owner_client, master, workspace, url, body):
    before = _files(workspace)
    response = owner_client.post(url, json.dumps(body), content_type="application/json")
    assert response.status_code == 422
    assert _files(workspace) == before


# --- edges found by attacking the running server ----------------------------------------
# Bytes that are not UTF-8, lone surrogates through the tools, long names, deep JSON, form
# bodies on JSON endpoints.


def _disk(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and ".memory-locks" not in p.parts
    }


@pytest.fixture
def latin1(workspace, master, owner_today):
    """A hand-edited fact, USER.md, MEMORY.md and today's note, each with a latin-1 byte."""
    (workspace / "users/owner/facts").mkdir(parents=True, exist_ok=True)
    (workspace / "users/owner/USER.md").write_bytes(b"Caf\xe9 owner\n")
    (workspace / "users/owner/facts/cafe.md").write_bytes(
        b"---\nname: cafe\ndescription: caf\xe9 noir\ntype: preference\nwritten_by: owner\n"
        b"source: web\nupdated: 2026-11-01\n---\n\nNo sugar \xe9.\n"
    )
    (workspace / "MEMORY.md").write_bytes(b"- likes caf\xe9\n")
    day = owner_today.isoformat()
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / f"{day}.md").write_bytes(f"# {day}\n\n- 08:00 caf".encode() + b"\xe9\n")
    return day


def test_undecodable_bytes_never_give_a_500_and_the_api_says_so(latin1, owner_client, workspace):
    user = owner_client.get("/api/memory/user")
    assert user.status_code == 200
    assert user.json()["body"] == "Caf\ufffd owner\n"
    assert user.json()["invalid_utf8"] is True
    [fact] = user.json()["facts"]
    assert fact["invalid_utf8"] is True and fact["description"] == "caf\ufffd noir"
    memory = owner_client.get("/api/agents/master/memory").json()
    assert memory["invalid_utf8"] is True
    note = owner_client.get(f"/api/agents/master/memory/notes/{latin1}")
    assert note.status_code == 200 and note.json()["invalid_utf8"] is True
    clean = owner_client.put("/api/agents/master/memory/notes/2026-01-01", {"body": "x\n"})
    assert clean.json()["invalid_utf8"] is False
    # The note still takes appends, byte for byte after the old bytes.
    saved = owner_client.post("/api/agents/master/memory/save", {"text": "more"})
    assert saved.status_code == 200
    data = (workspace / "memory" / f"{latin1}.md").read_bytes()
    assert data.startswith(f"# {latin1}\n\n- 08:00 caf".encode() + b"\xe9\n- ")
    # A PUT with the hash the GET answered replaces it (no false conflict).
    got = owner_client.get("/api/memory/user").json()
    put = owner_client.put("/api/memory/user", {"body": "Café owner\n", "base_hash": got["hash"]})
    assert put.status_code == 200 and put.json()["invalid_utf8"] is False


def test_undecodable_bytes_reach_every_reader_without_a_500(latin1, owner_client, master, alice):
    assert "\ufffd" in owner_client.get("/api/agents/master/memory/context").json()["system"]
    get = tool_text(owner_client, "memory_get", path="MEMORY.md")
    assert get.startswith("- likes caf\ufffd\n")
    assert get.endswith("[MEMORY.md has bytes that are not UTF-8 text; they read as \ufffd]")
    assert owner_client.get("/api/memory/search?q=owner").status_code == 200
    pages = Client()
    pages.force_login(alice)
    for url in ("/manage/memory/", "/manage/memory/agents/master/memory/"):
        response = pages.get(url)
        assert response.status_code == 200
        assert "bytes that are not UTF-8" in response.content.decode()
    note = pages.get(f"/manage/memory/agents/master/notes/{latin1}/")
    assert note.status_code == 200 and "bytes that are not UTF-8" in note.content.decode()


SURROGATE_FACT = {"name": "bad", "description": "x\ud800y", "type": "preference", "body": "b"}


def test_a_lone_surrogate_through_a_tool_is_422_on_every_path(workspace, master, owner_client):
    before = _disk(workspace)
    body = json.dumps(SURROGATE_FACT)  # "\ud800" as JSON's escape: what a client sends
    rest = owner_client.generic(
        "POST",
        "/api/agents/master/tools/user_memory_save",
        body,
        content_type="application/json",
    )
    assert rest.status_code == 422, rest.content
    assert "lone surrogate" in rest.json()["detail"]
    # The same over MCP (tests/memory/mcp/test_server.py) and a tool loop's run_tool
    # (tests/memory/test_tools.py).
    saved = owner_client.generic(
        "POST",
        "/api/agents/master/tools/memory_save",
        json.dumps({"text": "a\udfffb"}),
        content_type="application/json",
    )
    assert saved.status_code == 422 and "lone surrogate" in saved.json()["detail"]
    assert _disk(workspace) == before
    # INDEX.md is still whole: nothing was written.
    assert owner_client.get("/api/memory/user").status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/api/agents/master/memory/notes/2026-01-01-" + "a" * 300,
        "/api/agents/master/memory/wiki/pages/" + "東" * 100,  # 300 bytes of UTF-8
    ],
)
def test_very_long_names_are_422_not_500(owner_client, master, workspace, url):
    before = _disk(workspace)
    get = owner_client.get(url)
    assert get.status_code in (404, 422), get.status_code
    body = {"body": "x", "title": None, "kind": "entity", "sources": ["note:2026-01-01"]}
    put = owner_client.put(url, {key: value for key, value in body.items() if value})
    assert put.status_code == 422, put.content
    assert _disk(workspace) == before


def test_a_very_long_wiki_title_is_422_from_the_tool(owner_client, master, workspace):
    # (A tool loop's run_tool answers an error string: tests/memory/test_tools.py.)
    answer = call_tool(
        owner_client,
        "wiki_apply",
        title="東京" * 60,
        kind="entity",
        sources=["note:2026-01-01"],
        body="x",
    )
    assert answer.status_code == 422, answer.content
    assert not (workspace / "memory/wiki").exists() or not list(
        (workspace / "memory/wiki").rglob("*.md")
    )


@pytest.mark.parametrize("depth", [65, 5_000, 200_000])
def test_deeply_nested_json_is_400_not_a_recursion_error(owner_client, master, depth):
    body = "[" * depth + "]" * depth
    for method, url in [
        ("put", "/api/agents/master/script-store/schedule/s1/k"),
        ("post", "/api/agents/master/tools/memory_save"),
        ("put", "/api/agents/master/memory"),
    ]:
        response = owner_client.generic(
            method.upper(), url, '{"value": ' + body + "}", content_type="application/json"
        )
        # 400 (a body that is not JSON the API takes); the tool route says 422 for any
        # body that is not its arguments.
        assert response.status_code in (400, 422), (url, depth, response.status_code)
        assert "nested deeper than 64" in response.json()["detail"]


def test_json_nested_64_deep_is_still_accepted(owner_client, master):
    value = 0
    for _ in range(62):
        value = [value]
    response = owner_client.put("/api/agents/master/script-store/schedule/s1/k", {"value": value})
    assert response.status_code in (200, 201), response.content


MULTIPART = '--XX\r\nContent-Disposition: form-data; name="text"\r\n\r\n5\r\n--XX--\r\n'


@pytest.mark.parametrize(
    "content_type, body",
    [
        ("application/x-www-form-urlencoded", "text=5"),
        ("multipart/form-data; boundary=XX", MULTIPART),
    ],
)
def test_form_bodies_on_json_endpoints_are_415(owner_client, master, workspace, content_type, body):
    before = _disk(workspace)
    for method, url in [
        ("POST", "/api/agents/master/memory/save"),
        ("POST", "/api/agents/master/tools/memory_save"),
        ("PUT", "/api/agents/master/memory"),
        ("PUT", "/api/memory/user/facts/coffee"),
    ]:
        response = owner_client.generic(method, url, body, content_type=content_type)
        assert response.status_code == 415, (url, response.status_code)
    assert _disk(workspace) == before


# --- the boundary: what no store can hold (NUL, a lone surrogate, an integer past 64 bits)
# is 422 wherever it comes in, on SQLite and PostgreSQL alike (DATABASE_URL), and nothing is
# written. PostgreSQL refuses NUL in text and jsonb, so any that got past the boundary was a
# 500 there (the context's `turn=`, job proposals, the script store).

NUL, SURROGATE, HUGE = "a\x00b", "a\ud800b", 10**23


def _raw(body: dict) -> str:
    return json.dumps(body)  # "\u0000" and "\ud800" as JSON escapes: what a client sends


TOOL_CALLS = [
    ("memory_save", {"text": "{bad}"}),
    ("memory_search", {"query": "{bad}"}),
    ("user_memory_save", {"name": "coffee", "description": "{bad}", "type": "preference",
                          "body": "b"}),
    ("wiki_apply", {"title": "Han Eco", "kind": "entity", "sources": ["note:2026-01-01"],
                    "body": "{bad}"}),
    ("wiki_get", {"title": "{bad}"}),
]  # fmt: skip


def _fill(value: object, bad: object) -> object:
    if value == "{bad}":
        return bad
    if isinstance(value, str) and "{bad}" in value and isinstance(bad, str):
        return value.replace("{bad}", bad)
    if isinstance(value, dict):
        return {key: _fill(item, bad) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, bad) for item in value]
    return value


@pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "surrogate"])
@pytest.mark.parametrize("tool, arguments", TOOL_CALLS, ids=[name for name, _ in TOOL_CALLS])
def test_nul_and_lone_surrogates_through_a_tool_are_422_and_write_nothing(
    owner_client, master, workspace, tool, arguments, bad
):
    """A NUL used to pass through the tools (the REST fields refused it): it reached
    today's note and then broke the context on PostgreSQL."""
    before = _disk(workspace)
    response = owner_client.generic(
        "POST",
        f"/api/agents/master/tools/{tool}",
        _raw(_fill(arguments, bad)),
        content_type="application/json",
    )
    assert response.status_code == 422, response.content
    detail = response.json()["detail"]
    assert ("NUL character" if bad == NUL else "lone surrogate") in detail
    assert _disk(workspace) == before


BOUNDARY_BODIES = [
    ("put", "/api/agents/master/script-store/schedule/s1/k", {"value": "{bad}"}),
    ("put", "/api/agents/master/script-store/schedule/s1/k", {"value": {"note": ["{bad}"]}}),
    ("post", "/api/agents/master/memory-tool", {"command": "view", "path": "{bad}"}),
    ("post", "/api/agents/master/memory/save", {"text": "{bad}"}),
    ("put", "/api/agents/master/memory", {"body": "{bad}"}),
    ("post", "/api/memory/proposals/bulk", {"ids": ["{bad}"], "approve": True}),
    ("post", "/api/agents", {"id": "new-one", "name": "{bad}"}),
]


@pytest.mark.parametrize("bad", [NUL, SURROGATE, HUGE], ids=["nul", "surrogate", "huge"])
@pytest.mark.parametrize("method, url, body", BOUNDARY_BODIES)
def test_every_json_body_refuses_what_no_store_can_hold(
    owner_client, master, workspace, method, url, body, bad
):
    """A lone surrogate in a script-store value was a 500 and left the store page broken
    until the key was deleted; a bulk id of 10^23 was a 500."""
    filled = _fill(body, bad)
    before = _disk(workspace)
    response = owner_client.generic(
        method.upper(), url, _raw(filled), content_type="application/json"
    )
    assert response.status_code == 422, (url, response.status_code, response.content[:300])
    assert response.json()["code"] == "invalid"
    assert _disk(workspace) == before
    assert owner_client.get("/api/agents/master/script-store").json()["count"] == 0
    assert owner_client.get("/api/memory/proposals?status=all").json()["count"] == 0


def test_the_script_store_page_shows_after_a_refused_surrogate(owner_client, master, alice):
    refused = owner_client.generic(
        "PUT",
        "/api/agents/master/script-store/schedule/s1/k",
        _raw({"value": SURROGATE}),
        content_type="application/json",
    )
    assert refused.status_code == 422
    pages = Client()
    pages.force_login(alice)
    assert pages.get("/manage/memory/scripts/master").status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/api/agents/master/memory/context?conversation=tg-1&turn=t%00x",
        "/api/agents/master/memory/context?conversation=tg%001",
        "/api/runs?agent=a%00b",
        "/api/memory/proposals?agent=a%00b",
        "/api/agents/master/script-store?schedule=a%00b",
        "/api/memory/search?q=abc&agent_id=ma%00ster",
        "/api/agents/master/memory/wiki?q=a%00b",
        "/api/memory/history?path=MEMORY.md&agent=a%00",
    ],
)
def test_a_nul_in_a_query_string_is_422_json(owner_client, master, url):
    """On PostgreSQL `…/context?…&turn=` with a NUL was a 500 (the turn is stored)."""
    response = owner_client.get(url)
    assert response.status_code == 422, (url, response.status_code, response.content[:200])
    name = url.rpartition("%00")[0].rpartition("&")[2].rpartition("?")[2].split("=")[0]
    assert response.json() == {
        "detail": f"The query parameter `{name}` holds a NUL character, which text here "
        "cannot hold.",
        "code": "invalid",
    }


def test_a_nul_in_a_page_query_string_is_a_4xx_page(master, alice):
    pages = Client()
    pages.force_login(alice)
    response = pages.get("/manage/memory/search/?q=a%00b")
    assert response.status_code == 422
    assert "NUL character" in response.content.decode()


@pytest.mark.parametrize(
    "url",
    [
        "/api/agents?offset=9223372036854775808",
        "/api/memory/proposals?offset=9223372036854775808",
        "/api/runs?limit=10&offset=99999999999999999999999",
        "/api/agents/master/memory/notes?offset=9223372036854775808",
        "/api/agents/master/script-store?offset=9223372036854775808",
        "/api/agents/master/memory/wiki?offset=9223372036854775808",
        "/api/memory/search?q=abc&offset=9223372036854775808",
    ],
)
def test_offsets_past_2_63_are_422(owner_client, master, url):
    response = owner_client.get(url)
    assert response.status_code == 422, (url, response.status_code, response.content[:200])
    assert "offset" in json.dumps(response.json())


def test_a_search_offset_far_past_the_end_is_an_empty_page(owner_client, master, workspace):
    (workspace / "MEMORY.md").write_text("- harbour walk\n", encoding="utf-8")
    response = owner_client.get("/api/memory/search?q=harbour&offset=9223372036854775000")
    assert response.status_code == 200
    assert response.json()["results"] == [] and response.json()["count"] == 1


@pytest.mark.parametrize(
    "url",
    [
        "/manage/memory/proposals/?page=9223372036854775808",
        "/manage/memory/search/?q=abc&page=99999999999999999999999",
        "/manage/memory/activity/?page=9223372036854775808",
        f"/manage/memory/proposals/{10**23}/",
        f"/manage/memory/history/{10**23}/",
    ],
)
def test_pages_with_numbers_past_2_63_never_fail(master, alice, url):
    pages = Client()
    pages.force_login(alice)
    response = pages.get(url)
    assert response.status_code in (200, 404), (url, response.status_code)


# --- every error under /api/ and /mcp is JSON with a message


@pytest.mark.parametrize(
    "url",
    ["/api/nothing-here", "/api/agents/master/nothing", "/api/memory/proposals/x", "/mcp/extra"],
)
def test_a_404_under_the_api_is_json_with_a_message(owner_client, master, url):
    response = owner_client.get(url)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": f"Nothing is served at {url}.", "code": "not_found"}


def test_a_404_of_the_pages_stays_a_page(master, alice):
    pages = Client()
    pages.force_login(alice)
    response = pages.get("/manage/memory/nothing-here/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


# --- sign-in throttling counts the client, not what the client says it is


def _sign_in(client: Client, password: str, forwarded: str | None = None):
    extra = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    return client.post(
        "/manage/memory/login/", {"username": "alice", "password": password}, **extra
    )


def test_a_new_x_forwarded_for_on_each_try_does_not_reset_the_count(alice, settings):
    """30 wrong passwords, each from a "new" address in X-Forwarded-For, then the right
    one: it signed in. With no trusted proxy the header is not the client."""
    client = Client(REMOTE_ADDR="203.0.113.7")
    answers = [_sign_in(client, "wrong", f"198.51.100.{n}").status_code for n in range(30)]
    limit = settings.AXES_FAILURE_LIMIT
    assert answers[: limit - 1] == [200] * (limit - 1)
    assert set(answers[limit - 1 :]) == {429}
    assert _sign_in(client, "pw-alice-123", "198.51.100.250").status_code == 429


def test_a_trusted_proxy_forwards_the_client_and_nothing_the_client_wrote(alice, settings):
    settings.MEMORY_TRUSTED_PROXIES = ["10.0.0.0/8"]
    proxy = Client(REMOTE_ADDR="10.1.2.3")
    limit = settings.AXES_FAILURE_LIMIT
    # The client 203.0.113.7 prepends a made-up address each time; the proxy appends the
    # address it really saw, which is what counts.
    for n in range(limit):
        _sign_in(proxy, "wrong", f"198.51.100.{n}, 203.0.113.7")
    assert _sign_in(proxy, "pw-alice-123", "198.51.100.99, 203.0.113.7").status_code == 429
    # Another client behind the same proxy signs in.
    assert _sign_in(proxy, "pw-alice-123", "203.0.113.8").status_code == 302
