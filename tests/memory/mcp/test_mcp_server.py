"""The MCP server driven by the SDK's own client, over stdio and over Streamable HTTP
(both protocol eras): tools without `source`, every tool called, resources, prompts, the
presence rule from the credential, one agent per token, tool errors for bad calls."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time

import httpx
import pytest
from mcp import MCPError

from memory import clock
from memory.models import Agent, ApiToken
from proposals.models import Proposal
from tests.memory.mcp.conftest import ROOT, agent_key, http_client, stdio_params

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {
    "memory_save", "memory_search", "memory_get", "user_memory_save", "user_memory_forget",
    "memory_context", "wiki_get", "wiki_search", "wiki_apply",
}  # fmt: skip
FACT = {"name": "tea", "description": "likes green tea", "type": "preference", "body": "Sencha"}


@pytest.fixture
def home(master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "MEMORY.md").write_text("# Memory\n- master's own line\n")
    (workspace / "users/owner/facts").mkdir(parents=True)
    (workspace / "users/owner/USER.md").write_text("Owner: Lan\n")
    return workspace


def run_async(coroutine):
    """Run the client in a thread of its own: another test's browser (Playwright's sync
    API) may have left this thread with a running event loop."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def text(result) -> str:
    return result.content[0].text


async def exercise(client) -> None:
    listed = (await client.list_tools()).tools
    assert {tool.name for tool in listed} == TOOLS
    for tool in listed:
        assert "source" not in tool.input_schema.get("properties", {}), tool.name
        assert tool.title and tool.annotations is not None
    hints = {tool.name: tool.annotations for tool in listed}
    assert hints["memory_search"].read_only_hint is True
    assert hints["user_memory_forget"].destructive_hint is True

    saved = await client.call_tool("memory_save", {"text": "ran 5 km"})
    assert not saved.is_error and text(saved).startswith("Saved to memory/")
    found = await client.call_tool("memory_search", {"query": "ran km", "maxResults": 5})
    assert text(found).startswith("[memory/") and text(found).endswith("ran 5 km")
    assert found.structured_content is None  # one copy of the hits: the text (SPEC §16)
    got = await client.call_tool("memory_get", {"path": "MEMORY.md"})
    assert text(got) == "# Memory\n- master's own line\n"
    fact = await client.call_tool("user_memory_save", FACT)
    assert fact.structured_content == {"status": "written", "path": "users/owner/facts/tea.md"}
    forgot = await client.call_tool("user_memory_forget", {"name": "tea"})
    assert forgot.structured_content["status"] == "written"
    first = await client.call_tool("memory_context", {"conversation": "c1", "turn": "t1"})
    system, notes = text(first).split("</memory-system>")
    assert "Owner: Lan" in system and "ran 5 km" in notes and first.structured_content is None
    retry = await client.call_tool("memory_context", {"conversation": "c1", "turn": "t1"})
    assert text(retry) == text(first)
    page = {"title": "Eco", "kind": "entity", "sources": ["conv:1"], "body": "Due Friday."}
    assert not (await client.call_tool("wiki_apply", page)).is_error
    assert "Due Friday." in text(await client.call_tool("wiki_get", {"title": "eco"}))
    assert text(await client.call_tool("wiki_search", {"query": "friday"})) == "[eco] Due Friday."

    for name, arguments in [
        ("memory_save", {"text": 5}),
        ("memory_save", {"text": "x", "source": "chat"}),
        ("memory_get", {"path": "../users/owner/USER.md"}),
        ("wiki_apply", {**page, "sources": []}),
        ("memory_delete", {}),
    ]:
        refused = await client.call_tool(name, arguments)
        assert refused.is_error and text(refused).startswith("Error: "), (name, arguments)

    uris = {resource.uri for resource in (await client.list_resources()).resources}
    assert {"memory://user/USER.md", "memory://user/facts/INDEX.md"} <= uris
    assert "memory://agents/master/MEMORY.md" in uris
    assert "memory://agents/master/memory/wiki/entities/eco.md" in uris
    day = clock.today().isoformat()
    note = await client.read_resource(f"memory://agents/master/memory/{day}.md")
    assert "ran 5 km" in note.contents[0].text
    user = await client.read_resource("memory://user/USER.md")
    assert user.contents[0].text == "Owner: Lan\n"
    with pytest.raises(MCPError):
        await client.read_resource("memory://agents/master/../users/owner/USER.md")

    prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
    assert prompts == {"setup_memory", "memory_flush"}
    setup = await client.get_prompt("setup_memory")
    assert "user_memory_save" in setup.messages[0].content.text
    flush = await client.get_prompt("memory_flush")
    assert len(flush.messages) == 2 and "NO_REPLY" in flush.messages[1].content.text


async def propose_as_job(client) -> dict:
    listed = (await client.list_tools()).tools
    assert all("source" not in tool.input_schema.get("properties", {}) for tool in listed)
    result = await client.call_tool("user_memory_save", FACT)
    assert not result.is_error
    return result.structured_content


def assert_proposed_and_unwritten(structured, workspace, job: str) -> None:
    assert structured["status"] == "proposed"
    proposal = Proposal.objects.get(pk=structured["proposal"]["id"])
    assert (proposal.status, proposal.source, proposal.kind) == ("pending", job, "user_fact")
    assert not (workspace / "users/owner/facts/tea.md").exists()


async def run_client(client, scenario):
    async with client:
        return await scenario(client)


# --- stdio ------------------------------------------------------------------------------


def test_stdio_serves_every_tool_resource_and_prompt(home):
    from mcp import Client

    run_async(run_client(Client(stdio_params(home, "--agent", "master")), exercise))


def test_stdio_with_a_job_proposes_and_changes_no_file(home):
    from mcp import Client

    client = Client(stdio_params(home, "--agent", "master", "--job", "nightly"))
    structured = run_async(run_client(client, propose_as_job))
    assert_proposed_and_unwritten(structured, home, "job:nightly")


# --- Streamable HTTP ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 and the handshake era
def test_http_serves_every_tool_resource_and_prompt(home, master, http_server, mode):
    key = agent_key(master)

    async def scenario(client):
        expected = "2026-07-28" if mode == "auto" else "2025-11-25"
        assert client.protocol_version == expected
        await exercise(client)

    run_async(run_client(http_client(http_server, key, mode=mode), scenario))


def test_http_with_a_job_token_proposes_whatever_the_header_says(home, master, http_server):
    key = agent_key(master, job="nightly")
    client = http_client(http_server, key, **{"X-Memory-Source": "chat"})
    structured = run_async(run_client(client, propose_as_job))
    assert_proposed_and_unwritten(structured, home, "job:nightly")


def test_an_interactive_token_names_its_channel(home, master, http_server):
    client = http_client(http_server, agent_key(master), **{"X-Memory-Source": "telegram"})

    async def save(client):
        return await client.call_tool("user_memory_save", FACT)

    assert not run_async(run_client(client, save)).is_error
    assert "source: telegram" in (home / "users/owner/facts/tea.md").read_text()


def test_agent_b_reaches_only_b(home, master, http_server):
    helper = Agent.objects.create(id="helper", name="Helper")
    (home / "agents/helper").mkdir(parents=True)
    (home / "agents/helper/MEMORY.md").write_text("helper's line\n")

    async def scenario(client):
        got = await client.call_tool("memory_get", {"path": "MEMORY.md"})
        assert text(got) == "helper's line\n"
        uris = {resource.uri for resource in (await client.list_resources()).resources}
        assert not any(uri.startswith("memory://agents/master/") for uri in uris)
        with pytest.raises(MCPError):
            await client.read_resource("memory://agents/master/MEMORY.md")
        searched = await client.call_tool("memory_search", {"query": "master"})
        assert "master's own line" not in text(searched)

    run_async(run_client(http_client(http_server, agent_key(helper)), scenario))


@pytest.mark.parametrize(
    "authorization, status",
    [
        (None, 401),
        ("Bearer nope", 401),
        ("Token nope", 401),
        ("Bearer a b", 401),
        ("Bearer ${MEMORY_AGENT_TOKEN}", 401),  # OpenClaw's probe with the variable unset
    ],
)
def test_no_or_a_bad_token_is_401(http_server, master, authorization, status):
    """SPEC §16: the 401's JSON and its challenge name the fix (OpenClaw's probe printed a
    bare 401; Claude Code shows only the header)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization:
        headers["Authorization"] = authorization
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = httpx.post(f"{http_server}/mcp", json=body, headers=headers)
    assert response.status_code == status
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="agent-memory", error="invalid_token"')
    assert "memory_token agent <id>" in challenge and "MEMORY_AGENT_TOKEN" in challenge
    answer = response.json()
    assert answer["error"] == "invalid_token"
    assert "Send Authorization: Bearer <agent token>" in answer["error_description"]
    if "${" in (authorization or ""):
        assert "its variable was not filled in" in answer["error_description"]


def test_oauth_discovery_is_json_404_on_the_served_app(http_server, master):
    for url in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
    ):
        response = httpx.get(f"{http_server}{url}")
        assert response.status_code == 404 and response.json()["code"] == "no_oauth"
    registered = httpx.post(f"{http_server}/register", json={"client_name": "x"})
    assert registered.status_code == 404 and registered.json()["code"] == "no_oauth"


def test_an_owner_token_is_403_and_a_bad_source_header_422(http_server, master, alice):
    owner = ApiToken.issue(user=alice)[1]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert (
        httpx.post(
            f"{http_server}/mcp", json=body, headers={"Authorization": f"Bearer {owner}"}
        ).status_code
        == 403
    )
    headers = {"Authorization": f"Token {agent_key(master)}", "X-Memory-Source": "a person"}
    assert httpx.post(f"{http_server}/mcp", json=body, headers=headers).status_code == 422


def test_the_rest_of_the_site_is_served_on_the_same_port(http_server, master):
    assert httpx.get(f"{http_server}/api/stats").status_code in (401, 403)
    assert httpx.get(f"{http_server}/manage/memory/", follow_redirects=False).status_code == 302


# --- what strict clients check ----------------------------------------------------------

INSPECTOR = (
    ROOT / "node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js"
)  # pinned in package.json, installed by `make assets`


def test_the_tool_schemas_pass_the_inspectors_strict_check(master, workspace):
    """The MCP Inspector's `--strict` lints every tool's input and output schema for what
    some clients cannot map (e.g. `"type": ["integer", "null"]`): no finding at all, not
    even a warning (SPEC §16)."""
    import json
    import os
    import subprocess
    import sys

    from tests.processes import test_database_url

    if not INSPECTOR.is_file():
        if os.environ.get("CI"):
            raise AssertionError(f"{INSPECTOR} is missing: `make assets` installs it")
        pytest.skip(f"{INSPECTOR} is missing: run `make assets` (npm ci)")
    done = subprocess.run(
        ["node", str(INSPECTOR), "--connect-timeout", "120000", "--method", "tools/list",
         "--strict", "-e", f"MY_AGENT_HOME={workspace}", "-e",
         f"DATABASE_URL={test_database_url()}", "--cwd", str(ROOT),
         sys.executable, "manage.py", "mcp", "--agent", "master"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # with --strict every finding is printed here; none
    assert {tool["name"] for tool in json.loads(done.stdout)["tools"]} == TOOLS


def test_open_streams_per_token_are_capped(http_server, master, helper_agent):
    """SPEC §16: GET /mcp streams stay open until the client leaves; they were unbounded in
    number. A token holds at most MEMORY_MCP_STREAMS_PER_TOKEN (4) at once; another
    token, and tool calls, are not held back."""
    import contextlib

    key = agent_key(master)
    headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
    with httpx.Client(timeout=10) as client, contextlib.ExitStack() as held:
        for _ in range(4):
            stream = held.enter_context(client.stream("GET", f"{http_server}/mcp", headers=headers))
            assert stream.status_code == 200
        refused = client.get(f"{http_server}/mcp", headers=headers)
        assert refused.status_code == 429
        assert refused.json()["error"] == "too_many_streams"
        other = {**headers, "Authorization": f"Bearer {agent_key(helper_agent)}"}
        with client.stream("GET", f"{http_server}/mcp", headers=other) as allowed:
            assert allowed.status_code == 200
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        post = client.post(
            f"{http_server}/mcp",
            json=body,
            headers={**headers, "Accept": "application/json, text/event-stream",
                     "MCP-Protocol-Version": "2025-06-18"},
        )  # fmt: skip
        assert post.status_code != 429
    # Streams the client closed are given back.
    with httpx.Client(timeout=10) as client:
        deadline = time.monotonic() + 10
        while True:
            with client.stream("GET", f"{http_server}/mcp", headers=headers) as again:
                if again.status_code == 200 or time.monotonic() > deadline:
                    break
            time.sleep(0.2)
        assert again.status_code == 200
