"""GETs never write (SPEC §1): every GET of the API, the management pages,
the admin, and every MCP read (resources, read-only tools) leaves the workspace exactly as
it was — the same paths, bytes, modes and modification times, and no lock file or folder
created. The workspace is one a person wrote by hand and the app never initialised: a
hand-written wiki vault without machine blocks, CRLF and BOM files, a note with a byte
that is not UTF-8, a hand-kept file in an NFD name, no `.memory-locks/`."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from django.test import Client

from memory.mcp.server import call_tool_now, read_resource_now
from memory.models import ApiToken
from memory.presence import Caller


def snapshot(home: Path) -> dict[str, tuple]:
    """Every entry below the home (folders too), with its bytes, mode and mtime."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(home):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = os.lstat(path)
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            found[str(path.relative_to(home))] = (st.st_mode, st.st_mtime_ns, data)
    found["."] = (os.lstat(home).st_mode, os.lstat(home).st_mtime_ns, b"")
    return found


HAND_PAGE = """---
title: Hạn Eco
kind: entity
sources: [note:2026-11-29]
status: ok
updated: 2026-11-29
---

Hạn links to [[Minh]] and [[Nowhere]].
"""

MINH_PAGE = """---
title: Minh
kind: entity
sources: [note:2026-11-29]
updated: 2026-01-01
questions: [Who is Minh?]
---

The owner.
"""


@pytest.fixture
def hand_written(workspace, master, helper_agent):
    """A workspace as a person left it (written with plain file calls, never the app)."""
    from memory.clock import today as owner_today

    today = owner_today()
    (workspace / "users/owner/facts").mkdir(parents=True, exist_ok=True)
    (workspace / "users/owner/USER.md").write_bytes(b"\xef\xbb\xbfI am Minh.\r\nHi.\r\n")
    (workspace / "users/owner/facts/coffee.md").write_text(
        "---\nname: coffee\ndescription: likes coffee\ntype: preference\nwritten_by: owner\n"
        "source: web\nupdated: 2026-11-01\n---\n\nBlack.\n"
    )
    (workspace / "users/owner/facts/INDEX.md").write_text(
        "- [coffee](coffee.md) (preference) — likes coffee\n"
    )
    (workspace / "MEMORY.md").write_bytes(b"- durable\r\n")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / f"{today.isoformat()}.md").write_bytes(
        f"# {today.isoformat()}\n\n- 08:00 caf\xe9 latin-1\n".encode("latin-1")
    )
    (workspace / "memory/2026-11-29.md").write_text("# 2026-11-29\n\n- 09:00 Minh\n")
    (workspace / "memory" / unicodedata.normalize("NFD", "sách-đang-đọc.md")).write_text("- Dune\n")
    (workspace / "memory/wiki/entities").mkdir(parents=True)
    (workspace / "memory/wiki/entities/han-eco.md").write_text(HAND_PAGE)
    (workspace / "memory/wiki/entities/minh.md").write_text(MINH_PAGE)
    (workspace / "agents/helper/memory").mkdir(parents=True, exist_ok=True)
    (workspace / "agents/helper/memory/2026-11-29.md").write_text("# 2026-11-29\n\n- helped\n")
    for path in workspace.rglob("*"):
        if path.is_file():
            os.chmod(path, 0o644)
    return workspace


API_GETS = [
    "/api/schema/",
    "/api/agents",
    "/api/agents/master",
    "/api/memory/user",
    "/api/memory/user/facts/coffee",
    "/api/memory/search?q=minh",
    "/api/memory/search?q=dune&agent_id=master",
    "/api/memory/proposals",
    "/api/memory/proposals?status=all",
    "/api/agents/master/memory",
    "/api/agents/master/memory/notes",
    "/api/agents/master/memory/notes?all=1",
    "/api/agents/master/memory/notes/2026-11-29",
    "/api/agents/master/memory/notes/{today}",
    "/api/agents/master/memory/context",
    "/api/agents/master/tools",
    "/api/agents/master/script-store",
    "/api/agents/master/memory/wiki",
    "/api/agents/master/memory/wiki?q=minh",
    "/api/agents/master/memory/wiki/pages/han-eco",
    "/api/agents/master/memory/wiki/report",
    "/api/agents/helper/memory/wiki/report",
    "/api/runs",
    "/api/stats",
    "/healthz",
]

PAGE_GETS = [
    "/manage/memory/",
    "/manage/memory/facts/coffee/",
    "/manage/memory/agents/master/memory/",
    "/manage/memory/agents/master/notes/2026-11-29/",
    "/manage/memory/agents/master/notes/{today}/",
    "/manage/memory/agents/helper/memory/",
    "/manage/memory/search/?q=minh",
    "/manage/memory/agent/",
    "/manage/memory/agents/master/",
    "/manage/memory/proposals/",
    "/manage/memory/activity/",
    "/manage/memory/scripts/master",
    "/manage/memory/wiki/",
    "/manage/memory/wiki/master/",
    "/manage/memory/wiki/master/?q=minh",
    "/manage/memory/wiki/helper/",
    "/manage/memory/wiki/master/pages/han-eco/",
    "/manage/memory/wiki/master/pages/han-eco/edit/",
    "/manage/memory/wiki/master/new/",
    "/admin/",
    "/admin/memory/agent/",
    "/admin/memory/agent/master/change/",
    "/admin/proposals/proposal/",
]


def _today() -> str:
    from memory.clock import today

    return today().isoformat()


def test_no_api_get_writes_to_the_workspace(hand_written, owner_client):
    before = snapshot(hand_written)
    for url in API_GETS:
        response = owner_client.get(url.format(today=_today()))
        # /healthz is 503 here: no worker has beaten in a test.
        assert response.status_code < 500 or url == "/healthz", (url, response.status_code)
        assert snapshot(hand_written) == before, url


def test_no_api_get_of_an_agent_token_writes(hand_written, master_client):
    before = snapshot(hand_written)
    for url in API_GETS:
        master_client.get(url.format(today=_today()))
        assert snapshot(hand_written) == before, url


def test_no_page_or_admin_get_writes_to_the_workspace(hand_written, alice):
    client = Client()
    client.force_login(alice)
    before = snapshot(hand_written)
    for url in PAGE_GETS:
        response = client.get(url.format(today=_today()))
        assert response.status_code < 500, (url, response.status_code)
        assert snapshot(hand_written) == before, url


def test_the_wiki_report_is_computed_without_writing(hand_written, owner_client):
    report = owner_client.get("/api/agents/master/memory/wiki/report").json()
    assert report["pages"] == 2
    assert {issue["kind"] for issue in report["issues"]} >= {"dangling", "stale"}
    assert report["open_questions"] == [
        {"slug": "minh", "title": "Minh", "question": "Who is Minh?"}
    ]
    # Nothing was created: neither the reports nor machine blocks in the pages.
    assert not (hand_written / "memory/wiki/reports").exists()
    assert (hand_written / "memory/wiki/entities/han-eco.md").read_text() == HAND_PAGE


def test_no_mcp_read_writes_to_the_workspace(hand_written, master):
    ApiToken.issue(agent=master)
    caller = Caller(agent_id="master")
    before = snapshot(hand_written)
    nfc = unicodedata.normalize("NFC", "sách-đang-đọc.md")
    for name, arguments in [
        ("memory_search", {"query": "minh"}),
        ("memory_get", {"path": "MEMORY.md"}),
        ("memory_get", {"path": "memory/2026-11-29.md"}),
        ("memory_get", {"path": f"memory/{nfc}"}),
        ("memory_get", {"path": "users/owner/facts/coffee.md"}),
        ("wiki_get", {"title": "Hạn Eco"}),
        ("wiki_search", {"query": "minh"}),
    ]:
        result = call_tool_now(caller, name, arguments)
        assert not result.is_error, (name, result.content[0].text)
        assert snapshot(hand_written) == before, name
    for uri in [
        "memory://user/USER.md",
        "memory://user/facts/INDEX.md",
        "memory://user/facts/coffee.md",
        "memory://agents/master/MEMORY.md",
        "memory://agents/master/memory/2026-11-29.md",
    ]:
        read_resource_now(caller, uri)
        assert snapshot(hand_written) == before, uri
