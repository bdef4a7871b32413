"""SPEC §14 / §14.1: authentication, agent-token scoping, and every minimum response shape."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient


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


# --- pages ----------------------------------------------------------------------------
# Every list of the API is a page: `{"count", "next", "previous", "offset",
# "limit", "results"}` chosen with `?limit=&offset=`; a limit that is not a number is 422.


def test_it_pages_the_notes_of_an_agent_with_counts(owner_client, master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    for day in range(1, 31):
        (workspace / f"memory/2026-01-{day:02d}.md").write_text(f"- {day}\n", encoding="utf-8")

    first = owner_client.get("/api/agents/master/memory/notes", {"limit": 20}).json()
    assert (first["count"], first["offset"], first["limit"]) == (30, 0, 20)
    assert first["previous"] is None
    assert [row["name"] for row in first["results"]][:2] == ["2026-01-30.md", "2026-01-29.md"]
    assert len(first["results"]) == 20

    second = owner_client.get(first["next"]).json()
    assert second["offset"] == 20 and second["next"] is None
    assert [row["name"] for row in second["results"]] == [
        f"2026-01-{day:02d}.md" for day in range(10, 0, -1)
    ]
    assert "offset" not in (second["previous"] or "offset")  # back to the first page


def test_it_pages_runs_proposals_and_agents(
    owner_client, master_client, helper_agent, workspace, record_run
):
    for n in range(7):
        record_run("master", "consolidate", "skipped", minutes=n, summary=str(n))
        lines = {"lines": [f"line {n}"], "source": "job:nightly"}
        assert master_client.post("/api/agents/master/memory/lines", lines).status_code == 202

    runs = owner_client.get("/api/runs", {"limit": 3, "offset": 3}).json()
    assert runs["count"] == 7 and len(runs["results"]) == 3
    assert [row["summary"] for row in runs["results"]] == ["3", "2", "1"]

    proposals = owner_client.get("/api/memory/proposals", {"limit": 5}).json()
    assert proposals["count"] == 7 and len(proposals["results"]) == 5 and proposals["next"]

    agents = owner_client.get("/api/agents", {"limit": 1, "offset": 1}).json()
    assert agents["count"] == 2 and [a["id"] for a in agents["results"]] == ["helper"]


@pytest.mark.parametrize(
    "query", [{"limit": "ten"}, {"limit": 0}, {"limit": 501}, {"offset": -1}, {"offset": "x"}]
)
def test_it_refuses_a_window_that_is_not_a_whole_number_in_range(owner_client, master, query):
    response = owner_client.get("/api/runs", query)
    assert response.status_code == 422
    assert response.json()["code"] == "invalid"


def test_it_pages_search_results_and_counts_them(owner_client, master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    lines = "".join(f"- {n:02d} đọc sách\n" for n in range(30))
    (workspace / "memory/2026-01-01.md").write_text(lines, encoding="utf-8")

    first = owner_client.get("/api/memory/search", {"q": "doc sach", "limit": 12}).json()
    assert first["count"] == 30 and first["count_capped"] is False
    assert [hit["line"] for hit in first["results"]] == list(range(1, 13))
    last = owner_client.get("/api/memory/search", {"q": "doc sach", "offset": 24}).json()
    assert [hit["line"] for hit in last["results"]] == list(range(25, 31))
    assert last["next"] is None and "offset=12" in last["previous"]


def test_the_schema_documents_the_pages(owner_client, master):
    schema = owner_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    runs = schema["paths"]["/api/runs"]["get"]
    assert {"limit", "offset"} <= {p["name"] for p in runs["parameters"]}
    body = runs["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    page = schema["components"]["schemas"][body.rsplit("/", 1)[-1]]
    assert {"count", "next", "previous", "results"} <= set(page["properties"])


# --- test_auth.py --------------------
# Who may reach what (SPEC §14): the owner everything, an agent token only its own agent
# (403 elsewhere), nobody anonymous; and `memory_token`, which prints only the key.


# Every route of the memory core under /api/agents/{id}/, with a body that would succeed
# for the right caller.
ROUTES_WITH_A_BODY = [
    ("get", "/api/agents/master", None),
    ("patch", "/api/agents/master", {"name": "pwned"}),
    ("get", "/api/agents/master/memory", None),
    ("put", "/api/agents/master/memory", {"body": "pwned\n"}),
    ("post", "/api/agents/master/memory/lines", {"lines": ["pwned"], "source": "web"}),
    ("post", "/api/agents/master/memory/save", {"text": "pwned", "source": "web"}),
    ("get", "/api/agents/master/memory/notes", None),
    ("get", "/api/agents/master/memory/notes/2026-11-30", None),
    ("put", "/api/agents/master/memory/notes/2026-11-30", {"body": "pwned\n"}),
    ("get", "/api/agents/master/memory/context?conversation=c", None),
]


def _files(root):
    return sorted(
        (p.relative_to(root).as_posix(), p.read_bytes())
        for p in root.rglob("*")
        if p.is_file() and ".memory-locks" not in p.parts
    )


@pytest.fixture
def seeded(master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "MEMORY.md").write_text("- private\n")
    (workspace / "memory/2026-11-30.md").write_text("- private note\n")
    return workspace


@pytest.mark.parametrize(("method", "url", "body"), ROUTES_WITH_A_BODY)
def test_another_agents_token_is_403(helper_client, seeded, method, url, body):
    before = _files(seeded)
    response = getattr(helper_client, method)(url, body, format="json")
    assert response.status_code == 403, response.content
    assert b"private" not in response.content
    assert _files(seeded) == before


@pytest.mark.parametrize(("method", "url", "body"), ROUTES_WITH_A_BODY)
def test_anonymous_is_refused(anon_client, seeded, method, url, body):
    before = _files(seeded)
    response = getattr(anon_client, method)(url, body, format="json")
    assert response.status_code in (401, 403)
    assert _files(seeded) == before


@pytest.mark.parametrize(("method", "url", "body"), ROUTES_WITH_A_BODY)
def test_the_agents_own_token_and_the_owner_get_through(
    master_client, owner_client, seeded, method, url, body
):
    if method == "patch":
        # Editing an agent is the owner's alone, even for its own token.
        assert getattr(master_client, method)(url, body, format="json").status_code == 403
    else:
        assert getattr(master_client, method)(url, body, format="json").status_code < 300
    assert getattr(owner_client, method)(url, body, format="json").status_code < 300


def _agent_routes(resolver: URLResolver, prefix: str = "") -> list[str]:
    """Every URL pattern (as a regex string) that takes an agent id, from all apps."""
    found = []
    for entry in resolver.url_patterns:
        pattern = prefix + str(entry.pattern.regex.pattern).lstrip("^")
        if isinstance(entry, URLResolver):
            found += _agent_routes(entry, pattern)
        elif isinstance(entry, URLPattern) and "agent_id" in entry.pattern.regex.groupindex:
            found.append(pattern)
    return found


def _example_path(pattern: str) -> str:
    """A concrete path for a route regex: agent_id=master, other parameters filled in."""
    values = {"agent_id": "master", "name": "2026-11-30", "scope": "schedule", "tool": "x"}

    def fill(match: re.Match) -> str:
        return values.get(match.group(1), "x")

    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", fill, pattern)
    return "/" + path.replace("\\Z", "").replace("$", "").replace("\\", "")


def test_every_agent_route_of_every_app_is_403_for_another_agent(helper_client, seeded):
    """Sweep the whole URL conf, not only this app's list: a route added later that
    forgets require_agent_access fails here."""
    paths = sorted({_example_path(p) for p in _agent_routes(get_resolver())})
    assert "/api/agents/master/memory/notes/2026-11-30" in paths
    before = _files(seeded)
    for path in paths:
        for method in ("get", "post", "put", "patch", "delete"):
            response = getattr(helper_client, method)(path, {}, format="json")
            # 405: the route has no such method. Pages (not /api/) send a token-only
            # caller to the login page instead. Never a success, never a leak.
            allowed = (403, 405) if path.startswith("/api/") else (302, 403, 405)
            assert response.status_code in allowed, (method, path, response.status_code)
            if response.status_code == 302:
                assert "login" in response["Location"], response["Location"]
    assert _files(seeded) == before


def test_an_unknown_token_is_401_or_403(seeded):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-key")
    assert client.get("/api/agents/master/memory").status_code in (401, 403)


def _token(*args) -> str:
    out = io.StringIO()
    call_command("memory_token", *args, stdout=out)
    return out.getvalue()


def test_memory_token_owner_prints_only_a_working_key(master, workspace):
    output = _token("owner")
    assert re.fullmatch(r"[0-9a-f]{48}\n", output)
    owner = get_user_model().objects.get(username="owner")
    assert owner.is_superuser and not owner.has_usable_password()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {output.strip()}")
    assert client.post("/api/agents", {"id": "x", "name": "X"}).status_code == 201


def test_memory_token_owner_uses_the_existing_superuser(alice, master, workspace):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {_token('owner').strip()}")
    assert not get_user_model().objects.filter(username="owner").exists()
    # The key is alice's: a decision made with it is hers.
    fact = {"description": "d", "type": "preference", "body": "", "source": "job:x"}
    proposal = client.put("/api/memory/user/facts/tea", fact).json()["proposal"]
    decided = client.post(f"/api/memory/proposals/{proposal['id']}", {"approve": False})
    assert decided.json()["decided_by"] == "alice"


def test_memory_token_agent_prints_a_key_for_that_agent_only(master, helper_agent, workspace):
    output = _token("agent", "helper")
    assert re.fullmatch(r"[0-9a-f]{48}\n", output)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {output.strip()}")
    assert client.get("/api/agents/helper/memory").status_code == 200
    assert client.get("/api/agents/master/memory").status_code == 403


def test_memory_token_agent_needs_a_known_agent(master):
    with pytest.raises(CommandError):
        _token("agent", "nobody")
    with pytest.raises(CommandError):
        _token("agent")


# --- links between agents -------------------------------------------------------------
# SPEC §14 (an agent token reaches only its own agent's memory) and §5 (memory_get refuses
# "a symlink out"): a link inside one agent's dir that points at another agent's file must not
# become a way to read or write that file. memory_get already refuses it; the other paths must
# agree with it.


SECRET = "topsecret master memory\n"


@pytest.fixture
def linked(master, helper_agent, workspace, owner_today):
    (workspace / "MEMORY.md").write_text(SECRET, encoding="utf-8")
    today = owner_today
    os.symlink(workspace / "MEMORY.md", workspace / f"agents/helper/memory/{today}.md")
    return today


def test_it_refuses_memory_get_through_the_link(helper_client, linked):
    response = helper_client.post(
        "/api/agents/helper/tools/memory_get",
        data={"path": f"memory/{linked}.md"},
        format="json",
    )
    assert "topsecret" not in response.content.decode()


def test_it_never_appends_through_a_link_into_another_agents_file(helper_client, workspace, linked):
    helper_client.post(
        "/api/agents/helper/tools/memory_save",
        data={"text": "via link"},
        format="json",
    )
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == SECRET


def test_it_never_reads_another_agents_file_through_a_link(helper_client, workspace, linked):
    note = helper_client.get(f"/api/agents/helper/memory/notes/{linked}")
    context = helper_client.get("/api/agents/helper/memory/context", {"conversation": "c"})
    assert "topsecret" not in note.content.decode()
    assert "topsecret" not in context.content.decode()


@pytest.fixture
def hard_linked(master, helper_agent, workspace, owner_today):
    """Helper's today's note is a second name of master's MEMORY.md (a hard link: what
    anyone with write access to the workspace can make; no symbolic link involved)."""
    (workspace / "MEMORY.md").write_text(SECRET, encoding="utf-8")
    os.link(workspace / "MEMORY.md", workspace / f"agents/helper/memory/{owner_today}.md")
    return owner_today


def test_a_hard_link_is_neither_read_nor_appended_to_across_agents(
    helper_client, workspace, hard_linked
):
    """Hard links got around the symlink rule: cross-agent read and append (SPEC §1)."""
    got = helper_client.post(
        "/api/agents/helper/tools/memory_get",
        data={"path": f"memory/{hard_linked}.md"},
        format="json",
    )
    assert got.status_code == 422 and "hard link" in got.json()["detail"]
    saved = helper_client.post(
        "/api/agents/helper/tools/memory_save", data={"text": "via link"}, format="json"
    )
    assert saved.status_code == 422 and "hard link" in saved.json()["detail"]
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == SECRET
    for answer in (
        helper_client.get(f"/api/agents/helper/memory/notes/{hard_linked}"),
        helper_client.get("/api/agents/helper/memory/context", {"conversation": "c"}),
        helper_client.get("/api/memory/search", {"q": "topsecret"}),
        helper_client.get("/api/agents/helper/memory/files"),
    ):
        assert answer.status_code < 500 and "topsecret" not in answer.content.decode()
    search = helper_client.post(
        "/api/agents/helper/tools/memory_search", data={"query": "topsecret"}, format="json"
    )
    assert "topsecret master" not in search.json()["result"]


def test_a_fifo_among_the_memory_files_is_never_opened(
    owner_client, master, workspace, owner_today
):
    """A planted FIFO made every reader that opened it wait for a writer."""
    (workspace / "memory").mkdir(exist_ok=True)
    os.mkfifo(workspace / "memory" / "2026-01-01.md")
    os.mkfifo(workspace / "memory" / f"{owner_today}.md")
    got = owner_client.post(
        "/api/agents/master/tools/memory_get", data={"path": "memory/2026-01-01.md"},
        format="json",
    )  # fmt: skip
    assert got.status_code == 422 and "not a regular file" in got.json()["detail"]
    for answer in (
        owner_client.get("/api/memory/search", {"q": "anything"}),
        owner_client.get("/api/agents/master/memory/files"),
        owner_client.get("/api/agents/master/memory/notes"),
        owner_client.get("/api/agents/master/memory/context", {"conversation": "c"}),
    ):
        assert answer.status_code < 500, answer.content[:300]
    saved = owner_client.post(
        "/api/agents/master/tools/memory_save", data={"text": "x"}, format="json"
    )
    assert saved.status_code == 422 and "not a regular file" in saved.json()["detail"]


def test_stats_for_an_agent_token_count_only_its_agent(
    owner_client, helper_client, master, helper_agent
):
    owner_client.post("/api/agents/master/memory/save", {"text": "m"})
    owner_client.post("/api/agents/helper/memory/save", {"text": "h"})
    owner_client.put("/api/agents/helper/memory/notes/2026-01-01", {"body": "x\n"})
    for agent_id, source in (("master", "job:a"), ("helper", "job:b")):
        lines = {"lines": [f"for {agent_id}"], "source": source}
        assert owner_client.post(f"/api/agents/{agent_id}/memory/lines", lines).status_code == 202
    everyone = owner_client.get("/api/stats").json()
    assert everyone["agents"] == 2 and everyone["notes"] == 3
    assert everyone["pending_proposals"] == 2
    own = helper_client.get("/api/stats").json()
    assert own == {**own, "agents": 1, "notes": 2, "pending_proposals": 1}


# --- a missing or wrong token says how to get a good one; there is no OAuth to discover

FIX = "Send Authorization: Bearer <agent token>. Make one with `manage.py memory_token agent"


@pytest.mark.parametrize(
    "authorization",
    [None, "Token nope", "Bearer nope", "Bearer", "Bearer ${MEMORY_AGENT_TOKEN}"],
)
def test_a_missing_or_wrong_token_is_401_json_naming_the_fix(master, authorization):
    client = APIClient()
    if authorization is not None:
        client.credentials(HTTP_AUTHORIZATION=authorization)
    response = client.get("/api/agents/master/memory")
    assert response.status_code == 401
    body = response.json()
    assert body["error"] == "invalid_token" and FIX in body["detail"]
    assert body["error_description"] == body["detail"]
    challenge = response["WWW-Authenticate"]
    assert challenge.startswith('Bearer realm="agent-memory", error="invalid_token", ')
    assert "MEMORY_AGENT_TOKEN" in challenge and challenge.isascii()
    if authorization and "${" in authorization:
        assert "its variable was not filled in" in body["detail"]


@pytest.mark.parametrize(
    "method, url",
    [
        ("get", "/.well-known/oauth-protected-resource"),
        ("get", "/.well-known/oauth-protected-resource/mcp"),
        ("get", "/.well-known/oauth-authorization-server"),
        ("get", "/.well-known/openid-configuration"),
        ("post", "/register"),
        ("get", "/authorize"),
        ("post", "/token"),
    ],
)
def test_oauth_discovery_paths_answer_json_404(master, method, url):
    """A client sent no token tries OAuth discovery; an HTML 404 made Claude Code fail."""
    response = getattr(APIClient(), method)(url)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "no_oauth"
    assert response.json()["detail"].startswith("This server does not offer OAuth. " + FIX)
