"""SPEC §1–§3 and §5 (writes): files on disk, names, INDEX.md, notes, memory_save, memory_get."""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from tests.helpers import all_at_once, call_tool, tool_text
from tests.spec.steps import memory_token, proposals, text_hash

COFFEE = {"description": "likes black coffee", "type": "preference", "body": "No sugar."}


def _put_fact(client, name, **overrides):
    return client.put(f"/api/memory/user/facts/{name}", data={**COFFEE, **overrides}, format="json")


# --- §1 ---------------------------------------------------------------------------------


# --- §2 ---------------------------------------------------------------------------------


# --- §3 ---------------------------------------------------------------------------------


# --- §5 memory_save -----------------------------------------------------------------------


def test_it_appends_memory_save_lines_under_a_heading_created_once(
    owner_client, master, workspace, settings
):
    today = dt.datetime.now(ZoneInfo(settings.MEMORY_TIME_ZONE)).date().isoformat()
    assert call_tool(owner_client, "memory_save", text="first").status_code == 200
    assert call_tool(owner_client, "memory_save", text="second\nline\r\nthree").status_code == 200
    text = (workspace / f"memory/{today}.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == f"# {today}"
    assert text.count(f"# {today}") == 1
    body = [line for line in lines if line.startswith("- ")]
    assert len(body) == 2
    assert re.fullmatch(r"- \d\d:\d\d first", body[0])
    assert re.fullmatch(r"- \d\d:\d\d second line three", body[1])
    assert text.endswith("\n")


@pytest.mark.parametrize("text", ["", "   ", "\n\n", " \r\n\t "])
def test_it_refuses_empty_memory_save_text(owner_client, master, workspace, text):
    response = call_tool(owner_client, "memory_save", text=text)
    assert response.status_code == 422
    assert not list((workspace / "memory").glob("*.md"))


def test_it_writes_memory_save_in_the_owner_time_zone(owner_client, master, workspace, settings):
    # Pick a zone whose calendar day differs from UTC's right now, so "today" is testable.
    now = dt.datetime.now(dt.UTC)
    zone = next(
        z
        for z in (
            "Pacific/Pago_Pago",
            "Pacific/Kiritimati",
            "Asia/Ho_Chi_Minh",
            "America/Los_Angeles",
        )
        if now.astimezone(ZoneInfo(z)).date() != now.date()
    )
    settings.MEMORY_TIME_ZONE = zone
    local = dt.datetime.now(ZoneInfo(zone))
    assert call_tool(owner_client, "memory_save", text="tz probe").status_code == 200
    note = workspace / f"memory/{local.date().isoformat()}.md"
    assert note.exists(), sorted(p.name for p in (workspace / "memory").iterdir())
    line = [x for x in note.read_text(encoding="utf-8").splitlines() if x.endswith("tz probe")][0]
    hour = int(line[2:4])
    assert hour in (local.hour, (local.hour + 1) % 24)


# --- §5 memory_get ------------------------------------------------------------------------


def test_it_reads_at_most_120_lines_and_hints_the_next_from_line(owner_client, master, workspace):
    (workspace / "MEMORY.md").write_text(
        "".join(f"line {i}\n" for i in range(1, 301)), encoding="utf-8"
    )
    result = call_tool(owner_client, "memory_get", path="MEMORY.md").json()["result"]
    assert "line 120\n" in result
    assert "line 121\n" not in result and not result.rstrip().endswith("line 121")
    assert "from_line" in result and "121" in result.split("line 120", 1)[1]


def test_it_reads_at_most_12000_characters_and_hints_the_next_from_line(
    owner_client, master, workspace
):
    (workspace / "MEMORY.md").write_text(
        "".join(f"{i:04d}" + "x" * 995 + "\n" for i in range(1, 31)), encoding="utf-8"
    )
    result = call_tool(owner_client, "memory_get", path="MEMORY.md").json()["result"]
    shown = [line for line in result.splitlines() if re.match(r"\d{4}x", line)]
    assert sum(len(line) + 1 for line in shown) <= 12000
    assert 0 < len(shown) < 30
    nxt = len(shown) + 1
    assert "from_line" in result and str(nxt) in result.split(shown[-1], 1)[1]
    # Exactly: 23 lines of 501 characters are 11,523; a 24th would pass 12,000.
    lines = [f"{n:03d}" + "x" * 497 + "\n" for n in range(1, 51)]
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory/wide.md").write_text("".join(lines), encoding="utf-8")
    assert call_tool(owner_client, "memory_get", path="memory/wide.md").json()["result"] == (
        "".join(lines[:23]) + "[… more: call memory_get with from_line=24]"
    )


def test_it_reads_everything_asked_with_lines(owner_client, master, workspace):
    (workspace / "MEMORY.md").write_text(
        "".join(f"line {i}\n" for i in range(1, 301)), encoding="utf-8"
    )
    result = call_tool(
        owner_client, "memory_get", path="MEMORY.md", from_line=150, lines=100
    ).json()["result"]
    assert "line 150\n" in result and "line 249" in result and "line 250" not in result
    assert "line 149\n" not in result


@pytest.mark.parametrize(
    "path",
    [
        "../outside.md",
        "/etc/passwd",
        "USER.md",
        "users/owner/USER.md",
        "users/owner/facts/INDEX.md.txt",
        "memory/notes.txt",
        "agents/helper/MEMORY.md",
        "memory/../../outside.md",
        "memory/link.md",
    ],
)
def test_it_refuses_memory_get_outside_memory_files(
    owner_client, master, helper_agent, workspace, tmp_path, path
):
    (tmp_path / "outside.md").write_text("secret outside\n", encoding="utf-8")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory/link.md").symlink_to(tmp_path / "outside.md")
    (workspace / "memory/notes.txt").write_text("txt secret\n", encoding="utf-8")
    (workspace / "agents/helper/MEMORY.md").write_text("helper secret\n", encoding="utf-8")
    response = call_tool(owner_client, "memory_get", path=path)
    text = response.content.decode()
    assert "secret" not in text and "root:" not in text
    assert response.status_code in (200, 403, 404, 422)


def test_it_reads_a_shared_fact_by_the_path_search_shows(owner_client, master, workspace):
    _put_fact(owner_client, "coffee")
    result = call_tool(owner_client, "memory_get", path="users/owner/facts/coffee.md").json()[
        "result"
    ]
    assert "No sugar." in result


# --- test_line_numbers.py --------------------
# SPEC §5/§6.1: memory_get reads "by the path memory_search shows" — the `[path:line]`
# of a search hit must lead memory_get to that same line; memory_save folds newlines.


@pytest.mark.parametrize(
    "separator",
    ["\u2028", "\x0c", "\x85", "\t"],
)
def test_it_reads_with_memory_get_the_line_memory_search_shows(
    owner_client, master, workspace, separator
):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory/2026-01-01.md").write_text(
        f"- alpha{separator}beta\n- second line\n- xi target here\n", encoding="utf-8"
    )
    hit = tool_text(owner_client, "memory_search", query="target")
    assert hit == "[memory/2026-01-01.md:3] (2026-01-01 Thu) - xi target here"
    got = tool_text(owner_client, "memory_get", path="memory/2026-01-01.md", from_line=3, lines=1)
    assert got.splitlines()[0] == "- xi target here"


def test_memory_get_reads_the_lines_of_a_block_hit(owner_client, master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory/notes.md").write_text(
        "# Plumbing\n\nThe plumber came for the sink.\nHe charged 40 dollars.\n\nother\n",
        encoding="utf-8",
    )
    hit = tool_text(owner_client, "memory_search", query="plumber charged")
    assert hit == (
        "[memory/notes.md:L3-L4] (# Plumbing) The plumber came for the sink. He charged 40 dollars."
    )
    got = tool_text(owner_client, "memory_get", path="memory/notes.md", from_line=3, lines=2)
    assert got == "The plumber came for the sink.\nHe charged 40 dollars.\n"


def test_it_folds_unicode_line_breaks_in_memory_save(owner_client, master, workspace, settings):
    import datetime as dt
    from zoneinfo import ZoneInfo

    today = dt.datetime.now(ZoneInfo(settings.MEMORY_TIME_ZONE)).date()
    tool_text(owner_client, "memory_save", text="one\u2028two\u2029three\x85four")
    text = (workspace / f"memory/{today}.md").read_text(encoding="utf-8")
    line = text.rstrip("\n").split("\n")[-1]
    assert line.endswith("one two three four")


# --- test_note_edit_then_save.py --------------------
# SPEC §5 (memory_save appends `- HH:MM <text>` as a line) after the owner edited today's
# note on the management pages (§15): a browser's textarea sends no final newline, and the
# next saved line must still be a line of its own.


def test_it_keeps_a_saved_line_separate_after_a_page_edit(
    owner_client, alice, master, workspace, owner_today
):
    today = owner_today
    (workspace / "memory").mkdir(exist_ok=True)
    path = workspace / f"memory/{today}.md"
    path.write_text(f"# {today}\n\n- 01:00 a\n", encoding="utf-8")
    client = Client()
    client.force_login(alice)
    edited = client.post(
        f"/manage/memory/agents/master/notes/{today}/",
        {"body": f"# {today}\r\n\r\n- 01:00 a edited", "base_hash": text_hash(path.read_text())},
    )
    assert edited.status_code == 302
    owner_client.post(
        "/api/agents/master/tools/memory_save",
        data={"text": "after edit"},
        format="json",
    )
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[2] == "- 01:00 a edited"
    assert re.fullmatch(r"- \d\d:\d\d after edit", lines[3])


# --- test_presence_api.py --------------------
# Presence comes from the caller, never the model (SPEC §5, §16), over REST and the
# `memory_token` command: job tokens, the X-Memory-Source header, and `source` refused among
# tool arguments.


TEA_FACT = {"description": "likes green tea", "type": "preference", "body": "Sencha."}


def client_for(key: str, **headers) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}", **headers)
    return client


@pytest.fixture
def job_client(master) -> APIClient:
    return client_for(memory_token("agent", "master", "--job", "nightly"))


def test_memory_token_issues_a_job_token_and_prints_only_its_key(
    master, helper_agent, owner_client, workspace, capsys
):
    call_command("memory_token", "agent", "master", "--job", "nightly-42")
    key = capsys.readouterr().out.strip()
    assert re.fullmatch(r"[0-9a-f]{48}", key)
    # A token of master (and of no other agent) whose every write is job:nightly-42's.
    job = client_for(key)
    assert job.get("/api/agents/master/memory").status_code == 200
    assert job.get("/api/agents/helper/memory").status_code == 403
    response = job.put("/api/memory/user/facts/tea", {**TEA_FACT, "source": "chat"}, format="json")
    assert response.status_code == 202, response.content
    assert [(row["source"], row["kind"]) for row in proposals(owner_client)] == [
        ("job:nightly-42", "user_fact")
    ]


@pytest.mark.parametrize("args", [["owner", "--job", "x"], ["agent", "master", "--job", "a b"]])
def test_memory_token_refuses_a_job_for_the_owner_or_a_bad_job_id(master, args):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("memory_token", *args)


@pytest.mark.parametrize("said", [{}, {"source": "chat"}, {"source": "telegram"}])
def test_a_job_tokens_tool_write_is_a_proposal_whatever_is_said(
    master, owner_client, workspace, said
):
    key = memory_token("agent", "master", "--job", "nightly")
    job = client_for(key, HTTP_X_MEMORY_SOURCE="chat")
    response = job.put("/api/memory/user/facts/tea", {**TEA_FACT, **said}, format="json")
    assert response.status_code == 202, response.content
    assert [row["source"] for row in proposals(owner_client)] == ["job:nightly"]
    assert not (workspace / "users/owner/facts/tea.md").exists()


def test_a_job_tokens_memory_md_rewrite_and_lines_are_proposals(
    job_client, owner_client, workspace
):
    (workspace / "MEMORY.md").write_text("- old\n")
    put = job_client.put("/api/agents/master/memory", {"body": "- new\n"}, format="json")
    lines = job_client.post("/api/agents/master/memory/lines", {"lines": ["x"]}, format="json")
    assert (put.status_code, lines.status_code) == (202, 202)
    assert (workspace / "MEMORY.md").read_text() == "- old\n"
    kinds = sorted(row["kind"] for row in proposals(owner_client))
    assert kinds == ["agent_memory", "memory_rewrite"]


def test_a_job_token_may_not_rewrite_user_md(job_client, workspace):
    response = job_client.put("/api/memory/user", {"body": "x", "source": "web"}, format="json")
    assert response.status_code == 403
    assert not (workspace / "users/owner/USER.md").exists()


def test_an_interactive_token_names_its_channel_in_a_header(master, workspace):
    key = memory_token("agent", "master")
    client = client_for(key, HTTP_X_MEMORY_SOURCE="telegram")
    response = client.post(
        "/api/agents/master/tools/user_memory_save", {"name": "tea", **TEA_FACT}, format="json"
    )
    assert response.status_code == 200
    assert "source: telegram" in (workspace / "users/owner/facts/tea.md").read_text()


def test_a_job_statement_in_the_header_makes_an_interactive_write_a_proposal(
    master, owner_client, workspace
):
    key = memory_token("agent", "master")
    client = client_for(key, HTTP_X_MEMORY_SOURCE="job:resumed")
    response = client.put(
        "/api/memory/user/facts/tea", {**TEA_FACT, "source": "chat"}, format="json"
    )
    assert response.status_code == 202
    assert [row["source"] for row in proposals(owner_client)] == ["job:resumed"]


@pytest.mark.parametrize("header", ["", "a person", "job:", "Chat"])
def test_a_bad_source_header_is_422_and_writes_nothing(master, workspace, header):
    key = memory_token("agent", "master")
    client = client_for(key, HTTP_X_MEMORY_SOURCE=header)
    response = client.post("/api/agents/master/tools/memory_save", {"text": "x"}, format="json")
    assert response.status_code == 422
    assert not list((workspace / "memory").glob("*.md"))


def test_source_among_tool_arguments_is_refused_for_every_tool(master_client, workspace):
    tools = master_client.get("/api/agents/master/tools").json()
    for tool in tools:
        response = master_client.post(
            f"/api/agents/master/tools/{tool['name']}", {"source": "chat"}, format="json"
        )
        assert response.status_code == 422, tool["name"]
        assert "`source` is not a tool argument" in response.json()["detail"]
    assert not list((workspace / "memory").glob("*.md"))


def test_the_owner_keeps_stating_source_in_the_body(owner_client, workspace):
    response = owner_client.put(
        "/api/memory/user/facts/tea", {**TEA_FACT, "source": "web"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["source"] == "web"


# --- test_presence_rest.py --------------------
# End to end over REST (SPEC §5, §14.1): a job's write answers 202 with a proposal and
# writes nothing; the owner approves it through the proposals API and then it is written.


FACT = "users/owner/facts/coffee.md"


def _read(workspace, path: str) -> str | None:
    file = workspace / path
    return file.read_text(encoding="utf-8") if file.exists() else None


def owner_fact(owner_client, workspace) -> str:
    """The fact `coffee` as the owner wrote it, on disk now; returns the file's text."""
    response = owner_client.put(
        "/api/memory/user/facts/coffee",
        {"description": "Likes black coffee", "type": "preference", "body": "No sugar.",
         "source": "web"},
        format="json",
    )  # fmt: skip
    assert response.status_code == 201, response.content
    return _read(workspace, FACT)


def _decide(client, proposal_id: int, approve: bool):
    return client.post(f"/api/memory/proposals/{proposal_id}", {"approve": approve}, format="json")


def test_it_turns_a_jobs_fact_put_into_a_proposal_then_writes_it_on_approve(
    owner_client, master_client, workspace
):
    response = master_client.put(
        "/api/memory/user/facts/coffee",
        {
            "description": "Likes black coffee",
            "type": "preference",
            "body": "No sugar.",
            "source": "job:nightly",
        },
        format="json",
    )

    assert response.status_code == 202, response.content
    proposal = response.json()["proposal"]
    assert proposal["kind"] == "user_fact"
    assert proposal["status"] == "pending"
    assert _read(workspace, FACT) is None
    approved = _decide(owner_client, proposal["id"], True)
    assert approved.status_code == 200
    assert _read(workspace, FACT) == proposal["payload"]["writes"][FACT]
    assert "source: job:nightly" in _read(workspace, FACT)
    assert _decide(owner_client, proposal["id"], True).status_code == 409


def test_it_turns_a_jobs_forget_into_a_proposal_and_keeps_the_fact_on_reject(
    owner_client, master_client, workspace
):
    before = owner_fact(owner_client, workspace)

    response = master_client.delete("/api/memory/user/facts/coffee?source=job:hygiene")

    assert response.status_code == 202, response.content
    proposal = response.json()["proposal"]
    assert proposal["kind"] == "user_fact_forget"
    assert proposal["previous_body"] == before
    assert _read(workspace, FACT) == before
    assert _decide(owner_client, proposal["id"], False).status_code == 200
    assert _read(workspace, FACT) == before
    assert _decide(owner_client, proposal["id"], True).status_code == 409


def test_it_turns_a_jobs_memory_lines_into_a_proposal_then_appends_on_approve(
    owner_client, helper_client, helper_agent, workspace
):
    (workspace / "agents/helper/MEMORY.md").write_text("# Memory\n", encoding="utf-8")

    response = helper_client.post(
        "/api/agents/helper/memory/lines",
        {"lines": ["Standup is at 09:30"], "source": "job:weekly"},
        format="json",
    )

    assert response.status_code == 202, response.content
    proposal = response.json()["proposal"]
    assert proposal["kind"] == "agent_memory"
    assert proposal["agent"] == "helper"
    assert _read(workspace, "agents/helper/MEMORY.md") == "# Memory\n"
    assert _decide(owner_client, proposal["id"], True).status_code == 200
    assert _read(workspace, "agents/helper/MEMORY.md") == "# Memory\nStandup is at 09:30\n"
    undone = owner_client.post(f"/api/memory/proposals/{proposal['id']}/undo")
    assert undone.status_code == 200
    assert _read(workspace, "agents/helper/MEMORY.md") == "# Memory\n"


def test_it_counts_pending_proposals_in_stats(owner_client, master_client):
    master_client.put(
        "/api/memory/user/facts/coffee",
        {"description": "d", "type": "preference", "body": "", "source": "job:1"},
        format="json",
    )

    assert owner_client.get("/api/stats").json()["pending_proposals"] == 1


# The live server's listen backlog is small (socketserver's request_queue_size): more
# simultaneous connects than that are reset by the kernel, which would test the harness.
THREADS = 8


def test_it_loses_no_memory_save_line_under_concurrent_http_calls(
    live_server, live_owner_key, workspace, settings
):
    headers = {"Authorization": f"Token {live_owner_key}"}
    url = f"{live_server.url}/api/agents/master/tools/memory_save"
    calls = [
        (lambda i: (lambda c: c.post(url, json={"text": f"entry {i}"}, headers=headers)))(i)
        for i in range(THREADS * 2)
    ]
    answers = all_at_once(calls[:THREADS]) + all_at_once(calls[THREADS:])
    assert all(r.status_code == 200 for r in answers), [r.status_code for r in answers]
    today = dt.datetime.now(ZoneInfo(settings.MEMORY_TIME_ZONE)).date()
    text = (workspace / f"memory/{today}.md").read_text(encoding="utf-8")
    assert text.count(f"# {today}") == 1
    assert sorted(
        int(line.rsplit(" ", 1)[1]) for line in text.splitlines() if " entry " in line
    ) == list(range(THREADS * 2))


def _today(settings):
    return dt.datetime.now(ZoneInfo(settings.MEMORY_TIME_ZONE)).date()


def test_it_appends_memory_save_on_a_new_line_after_a_hand_written_note(
    owner_client, master, workspace, settings
):
    today = _today(settings)
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / f"memory/{today}.md").write_text(f"# {today}\n\nhand text", encoding="utf-8")
    response = owner_client.post(
        "/api/agents/master/tools/memory_save",
        data={"text": "saved"},
        format="json",
    )
    assert response.status_code == 200
    lines = (workspace / f"memory/{today}.md").read_text(encoding="utf-8").splitlines()
    assert lines[:3] == [f"# {today}", "", "hand text"]
    assert lines[3].endswith(" saved") and lines[3].startswith("- ")
    assert sum(1 for line in lines if line.startswith("# ")) == 1


def test_it_appends_present_memory_lines_on_a_new_line(owner_client, master, workspace):
    (workspace / "MEMORY.md").write_bytes(b"# Memory\n- last line without newline")
    response = owner_client.post(
        "/api/agents/master/memory/lines",
        data={"lines": ["- added"], "source": "web"},
        format="json",
    )
    assert response.status_code == 200
    text = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert text.startswith("# Memory\n- last line without newline\n")
    assert "- added" in text.splitlines()


def test_an_agent_adds_durable_lines_when_a_person_is_present(
    helper_client, owner_client, workspace
):
    response = helper_client.post(
        "/api/agents/helper/memory/lines",
        {"lines": ["- Bác sĩ: BS Lan (2026-11-30)"], "source": "telegram"},
        format="json",
    )
    assert response.status_code == 200
    assert response.json() == {"body": "- Bác sĩ: BS Lan (2026-11-30)\n"}
    assert (workspace / "agents/helper/MEMORY.md").read_text() == "- Bác sĩ: BS Lan (2026-11-30)\n"
    assert proposals(owner_client) == []


def test_a_job_proposes_durable_lines_instead(helper_client, owner_client, workspace):
    (workspace / "agents/helper/MEMORY.md").write_text("- old\n")
    response = helper_client.post(
        "/api/agents/helper/memory/lines",
        {"lines": ["- new line"], "source": "job:nightly"},
        format="json",
    )
    assert response.status_code == 202
    proposal = response.json()["proposal"]
    assert proposal["kind"] == "agent_memory"
    assert proposal["status"] == "pending"
    assert proposal["agent"] == "helper"
    assert proposal["target"] == "agents/helper/MEMORY.md"
    assert proposal["payload"]["lines"] == ["- new line"]
    assert proposal["previous_body"] == "- old\n"
    assert (workspace / "agents/helper/MEMORY.md").read_text() == "- old\n"
    [row] = proposals(owner_client)
    assert (row["kind"], row["source"], row["agent"]) == ("agent_memory", "job:nightly", "helper")


@pytest.mark.parametrize(
    "body",
    [
        {"lines": [], "source": "job:nightly"},
        {"lines": ["  "], "source": "job:nightly"},
        {"lines": ["ok"], "source": "job:"},
        {"lines": ["ok"], "source": "two words"},
        {"lines": "ok", "source": "web"},
    ],
)
def test_bad_lines_are_422_from_a_job_too(helper_client, owner_client, workspace, body):
    response = helper_client.post("/api/agents/helper/memory/lines", body, format="json")
    assert response.status_code == 422
    assert proposals(owner_client) == []
    assert (workspace / "agents/helper/MEMORY.md").read_text() == ""  # as created


def test_memory_save_over_rest_appends_to_todays_note(helper_client, workspace, owner_today):
    response = helper_client.post(
        "/api/agents/helper/memory/save",
        {"text": "Đo huyết áp\n128/82", "source": "telegram"},
        format="json",
    )
    assert response.status_code == 200
    day = owner_today.isoformat()
    body = response.json()
    assert (body["day"], body["name"]) == (day, f"{day}.md")
    assert body["line"].endswith(" Đo huyết áp 128/82")
    assert (workspace / f"agents/helper/memory/{day}.md").read_text(encoding="utf-8") == (
        f"# {day}\n\n{body['line']}\n"
    )


@pytest.mark.parametrize("body", [{"text": ""}, {"text": " \n "}, {}, {"text": "x", "source": ""}])
def test_memory_save_refuses_empty_text(helper_client, workspace, body):
    response = helper_client.post("/api/agents/helper/memory/save", body, format="json")
    assert response.status_code == 422
    assert list((workspace / "agents/helper/memory").iterdir()) == []


# --- §5 who writes at once, who proposes: the table of docs/tools.md, walked cell by cell

TOOLS_DOC = Path(__file__).resolve().parents[2] / "docs" / "tools.md"
CREDENTIALS = ("owner", "agent", "agent's job token")
OUTCOMES = {"writes at once", "proposes", "refused"}


def _write_table() -> dict[str, dict[str, str]]:
    """{write: {credential: outcome}} from the table under "Who writes at once"."""
    text = TOOLS_DOC.read_text(encoding="utf-8")
    section = text.split("## Who writes at once, who proposes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    assert header == ["write", *CREDENTIALS]
    table = {}
    for line in rows[1:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert set(cells[1:]) <= OUTCOMES, line
        table[cells[0]] = dict(zip(CREDENTIALS, cells[1:], strict=True))
    return table


def _page(n: int) -> dict:
    return {"title": f"Page {n}", "kind": "entity", "sources": ["note:2026-01-01"], "body": "x"}


def _fact(n: int) -> dict:
    return {"name": f"fact-{n}", **COFFEE}


# Each write of the table, done over REST by `client` (n: a number no other cell uses).
REST_WRITES = {
    "`memory_save`": lambda c, n: call_tool(c, "memory_save", text=f"ran {n} km"),
    "`user_memory_save`": lambda c, n: call_tool(c, "user_memory_save", **_fact(n)),
    "`user_memory_forget`": lambda c, n: call_tool(c, "user_memory_forget", name=f"gone-{n}"),
    "`wiki_apply`": lambda c, n: call_tool(c, "wiki_apply", **_page(n)),
    "`POST /api/agents/{id}/memory/save`": lambda c, n: c.post(
        "/api/agents/master/memory/save", {"text": f"walked {n} km"}, format="json"
    ),
    "`PUT /api/agents/{id}/memory/notes/{day}`": lambda c, n: c.put(
        f"/api/agents/master/memory/notes/2026-01-{n % 28 + 1:02d}-n{n}",
        {"body": f"# note {n}\n"},
        format="json",
    ),
    "`PUT /api/agents/{id}/memory/files/{path}`": lambda c, n: c.put(
        f"/api/agents/master/memory/files/memory/people/p{n}.md",
        {"body": f"# person {n}\n"},
        format="json",
    ),
    "`PUT /api/agents/{id}/memory`": lambda c, n: c.put(
        "/api/agents/master/memory", {"body": f"- likes tea\n- line {n}\n"}, format="json"
    ),
    "`POST /api/agents/{id}/memory/lines`": lambda c, n: c.post(
        "/api/agents/master/memory/lines", {"lines": [f"line {n}"]}, format="json"
    ),
    "`POST /api/agents/{id}/memory-tool` `str_replace` in MEMORY.md": lambda c, n: c.post(
        "/api/agents/master/memory-tool",
        {
            "command": "str_replace",
            "path": "/memories/MEMORY.md",
            "old_str": "likes tea",
            "new_str": f"likes tea {n}",
        },
        format="json",
    ),  # fmt: skip
    "`POST /api/agents/{id}/memory-tool` `create` below `memory/`": lambda c, n: c.post(
        "/api/agents/master/memory-tool",
        {"command": "create", "path": f"/memories/memory/kept-{n}.md", "file_text": "kept\n"},
        format="json",
    ),
    "`PUT /api/memory/user`": lambda c, n: c.put(
        "/api/memory/user", {"body": f"Owner {n}\n"}, format="json"
    ),
    "`PUT /api/memory/user/facts/{name}`": lambda c, n: _put_fact(c, f"fact-{n}"),
    "`DELETE /api/memory/user/facts/{name}`": lambda c, n: c.delete(
        f"/api/memory/user/facts/gone-{n}"
    ),
    "`PUT /api/agents/{id}/memory/wiki/pages/{slug}`": lambda c, n: c.put(
        f"/api/agents/master/memory/wiki/pages/page-{n}", {"body": f"edited {n}"}, format="json"
    ),
    "`DELETE /api/agents/{id}/memory/wiki/pages/{slug}`": lambda c, n: c.delete(
        f"/api/agents/master/memory/wiki/pages/page-{n}"
    ),
}
MCP_WRITES = {
    "`memory_save`": lambda n: ("memory_save", {"text": f"ran {n} km"}),
    "`user_memory_save`": lambda n: ("user_memory_save", _fact(n)),
    "`user_memory_forget`": lambda n: ("user_memory_forget", {"name": f"gone-{n}"}),
    "`wiki_apply`": lambda n: ("wiki_apply", _page(n)),
}


def _rest_outcome(response) -> str:
    if response.status_code == 202:
        return "proposes"
    if response.status_code == 403:
        return "refused"
    assert response.status_code in (200, 201, 204), (response.status_code, response.content)
    return "writes at once"


def _mcp_outcome(result) -> str:
    text = result.content[0].text
    if result.is_error:
        assert "may not" in text, text
        return "refused"
    return "proposes" if text.startswith("Proposed for review (proposal #") else "writes at once"


@pytest.mark.django_db(transaction=True)
def test_every_cell_of_the_write_table_holds_over_rest_and_mcp(master, workspace, token_client):
    table = _write_table()
    assert set(table) == set(REST_WRITES), "docs/tools.md and this test name the same writes"
    owner = token_client()
    clients = {
        "owner": owner,
        "agent": token_client("master"),
        "agent's job token": token_client("master", job="nightly"),
    }
    (workspace / "MEMORY.md").write_text("- likes tea\n", encoding="utf-8")
    cells = [(write, credential) for write in table for credential in CREDENTIALS]
    mcp_cells = [(write, c) for write in MCP_WRITES for c in CREDENTIALS if c != "owner"]
    numbers = range(len(cells) + len(mcp_cells))
    for n in numbers:  # what the forgetting and deleting cells remove
        assert _put_fact(owner, f"gone-{n}").status_code in (200, 201)
        assert call_tool(owner, "wiki_apply", **{**_page(n), "body": "before"}).status_code == 200
    for n, (write, credential) in enumerate(cells):
        pending = len(proposals(owner))
        outcome = _rest_outcome(REST_WRITES[write](clients[credential], n))
        assert outcome == table[write][credential], (write, credential, "REST")
        assert len(proposals(owner)) == pending + (outcome == "proposes"), (write, credential)
    answers = _over_mcp(workspace, mcp_cells, start=len(cells))
    for (write, credential), result in zip(mcp_cells, answers, strict=True):
        assert _mcp_outcome(result) == table[write][credential], (write, credential, "MCP")
    proposed = sum(
        table[write][credential] == "proposes" for write, credential in cells + mcp_cells
    )
    assert len(proposals(owner)) == proposed


def _over_mcp(workspace, cells, *, start: int) -> list:
    """Each (write, credential) cell called over MCP stdio (`manage.py mcp --agent master`,
    with `--job nightly` for the job token), in order."""
    import asyncio
    import concurrent.futures

    from mcp import Client, StdioServerParameters

    from tests.processes import test_database_url

    def params(*extra: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["manage.py", "mcp", "--agent", "master", *extra],
            cwd=str(TOOLS_DOC.parents[1]),
            env={**os.environ, "DATABASE_URL": test_database_url(),
                 "MY_AGENT_HOME": str(workspace)},
        )  # fmt: skip

    async def run() -> list:
        results = []
        sessions = {
            "agent": Client(params()),
            "agent's job token": Client(params("--job", "nightly")),
        }
        async with sessions["agent"] as agent, sessions["agent's job token"] as job:
            connected = {"agent": agent, "agent's job token": job}
            for n, (write, credential) in enumerate(cells, start=start):
                name, arguments = MCP_WRITES[write](n)
                results.append(await connected[credential].call_tool(name, arguments))
        return results

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run()).result()
