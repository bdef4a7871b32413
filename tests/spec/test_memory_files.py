"""Every Markdown file in memory/ can be found and managed (SPEC §3): a recursive
listing over the API and on the pages, and each file shown and edited with memory_get's
path rules. The workspace is a generated OpenClaw one (tests/openclaw_workspace.py)."""

from __future__ import annotations

import pytest
from django.test import Client

from memory import clock, workspace
from tests.openclaw_workspace import build


@pytest.fixture
def en(workspace, master):
    return build(workspace, "en", today=clock.today())


@pytest.fixture
def pages(alice, workspace) -> Client:
    client = Client()
    client.force_login(alice)
    return client


def test_the_listing_holds_every_markdown_file_recursively(en, owner_client):
    rows = owner_client.get("/api/agents/master/memory/files").json()
    by_path = {row["path"]: row for row in rows}
    assert rows[0]["path"] == "MEMORY.md" and rows[0]["kind"] == "memory"
    assert by_path["memory/projects.md"]["kind"] == "file"
    assert by_path["memory/people/dana.md"] == {
        **by_path["memory/people/dana.md"],
        "kind": "file",
        "day": None,
        "editable": True,
    }
    assert by_path["memory/2026-01-05_1030.md"]["kind"] == "note"
    assert by_path["memory/2026-01-05_1030.md"]["day"] == "2026-01-05"
    assert by_path["memory/2026-02-30.md"]["kind"] == "file"
    assert by_path["memory/wiki/entities/alpha.md"]["kind"] == "wiki"
    assert by_path["memory/wiki/entities/alpha.md"]["editable"] is False
    # Hidden files, symlinks and other file types are not memory files (as search skips them).
    assert "memory/.draft.md" not in by_path
    assert "memory/synced.md" not in by_path
    assert not any(path.endswith(".jpg") for path in by_path)
    # Every path listed reads with memory_get's rules (bytes that are not UTF-8 are the
    # hardening issue's, 10.6: left out here).
    for row in rows:
        if row["path"] in en.undecodable:
            continue
        got = owner_client.get(f"/api/agents/master/memory/files/{row['path']}")
        assert got.status_code == 200, (row["path"], got.content)


def test_a_hand_kept_file_is_read_and_replaced_by_its_path(en, owner_client):
    url = "/api/agents/master/memory/files/memory/people/dana.md"
    got = owner_client.get(url).json()
    assert got["body"] == "# Dana\n\nSister; birthday in May.\n"
    put = owner_client.put(
        url,
        {"body": "# Dana\n\nSister; birthday 12 May.\n", "base_hash": got["hash"]},
        format="json",
    )
    assert put.status_code == 200, put.content
    assert (en.root / "memory/people/dana.md").read_text() == "# Dana\n\nSister; birthday 12 May.\n"
    stale = owner_client.put(url, {"body": "x\n", "base_hash": got["hash"]}, format="json")
    assert stale.status_code == 409


@pytest.mark.parametrize(
    "path",
    [
        "memory/wiki/entities/alpha.md",
        "memory/../USER.md",
        "memory/.draft.md",
        "memory/synced.md",
        "memory/photo.jpg",
        "AGENTS.md",
        "agents/research/MEMORY.md",
        "MEMORY.md",
    ],
)
def test_what_may_not_be_replaced_is_refused_and_left_as_it_is(en, owner_client, path):
    before = {p: (en.root / p).read_bytes() for p in en.files}
    response = owner_client.put(
        f"/api/agents/master/memory/files/{path}", {"body": "pwned\n"}, format="json"
    )
    assert response.status_code == 422, (path, response.content)
    assert {p: (en.root / p).read_bytes() for p in en.files} == before


def test_another_agents_token_is_403(en, helper_client):
    assert helper_client.get("/api/agents/master/memory/files").status_code == 403


def test_the_pages_list_and_edit_the_files(en, pages):
    listing = pages.get("/manage/memory/agents/master/files/")
    assert listing.status_code == 200
    html = listing.content.decode()
    for path in (
        "memory/projects.md",
        "memory/people/dana.md",
        "memory/wiki/sources/alpha-notes.md",
    ):
        assert f"<code>{path}</code>" in html
    page = pages.get("/manage/memory/agents/master/files/memory/projects.md")
    assert page.status_code == 200
    assert "Garden shed" in page.content.decode()
    text, text_hash = workspace.read_with_hash("memory/projects.md")
    saved = pages.post(
        "/manage/memory/agents/master/files/memory/projects.md",
        {"body": "# Projects\r\n\r\n- Garden shed (summer)\r\n", "base_hash": text_hash},
    )
    assert saved.status_code == 302
    assert (en.root / "memory/projects.md").read_text() == "# Projects\n\n- Garden shed (summer)\n"
    wiki = pages.get("/manage/memory/agents/master/files/memory/wiki/entities/alpha.md")
    assert wiki.status_code == 200 and "<textarea" not in wiki.content.decode()
    before = (en.root / "memory/wiki/entities/alpha.md").read_bytes()
    pages.post("/manage/memory/agents/master/files/memory/wiki/entities/alpha.md", {"body": "x"})
    assert (en.root / "memory/wiki/entities/alpha.md").read_bytes() == before
    assert pages.get("/manage/memory/agents/master/files/memory/synced.md").status_code == 404


def test_the_memory_tab_edits_the_root_user_md_and_names_it(en, pages):
    html = pages.get("/manage/memory/").content.decode()
    assert '<h1>USER.md <span class="muted"><code>USER.md</code></span></h1>' in html
    assert "Sam Rivera" in html
    _, user_hash = workspace.read_with_hash("USER.md")
    saved = pages.post("/manage/memory/user/", {"body": "- Name: Sam R.\n", "base_hash": user_hash})
    assert saved.status_code == 302
    assert (en.root / "USER.md").read_text() == "- Name: Sam R.\n"
    assert not (en.root / "users/owner/USER.md").exists()
