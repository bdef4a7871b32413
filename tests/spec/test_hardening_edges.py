"""The edges of the HTTP surface (SPEC §1, §17), each through the interfaces: bytes that are not
UTF-8, lone surrogates through the tools, file modes, a cron that never fires, long names, deep
JSON, a symlinked note in the prompt, stats for agent tokens, sign-in throttling, trailing newlines
in agent ids, form bodies on JSON endpoints, secure-cookie settings."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from memory import tools, workspace
from memory.mcp.server import call_tool_now
from memory.models import Agent
from memory.presence import Caller

ROOT = Path(__file__).resolve().parents[2]


def _files(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and ".memory-locks" not in p.parts
    }


# --- 10.6 bytes that are not UTF-8 --------------------------------------------------------


@pytest.fixture
def latin1(workspace, master):
    """A hand-edited fact, USER.md, MEMORY.md and today's note, each with a latin-1 byte."""
    from memory.clock import today

    (workspace / "users/owner/facts").mkdir(parents=True, exist_ok=True)
    (workspace / "users/owner/USER.md").write_bytes(b"Caf\xe9 owner\n")
    (workspace / "users/owner/facts/cafe.md").write_bytes(
        b"---\nname: cafe\ndescription: caf\xe9 noir\ntype: preference\nwritten_by: owner\n"
        b"source: web\nupdated: 2026-11-01\n---\n\nNo sugar \xe9.\n"
    )
    (workspace / "MEMORY.md").write_bytes(b"- likes caf\xe9\n")
    day = today().isoformat()
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
    get = tools.call_tool(master, "memory_get", {"path": "MEMORY.md"}, source="chat")
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


def test_a_consolidation_names_the_note_it_could_not_read_and_goes_on(
    latin1, workspace, master, fake_llm
):
    from memory.jobs.nightly import consolidate_agent

    (workspace / "MEMORY.md").write_text("- likes coffee\n")
    (workspace / "memory/2026-01-01.md").write_text("# 2026-01-01\n\n- 08:00 readable\n")
    fake_llm.script({"memory": "- likes coffee\n- readable\n", "reasons": []}, {"proposals": []})
    run = consolidate_agent(master, trigger="test")
    assert run.status == "succeeded", run.summary
    assert f"left out memory/{latin1}.md: it has bytes that are not UTF-8 text" in run.reasons
    # The model read the readable note and not the other.
    prompt = fake_llm.prompts()[0]
    assert "readable" in prompt and "08:00 caf" not in prompt


def test_a_consolidation_refuses_a_memory_md_that_is_not_utf8(latin1, master, fake_llm):
    from memory.jobs.nightly import consolidate_agent

    run = consolidate_agent(master, trigger="test")
    assert run.status == "failed"
    assert "MEMORY.md has bytes that are not UTF-8" in run.summary
    assert fake_llm.prompts() == []


# --- 10.7 a lone surrogate through a tool ----------------------------------------------------

SURROGATE_FACT = {"name": "bad", "description": "x\ud800y", "type": "preference", "body": "b"}


def test_a_lone_surrogate_through_a_tool_is_422_on_every_path(workspace, master, owner_client):
    before = _files(workspace)
    body = json.dumps(SURROGATE_FACT)  # "\ud800" as JSON's escape: what a client sends
    rest = owner_client.generic(
        "POST",
        "/api/agents/master/tools/user_memory_save",
        body,
        content_type="application/json",
    )
    assert rest.status_code == 422, rest.content
    assert "lone surrogate" in rest.json()["detail"]
    mcp = call_tool_now(Caller(agent_id="master"), "user_memory_save", dict(SURROGATE_FACT))
    assert mcp.is_error and "lone surrogate" in mcp.content[0].text
    loop = tools.run_tool(master, "user_memory_save", dict(SURROGATE_FACT), source="chat")
    assert loop.startswith("Error:") and "lone surrogate" in loop
    saved = tools.run_tool(master, "memory_save", {"text": "a\udfffb"}, source="chat")
    assert "lone surrogate" in saved
    assert _files(workspace) == before
    # INDEX.md is still whole: nothing was written.
    assert owner_client.get("/api/memory/user").status_code == 200


def test_a_lone_surrogate_never_reaches_a_fact_file_from_inside(workspace, master):
    from memory import facts
    from memory.errors import InvalidInput

    with pytest.raises(InvalidInput):
        facts.save_fact(
            "bad", description="x\ud800", type="preference", body="", written_by="owner",
            source="web",
        )  # fmt: skip
    assert not (workspace / "users/owner/facts/bad.md").exists()


# --- 10.9 modes ----------------------------------------------------------------------------


def test_a_consolidation_keeps_memory_md_readable_by_others(workspace, master, owner_client):
    (workspace / "MEMORY.md").write_text("- old\n")
    os.chmod(workspace / "MEMORY.md", 0o644)
    owner_client.put("/api/agents/master/memory", {"body": "- new\n"})
    assert stat.S_IMODE(os.stat(workspace / "MEMORY.md").st_mode) == 0o644


def test_the_secret_key_and_the_sqlite_database_are_0600(tmp_path):
    from memory.management.commands import memory_init

    key_file = tmp_path / "var" / "secret_key"
    key = memory_init.secret_key_from(key_file)
    assert len(key) >= 50
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert memory_init.secret_key_from(key_file) == key
    loose = tmp_path / "loose"
    loose.write_text("k")
    os.chmod(loose, 0o644)
    memory_init.private_file(loose)
    assert stat.S_IMODE(os.stat(loose).st_mode) == 0o600

    # A fresh start as `make run` does it: migrate, then memory_init.
    db = tmp_path / "db" / "memory.sqlite3"
    db.parent.mkdir()
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "MY_AGENT_HOME": str(tmp_path / "h")}
    for command in (["migrate", "--noinput", "-v0"], ["memory_init"]):
        done = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    for path in db.parent.iterdir():  # the database, and its -wal / -shm when present
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path.name


# --- 10.12 a cron that never fires -------------------------------------------------------------


@pytest.mark.parametrize("cron", ["0 0 31 2 *", "0 0 30 2 *"])
def test_a_cron_that_never_fires_is_422_and_nothing_is_saved(owner_client, master, cron):
    from django_q.models import Schedule

    owner_client.patch("/api/agents/master", {"memory_consolidate": "0 3 * * *"})
    schedule = Schedule.objects.get(name="memory-consolidate:master")
    response = owner_client.patch("/api/agents/master", {"memory_consolidate": cron})
    assert response.status_code == 422, response.content
    assert "never fires" in json.dumps(response.json())
    master.refresh_from_db()
    assert master.memory_consolidate == "0 3 * * *"
    schedule.refresh_from_db()
    assert schedule.cron == "0 3 * * *"
    created = owner_client.post(
        "/api/agents", {"id": "night", "name": "N", "memory_consolidate": cron}
    )
    assert created.status_code == 422
    assert not Agent.objects.filter(pk="night").exists()


def test_the_admin_refuses_a_cron_that_never_fires(alice, master):
    client = Client()
    client.force_login(alice)
    response = client.post(
        "/admin/memory/agent/master/change/",
        {"name": "Master", "memory_consolidate": "0 0 31 2 *"},
    )
    assert response.status_code == 200  # the form again, with the error
    assert "never fires" in response.content.decode()
    master.refresh_from_db()
    assert master.memory_consolidate == ""


# --- 10.14 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "/api/agents/master/memory/notes/2026-01-01-" + "a" * 300,
        "/api/agents/master/memory/wiki/pages/" + "東" * 100,  # 300 bytes of UTF-8
    ],
)
def test_very_long_names_are_422_not_500(owner_client, master, workspace, url):
    before = _files(workspace)
    get = owner_client.get(url)
    assert get.status_code in (404, 422), get.status_code
    body = {"body": "x", "title": None, "kind": "entity", "sources": ["note:2026-01-01"]}
    put = owner_client.put(url, {key: value for key, value in body.items() if value})
    assert put.status_code == 422, put.content
    assert _files(workspace) == before


def test_a_very_long_wiki_title_is_422_from_the_tool(master, workspace):
    answer = tools.run_tool(
        master,
        "wiki_apply",
        {"title": "東京" * 60, "kind": "entity", "sources": ["note:2026-01-01"], "body": "x"},
        source="chat",
    )
    assert answer.startswith("Error:")
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


def test_one_symlinked_daily_note_never_fails_the_prompt_context(
    owner_client, master, workspace, tmp_path
):
    from memory.clock import today

    day = today().isoformat()
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# secret\n")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / f"{day}.md").symlink_to(outside)
    (workspace / "MEMORY.md").write_text("- durable\n")
    response = owner_client.get("/api/agents/master/memory/context?conversation=c1")
    assert response.status_code == 200, response.content
    assert "- durable" in response.json()["system"]
    assert "secret" not in response.json()["pre_turn"]
    preview = owner_client.get("/api/agents/master/memory/context")
    assert preview.status_code == 200


def test_stats_for_an_agent_token_count_only_its_agent(
    owner_client, helper_client, master, helper_agent
):
    from memory import writes

    owner_client.post("/api/agents/master/memory/save", {"text": "m"})
    owner_client.post("/api/agents/helper/memory/save", {"text": "h"})
    owner_client.put("/api/agents/helper/memory/notes/2026-01-01", {"body": "x\n"})
    writes.add_memory_lines_or_propose(master, ["for master"], source="job:a")
    writes.add_memory_lines_or_propose(helper_agent, ["for helper"], source="job:b")
    everyone = owner_client.get("/api/stats").json()
    assert everyone["agents"] == 2 and everyone["notes"] == 3
    assert everyone["pending_proposals"] == 2
    own = helper_client.get("/api/stats").json()
    assert own == {**own, "agents": 1, "notes": 2, "pending_proposals": 1}


def test_sign_in_is_throttled_after_repeated_failures(alice, settings):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = client.post("/manage/memory/login/", {"username": "alice", "password": "wrong"})
        assert response.status_code == 200  # the form again
    last = client.post("/manage/memory/login/", {"username": "alice", "password": "wrong"})
    assert last.status_code == 429
    locked = client.post("/manage/memory/login/", {"username": "alice", "password": "pw-alice-123"})
    assert locked.status_code == 429
    assert "Too many failed sign-ins" in locked.content.decode()
    admin = client.post("/admin/login/", {"username": "alice", "password": "pw-alice-123"})
    assert admin.status_code == 429
    # Another address (or another username) is not paused.
    other = Client(REMOTE_ADDR="10.9.9.9")
    ok = other.post("/manage/memory/login/", {"username": "alice", "password": "pw-alice-123"})
    assert ok.status_code == 302


def test_an_agent_id_with_a_trailing_newline_is_422_not_trimmed(owner_client, workspace):
    response = owner_client.post("/api/agents", {"id": "scout\n", "name": "Scout"})
    assert response.status_code == 422, response.content
    assert not Agent.objects.filter(pk="scout").exists()
    assert not (workspace / "agents/scout").exists()


MULTIPART = '--XX\r\nContent-Disposition: form-data; name="text"\r\n\r\n5\r\n--XX--\r\n'


@pytest.mark.parametrize(
    "content_type, body",
    [
        ("application/x-www-form-urlencoded", "text=5"),
        ("multipart/form-data; boundary=XX", MULTIPART),
    ],
)
def test_form_bodies_on_json_endpoints_are_415(owner_client, master, workspace, content_type, body):
    before = _files(workspace)
    for method, url in [
        ("POST", "/api/agents/master/memory/save"),
        ("POST", "/api/agents/master/tools/memory_save"),
        ("PUT", "/api/agents/master/memory"),
        ("PUT", "/api/memory/user/facts/coffee"),
    ]:
        response = owner_client.generic(method, url, body, content_type=content_type)
        assert response.status_code == 415, (url, response.status_code)
    assert _files(workspace) == before


def test_secure_cookie_and_proxy_settings_come_from_the_environment():
    script = (
        "from django.conf import settings as s;"
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER)"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memoryproject.settings",
        "SESSION_COOKIE_SECURE": "true",
        "CSRF_COOKIE_SECURE": "yes",
        "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    }
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {script}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "True True ('HTTP_X_FORWARDED_PROTO', 'https')", out.stderr
    env.pop("SESSION_COOKIE_SECURE")
    env.pop("CSRF_COOKIE_SECURE")
    env["SECURE_PROXY_SSL_HEADER"] = "X-Scheme=on"
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {script}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "False False ('HTTP_X_SCHEME', 'on')", out.stderr


def test_the_lock_directory_is_ignored_by_git_after_start_up(workspace, master):
    from django.core.management import call_command

    call_command("memory_init")
    assert (workspace / ".memory-locks/.gitignore").read_text() == "*\n"
    assert len(os.listdir(workspace / ".memory-locks")) == (
        workspace_module().FILE_STRIPES + workspace_module().GUARD_STRIPES + 1
    )


def workspace_module():
    return workspace
