"""Existing workspaces as people keep them (issue 12, items 3, 4 and 12): symbolic links
never stop the server, names macOS wrote in NFD are one name with their NFC spelling on
every path-taking input, and line endings and byte-order marks are kept on disk while the
prompt reads plain text."""

from __future__ import annotations

import io
import os
import unicodedata

import pytest
from django.core.management import call_command
from django.test import Client

from memory import tools
from memory.mcp.server import call_tool_now, read_resource_now
from memory.presence import Caller

NFC = unicodedata.normalize("NFC", "sách-đang-đọc.md")
NFD = unicodedata.normalize("NFD", "sách-đang-đọc.md")


# --- item 3: symbolic links never stop the server ---------------------------------------------


@pytest.fixture
def linked(workspace, master, helper_agent, tmp_path):
    """helper's memory/ is a link to a synced folder outside the home; master's MEMORY.md
    is a link too."""
    synced = tmp_path / "Dropbox" / "notes"
    synced.mkdir(parents=True)
    (synced / "2026-11-30.md").write_text("# 2026-11-30\n\n- synced\n")
    helper_memory = workspace / "agents/helper/memory"
    for child in helper_memory.iterdir():
        child.unlink()
    helper_memory.rmdir()
    helper_memory.symlink_to(synced, target_is_directory=True)
    real_memory = tmp_path / "Dropbox" / "MEMORY.md"
    real_memory.write_text("- kept elsewhere\n")
    (workspace / "MEMORY.md").unlink(missing_ok=True)
    (workspace / "MEMORY.md").symlink_to(real_memory)
    return synced


def test_start_up_completes_and_names_the_unusable_agent_dirs(linked, workspace, capsys):
    call_command("memory_init")
    err = capsys.readouterr().err
    assert "agent helper cannot be used: agents/helper/memory is a symbolic link" in err
    assert "agent master cannot be used: MEMORY.md is a symbolic link" in err
    assert str(linked) in err  # where it points
    # Nothing was created beside the links, and what they point at is untouched.
    assert os.listdir(linked) == ["2026-11-30.md"]
    assert (workspace / "MEMORY.md").is_symlink()


def test_the_pages_say_which_agent_cannot_be_used(linked, alice):
    pages = Client()
    pages.force_login(alice)
    home = pages.get("/manage/memory/")
    assert home.status_code == 200
    text = home.content.decode()
    assert "Agent helper cannot be used" in text and "is a symbolic link" in text
    memory = pages.get("/manage/memory/agents/helper/memory/")
    assert memory.status_code == 422
    assert "agents/helper/memory is a symbolic link" in memory.content.decode()


def test_the_files_of_an_unusable_dir_are_refused_with_a_clear_message(
    linked, owner_client, helper_client
):
    response = owner_client.get("/api/agents/helper/memory/notes")
    assert response.status_code == 422
    assert "agents/helper/memory is a symbolic link" in response.json()["detail"]
    saved = helper_client.post("/api/agents/helper/memory/save", {"text": "x"})
    assert saved.status_code == 422
    assert "links inside the workspace are not followed" in saved.json()["detail"]
    memory = owner_client.get("/api/agents/master/memory")
    assert memory.status_code == 422 and "MEMORY.md is a symbolic link" in memory.json()["detail"]
    # Everything else still works: stats, search, the master's context (without MEMORY.md).
    assert owner_client.get("/api/stats").status_code == 200
    assert owner_client.get("/api/memory/search?q=synced").status_code == 200
    context = owner_client.get("/api/agents/master/memory/context?conversation=c")
    assert context.status_code == 200 and "kept elsewhere" not in context.json()["system"]


# --- item 4: NFD names ------------------------------------------------------------------------


@pytest.fixture
def nfd_file(workspace, master):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / NFD).write_text("# Sách\n\n- Dune, đọc xong\n", encoding="utf-8")
    return workspace / "memory" / NFD


def test_search_returns_a_path_memory_get_reads(nfd_file, master):
    hits = tools.call_tool_result(master, "memory_search", {"query": "dune"}, source="chat")
    [hit] = hits.data["results"]
    for path in (hit["path"], unicodedata.normalize("NFD", hit["path"])):
        text = tools.call_tool(master, "memory_get", {"path": path}, source="chat")
        assert "Dune" in text, path
    assert unicodedata.normalize("NFC", hit["path"]) == f"memory/{NFC}"


@pytest.mark.parametrize("spelling", [NFC, NFD])
def test_either_spelling_reads_and_writes_the_one_file(nfd_file, master, workspace, spelling):
    caller = Caller(agent_id="master")
    got = call_tool_now(caller, "memory_get", {"path": f"memory/{spelling}"})
    assert not got.is_error and "Dune" in got.content[0].text
    resource = read_resource_now(caller, f"memory://agents/master/memory/{spelling}")
    assert "Dune" in resource
    edit = tools.call_tool_result(
        master,
        "memory_get",
        {"path": f"memory/{spelling}#L3"},
        source="chat",
    )
    assert edit.text == "- Dune, đọc xong\n"
    from memory import notes

    notes.write_memory_file(master, f"memory/{spelling}", "# Sách\n\n- Dune\n- Solaris\n")
    assert os.listdir(workspace / "memory") == [NFD]
    assert nfd_file.read_text() == "# Sách\n\n- Dune\n- Solaris\n"


def test_the_memory_tool_edits_an_nfd_file_by_its_nfc_name(nfd_file, master, owner_client):
    response = owner_client.post(
        "/api/agents/master/memory-tool",
        {
            "command": "str_replace",
            "path": f"/memories/memory/{NFC}",
            "old_str": "Dune, đọc xong",
            "new_str": "Dune (xong)",
        },
    )
    assert response.status_code == 200, response.content
    assert nfd_file.read_text() == "# Sách\n\n- Dune (xong)\n"


# --- item 12: line endings and BOM ----------------------------------------------------------------


def test_an_edit_of_a_crlf_file_stays_crlf(workspace, master, owner_client):
    (workspace / "MEMORY.md").write_bytes(b"- one\r\n- two\r\n")
    got = owner_client.get("/api/agents/master/memory").json()
    assert got["body"] == "- one\n- two\n"
    put = owner_client.put(
        "/api/agents/master/memory", {"body": "- one\n- two\n- three\n", "base_hash": got["hash"]}
    )
    assert put.status_code == 200
    assert (workspace / "MEMORY.md").read_bytes() == b"- one\r\n- two\r\n- three\r\n"
    # A browser's textarea sends CRLF whatever the file has: still one CRLF per line.
    owner_client.put("/api/agents/master/memory", {"body": "- a\r\n- b\r\n"})
    assert (workspace / "MEMORY.md").read_bytes() == b"- a\r\n- b\r\n"


def test_an_append_into_a_crlf_note_uses_crlf(workspace, master, owner_client):
    from memory.clock import today

    day = today().isoformat()
    (workspace / "memory").mkdir(exist_ok=True)
    note = workspace / "memory" / f"{day}.md"
    note.write_bytes(f"# {day}\r\n\r\n- 08:00 first\r\n".encode())
    saved = owner_client.post("/api/agents/master/memory/save", {"text": "second"}).json()
    owner_client.post("/api/agents/master/memory/lines", {"lines": ["durable"]})
    data = note.read_bytes()
    assert data == f"# {day}\r\n\r\n- 08:00 first\r\n{saved['line']}\r\n".encode()
    assert b"\n" not in data.replace(b"\r\n", b"")


def test_a_bom_is_kept_on_disk_and_never_reaches_the_prompt(workspace, master, owner_client):
    from memory.clock import today

    day = today().isoformat()
    (workspace / "users/owner").mkdir(parents=True, exist_ok=True)
    (workspace / "users/owner/USER.md").write_bytes(b"\xef\xbb\xbfI am Minh.\r\n")
    (workspace / "MEMORY.md").write_bytes(b"\xef\xbb\xbf- durable\n")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / f"{day}.md").write_bytes(
        f"\ufeff# {day}\r\n\r\n- 08:00 first\r\n".encode()
    )
    context = owner_client.get("/api/agents/master/memory/context?conversation=c1").json()
    for part in (context["system"], context["pre_turn"]):
        assert "\ufeff" not in part and "\r" not in part
    assert "## USER.md\nI am Minh." in context["system"]
    assert f"## memory/{day}.md\n```markdown\n# {day}\n\n- 08:00 first" in context["pre_turn"]
    owner_client.post("/api/agents/master/memory/save", {"text": "second"})
    later = owner_client.get("/api/agents/master/memory/context?conversation=c1").json()
    assert "\r" not in later["pre_turn"] and "second" in later["pre_turn"]
    # Rewrites keep the BOM.
    got = owner_client.get("/api/memory/user").json()
    owner_client.put("/api/memory/user", {"body": "I am Minh.\nHi.\n", "base_hash": got["hash"]})
    assert (workspace / "users/owner/USER.md").read_bytes() == b"\xef\xbb\xbfI am Minh.\r\nHi.\r\n"
    assert io.BytesIO((workspace / "MEMORY.md").read_bytes()).read(3) == b"\xef\xbb\xbf"


def test_a_wiki_page_in_an_nfd_file_is_found_and_edited_by_its_slug(
    workspace, master, owner_client
):
    page = (
        "---\ntitle: Hà Nội\nkind: entity\nsources: [note:2026-11-29]\nstatus: ok\n"
        "updated: 2026-11-29\n---\n\nThủ đô.\n"
    )
    folder = workspace / "memory/wiki/entities"
    folder.mkdir(parents=True)
    nfd = unicodedata.normalize("NFD", "hà-nội.md")
    (folder / nfd).write_text(page, encoding="utf-8")
    toc = owner_client.get("/api/agents/master/memory/wiki").json()["results"]
    assert [entry["title"] for entry in toc] == ["Hà Nội"]
    got = owner_client.get(f"/api/agents/master/memory/wiki/pages/{toc[0]['slug']}")
    assert got.status_code == 200 and "Thủ đô." in got.json()["body"]
    put = owner_client.put(
        f"/api/agents/master/memory/wiki/pages/{toc[0]['slug']}", {"body": "Thủ đô của Việt Nam.\n"}
    )
    assert put.status_code == 200, put.content
    assert os.listdir(folder) == [nfd]
    assert "Thủ đô của Việt Nam." in (folder / nfd).read_text(encoding="utf-8")
