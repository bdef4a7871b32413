"""Every snippet of the README is run as a person would run it: the shell lines as
commands (on this test's database, the OpenClaw workspace a generated one), the two MCP
configurations by the MCP SDK's client exactly as written (the stdio command launched, the
HTTP URL and headers sent), the layout against a filled workspace. The opening block of
`make` commands is the one exception: tests/test_ci.py holds CI to it. A snippet of another
kind fails here until a test runs it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.models import Agent, ApiToken, hash_token
from tests.memory.mcp.conftest import (
    http_client,
    http_server,  # noqa: F401 — the fixture, used below
)
from tests.openclaw_workspace import build
from tests.processes import test_database_url

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, re.DOTALL | re.MULTILINE)

pytestmark = pytest.mark.django_db(transaction=True)


def run_client(client, scenario):
    """Run an MCP client's scenario in a thread of its own (a browser test may have left
    this thread with a running event loop)."""

    async def session():
        async with client:
            return await scenario(client)

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, session()).result()


def blocks(language: str, holding: str = "") -> list[str]:
    return [body for lang, body in BLOCKS if lang == language and holding in body]


def test_every_snippet_is_one_this_file_runs():
    kinds = []
    for index, (language, body) in enumerate(BLOCKS):
        if index == 0:
            kinds.append("make commands (tests/test_ci.py)")
            assert language == "sh" and "make run" in body and "make test" in body
        elif language == "sh" and body.startswith("claude mcp add "):
            assert len(body.splitlines()) == 1, body
            kinds.append("a Claude Code command")
        elif language == "sh":
            assert all(
                line.startswith((".venv/bin/python manage.py ", "MY_AGENT_HOME="))
                for line in body.splitlines()
            ), body
            kinds.append("manage.py commands")
        elif language == "json":
            data = json.loads(body)
            assert "mcpServers" in data or "servers" in data.get("mcp", {}), body
            kinds.append("an MCP configuration")
        else:
            assert language == "" and body.startswith("$MY_AGENT_HOME/"), body
            kinds.append("the layout")
    assert kinds.count("an MCP configuration") == 2 and "the layout" in kinds
    assert kinds.count("a Claude Code command") == 1


# --- the shell lines --------------------------------------------------------------------


def run_line(line: str, *, openclaw: Path) -> subprocess.CompletedProcess:
    """One README line, as written: `VAR=value … .venv/bin/python manage.py …`, with
    this checkout's interpreter, this test's database, and the generated workspace for
    `~/.openclaw/workspace`."""
    words = shlex.split(line, comments=True)
    env = {**os.environ, "DATABASE_URL": test_database_url()}
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        env[name] = value.replace("~/.openclaw/workspace", str(openclaw))
    assert words[:2] == [".venv/bin/python", "manage.py"], line
    return subprocess.run(
        [sys.executable, *words[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_shell_lines_run(master, workspace, tmp_path):
    openclaw = tmp_path / "openclaw"
    openclaw.mkdir()
    build(openclaw, "en", today=dt.date.today())
    lines = [
        line
        for body in blocks("sh")[1:]
        if not body.startswith("claude ")
        for line in body.splitlines()
    ]
    assert len(lines) == 3
    results = {line: run_line(line, openclaw=openclaw) for line in lines}
    for line, done in results.items():
        assert done.returncode == 0, (line, done.stderr)

    token_line, doctor_line, rebind_line = lines
    key = results[token_line].stdout.strip()
    token = ApiToken.objects.get(agent=master)
    assert token.key_hash == hash_token(key)
    assert "Layout: an OpenClaw workspace, used as it is" in results[doctor_line].stdout
    assert results[rebind_line].stdout.endswith(f"now {openclaw}.\n")


# --- the MCP configurations ---------------------------------------------------------------


async def save_a_fact(client) -> dict:
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert {"memory_save", "memory_search", "memory_get", "memory_context"} <= names
    fact = {"name": "tea", "description": "likes green tea", "type": "preference", "body": "x"}
    result = await client.call_tool("user_memory_save", fact)
    assert not result.is_error
    return result.structured_content


def test_the_stdio_configuration_runs_as_written(master, workspace):
    from mcp import Client, StdioServerParameters

    (server,) = json.loads(blocks("json", "mcpServers")[0])["mcpServers"].values()
    here = json.dumps(server).replace("/path/to/repo", str(ROOT))
    here = json.loads(here.replace("/home/you/.agent-home", str(workspace)))
    assert Path(here["command"]).is_file(), "the README's interpreter is the checkout's .venv"
    params = StdioServerParameters(
        command=here["command"],
        args=here["args"],
        env={**os.environ, **here["env"], "DATABASE_URL": test_database_url()},
    )
    written = run_client(Client(params), save_a_fact)
    assert written == {"status": "written", "path": "users/owner/facts/tea.md"}
    assert "source: mcp" in (workspace / "users/owner/facts/tea.md").read_text()


def claude_mcp_add(line: str) -> tuple[dict[str, str], list[str]]:
    """(the `-e` environment, the command and its arguments) of a `claude mcp add <name>
    [-e KEY=VALUE …] -- <command> [args…]` line, as Claude Code stores and launches it."""
    words = shlex.split(line)
    assert words[:3] == ["claude", "mcp", "add"], line
    options, command = words[3 : words.index("--")], words[words.index("--") + 1 :]
    env = {}
    while options:
        word = options.pop(0)
        if word in ("-e", "--env"):
            name, _, value = options.pop(0).partition("=")
            env[name] = value
    return env, command


def test_the_claude_code_line_carries_the_workspace(master, workspace):
    """The stdio one-liner, launched as Claude Code launches it: the command with only the
    line's `-e` variables beside the ordinary environment — the workspace comes from the
    line (the test's own MY_AGENT_HOME is not handed down), and it is not the default."""
    from mcp import Client, StdioServerParameters

    (line,) = blocks("sh", "claude mcp add")
    line = line.strip().replace("/path/to/repo", str(ROOT))
    env, command = claude_mcp_add(line.replace("/home/you/.agent-home", str(workspace)))
    assert env == {"MY_AGENT_HOME": str(workspace)}
    assert Path(command[0]).is_file() and command[1:] == [
        f"{ROOT}/manage.py",
        "mcp",
        "--agent",
        "master",
    ]
    params = StdioServerParameters(
        command=command[0],
        args=command[1:],
        env={**env, "DATABASE_URL": test_database_url()},  # this test's database
    )
    written = run_client(Client(params), save_a_fact)
    assert written == {"status": "written", "path": "users/owner/facts/tea.md"}
    assert "source: mcp" in (workspace / "users/owner/facts/tea.md").read_text()


def test_the_openclaw_configuration_runs_as_written(master, workspace, http_server):  # noqa: F811
    (server,) = json.loads(blocks("json", '"servers"')[0])["mcp"]["servers"].values()
    assert server["transport"] == "streamable-http"  # the SDK client used here speaks it
    assert server["url"] == "http://127.0.0.1:8000/mcp"  # make run's address
    key = ApiToken.issue(agent=master)[1]
    headers = {
        name: value.replace("${MEMORY_AGENT_TOKEN}", key)
        for name, value in server["headers"].items()
    }
    bearer = headers.pop("Authorization")
    assert bearer == f"Bearer {key}"
    # What OpenClaw injects itself: its workspace's USER.md and MEMORY.md.
    (workspace / "USER.md").write_text("# USER.md\n\n- Name: Sam\n")
    (workspace / "MEMORY.md").write_text("# MEMORY.md\n\n- The NAS keeps the backups\n")

    async def scenario(client) -> tuple[dict, str]:
        written = await save_a_fact(client)
        context = await client.call_tool("memory_context", {"conversation": "c1"})
        return written, context.content[0].text

    client = http_client(http_server, key, **headers)
    written, context = run_client(client, scenario)
    assert written == {"status": "written", "path": "users/owner/facts/tea.md"}
    assert "source: telegram" in (workspace / "users/owner/facts/tea.md").read_text()
    # X-Memory-Runtime: openclaw — the facts' INDEX, not what OpenClaw already sends.
    assert "## INDEX.md\n- [tea](tea.md)" in context
    assert "Sam" not in context and "NAS" not in context


# --- the layout -----------------------------------------------------------------------------


def test_the_layout_is_what_a_filled_workspace_holds(master, workspace):
    call_command("memory_init", stdout=io.StringIO())
    call_command("memory_demo", stdout=io.StringIO())
    Agent.objects.create(id="helper", name="Helper")
    (layout,) = [body for lang, body in BLOCKS if lang == ""]
    patterns = [line.split()[0] for line in layout.splitlines()[1:]]
    assert patterns[0] == "users/owner/USER.md"
    for pattern in patterns:
        glob = re.sub(r"<[^>]+>|YYYY-MM-DD", "*", pattern).rstrip("/")
        assert list(workspace.glob(glob)), pattern
    assert (workspace / "users/owner/facts/INDEX.md").is_file()
    for folder in ("entities", "reports"):
        assert (workspace / "memory/wiki" / folder).is_dir()
    # An agent's folder comes with its first write, never empty before (SPEC §1).
    assert not (workspace / "agents/helper").exists()
    assert (workspace / "agents/researcher/memory").is_dir()
