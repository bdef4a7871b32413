"""The Settings tab (SPEC §15): schedule, autonomous, rename, a new agent, a token — through
the API's own serializers and operations."""

import pytest
from django_q.models import Schedule

from memory.models import Agent, ApiToken
from tests.memory.mcp.conftest import http_server  # noqa: F401 — the fixture, used below


def html_of(response) -> str:
    return response.content.decode()


def test_it_switches_on_the_nightly_consolidation_from_a_preset(pages, master):
    response = pages.post(
        "/manage/memory/settings/master/",
        {"name": "Master", "preset": "0 3 * * *", "cron": "", "save": "1"},
    )
    assert response.status_code == 302
    master.refresh_from_db()
    assert master.memory_consolidate == "0 3 * * *" and not master.autonomous
    schedule = Schedule.objects.get(name="memory-consolidate:master")
    assert schedule.cron == "0 3 * * *"
    html = html_of(pages.get("/manage/memory/settings/master/"))
    assert "At 03:00" in html and "Next run:" in html


def test_a_bad_cron_stays_in_the_field_with_its_error_and_nothing_changes(pages, master):
    response = pages.post(
        "/manage/memory/settings/master/",
        {"name": "Chủ", "preset": "custom", "cron": "every night", "autonomous": "on"},
    )
    assert response.status_code == 422
    html = html_of(response)
    assert 'value="every night"' in html and 'value="Chủ"' in html
    assert 'id="cron-error">Invalid cron expression' in html
    master.refresh_from_db()
    assert master.memory_consolidate == "" and master.name == "Master" and not master.autonomous


def test_preview_writes_nothing_and_says_when_it_would_run(pages, master):
    response = pages.post(
        "/manage/memory/settings/master/",
        {"name": "Master", "preset": "custom", "cron": "30 2 * * 1-5", "preview": "1"},
    )
    assert response.status_code == 200
    html = html_of(response)
    assert "Preview (not saved yet)" in html and "02:30" in html and "Next runs:" in html
    master.refresh_from_db()
    assert master.memory_consolidate == ""


def test_it_renames_and_makes_autonomous(pages, master):
    pages.post(
        "/manage/memory/settings/master/",
        {"name": "Trợ lý chính", "autonomous": "on", "preset": "", "save": "1"},
    )
    master.refresh_from_db()
    assert master.name == "Trợ lý chính" and master.autonomous


def test_it_creates_an_agent_with_its_directory_and_refuses_a_taken_id(pages, master, workspace):
    response = pages.post(
        "/manage/memory/settings/new-agent/", {"new-id": "reader", "new-name": "Reader"}
    )
    assert response["Location"] == "/manage/memory/settings/reader/"
    assert Agent.objects.get(pk="reader").name == "Reader"
    assert not (workspace / "agents/reader").exists()  # made by its first write (SPEC §1)
    again = pages.post(
        "/manage/memory/settings/new-agent/", {"new-id": "reader", "new-name": "Other"}
    )
    assert again.status_code == 422
    assert "Agent &#x27;reader&#x27; exists." in html_of(again)
    bad = pages.post("/manage/memory/settings/new-agent/", {"new-id": "Bad Id", "new-name": "x"})
    assert bad.status_code == 422 and 'value="Bad Id"' in html_of(bad)


def test_a_token_is_shown_once_with_the_mcp_snippet(pages, master):
    html = html_of(pages.post("/manage/memory/settings/master/token/"))
    token = ApiToken.objects.get(agent=master)
    key = html.split('id="new-token">', 1)[1].split("<", 1)[0]
    assert len(key) == 48 and token.key_hash != key
    assert f'"Authorization": "Bearer {key}"' in html
    assert '"url": "http://testserver/mcp"' in html
    assert key not in html_of(pages.get("/manage/memory/settings/master/"))


def test_the_model_is_named_or_its_absence_explained(pages, master, settings):
    html = html_of(pages.get("/manage/memory/settings/master/"))
    assert "No model is configured" in html and "MEMORY_LLM_MODEL" in html
    settings.MEMORY_LLM_MODEL = "gpt-4o-mini"
    settings.MEMORY_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    html = html_of(pages.get("/manage/memory/settings/master/"))
    assert "<strong>gpt-4o-mini</strong>" in html


def test_an_empty_workspace_teaches_the_first_steps(pages, master):
    html = html_of(pages.get("/manage/memory/"))
    assert "Getting started" in html
    assert "# About me" in html  # the USER.md template
    assert 'href="/manage/memory/settings/master/#connect"' in html
    assert 'href="/manage/memory/settings/master/#schedule"' in html


def test_error_pages_are_in_the_layout_and_in_vietnamese(pages, master):
    response = pages.get("/manage/memory/facts/nope/", HTTP_ACCEPT_LANGUAGE="vi")
    assert response.status_code == 404
    html = html_of(response)
    assert "Không tìm thấy trang" in html and 'class="skip-link"' in html


# --- every snippet of the page runs as written (SPEC §15) ---------------------------------


def _snippets(html: str) -> list[str]:
    """The page's snippets as a person copies them: every `<pre class="snippet">`, and the
    inline shell command, unescaped."""
    import re
    from html import unescape

    blocks = re.findall(r'<pre class="snippet"[^>]*>(.*?)</pre>', html, re.DOTALL)
    inline = re.findall(r"<code>(\.venv/bin/python manage\.py [^<]*)</code>", html)
    return [unescape(block) for block in [*blocks, *inline]]


def _in_thread(client, scenario):
    from tests.test_readme import run_client

    return run_client(client, scenario)


async def _save_tea(client) -> dict:
    fact = {"name": "tea", "description": "likes green tea", "type": "preference", "body": "x"}
    result = await client.call_tool("user_memory_save", fact)
    assert not result.is_error, result.content[0].text
    return result.structured_content


def _llm_settings(snippet: str) -> str:
    """The model settings the server reads with the snippet's lines in its environment."""
    import os
    import shlex
    import subprocess
    import sys

    from django.conf import settings

    env = {**os.environ}
    for line in snippet.splitlines():
        (assignment,) = shlex.split(line, comments=True) or [""]
        name, _, value = assignment.partition("=")
        env[name] = value
    code = (
        "import django; django.setup(); from memory.jobs.llm import get_provider; "
        "p = get_provider(); print(type(p).__name__, p.base_url, p.model)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=settings.BASE_DIR, capture_output=True, text=True,
        env={**env, "DJANGO_SETTINGS_MODULE": "memoryproject.settings"}, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.django_db(transaction=True)
def test_every_snippet_runs_as_written(alice, master, workspace, http_server):  # noqa: F811
    import json
    import os
    import subprocess
    import sys

    from django.conf import settings
    from django.test import Client
    from mcp import Client as McpClient
    from mcp import StdioServerParameters

    from tests.memory.mcp.conftest import http_client
    from tests.processes import test_database_url
    from tests.test_readme import claude_mcp_add

    owner = Client()
    owner.force_login(alice)
    html = html_of(owner.post("/manage/memory/settings/master/token/"))
    key = html.split('id="new-token">', 1)[1].split("<", 1)[0]
    database = {"DATABASE_URL": test_database_url()}  # this test's database, not var/
    done: list[str] = []
    for snippet in _snippets(html):
        snippet = snippet.replace("http://testserver", http_server)
        fact = workspace / "users/owner/facts/tea.md"
        fact.unlink(missing_ok=True)
        if snippet == key:
            continue  # the token itself, used by the snippets below
        if snippet.startswith("MEMORY_LLM_PROVIDER="):
            assert _llm_settings(snippet) == ("OpenAIProvider http://127.0.0.1:11434/v1 qwen2.5:7b")
            done.append("the model's settings")
        elif snippet.startswith(".venv/bin/python manage.py "):
            words = snippet.split()
            answer = subprocess.run(
                [sys.executable, *words[1:]], cwd=settings.BASE_DIR, capture_output=True,
                text=True, env={**os.environ, **database}, timeout=120,
            )  # fmt: skip
            assert answer.returncode == 0 and len(answer.stdout.strip()) == 48, answer.stderr
            done.append("memory_token")
        elif snippet.startswith('{\n  "mcp"'):
            (server,) = json.loads(snippet)["mcp"]["servers"].values()
            assert server["transport"] == "streamable-http"
            headers = dict(server["headers"])
            assert headers.pop("Authorization") == f"Bearer {key}"
            client = http_client(server["url"].removesuffix("/mcp"), key, **headers)
            assert _in_thread(client, _save_tea)["status"] == "written"
            done.append("OpenClaw over HTTP")
        elif snippet.startswith("claude mcp add --transport http "):
            words = snippet.split('--header "')
            assert words[1] == f'Authorization: Bearer {key}"'
            url = words[0].split()[-1]
            client = http_client(url.removesuffix("/mcp"), key)
            assert _in_thread(client, _save_tea)["status"] == "written"
            done.append("Claude Code over HTTP")
        elif snippet.startswith("claude mcp add "):
            env, command = claude_mcp_add(snippet)
            assert env == {"MY_AGENT_HOME": str(workspace)}
            params = StdioServerParameters(command=command[0], args=command[1:],
                                           env={**env, **database})  # fmt: skip
            assert _in_thread(McpClient(params), _save_tea)["status"] == "written"
            done.append("Claude Code over stdio")
        else:
            (server,) = json.loads(snippet)["mcpServers"].values()
            params = StdioServerParameters(
                command=server["command"], args=server["args"], env={**server["env"], **database}
            )
            assert _in_thread(McpClient(params), _save_tea)["status"] == "written"
            done.append("Claude Desktop over stdio")
        if done[-1].endswith(("HTTP", "stdio")):
            assert fact.is_file(), done[-1]  # in this workspace, the one the page names
    assert sorted(done) == sorted(
        [
            "the model's settings",
            "memory_token",
            "OpenClaw over HTTP",
            "Claude Code over HTTP",
            "Claude Code over stdio",
            "Claude Desktop over stdio",
        ]
    )
