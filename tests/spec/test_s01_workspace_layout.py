"""SPEC §1 Workspace layout: agent dirs are created with the agent; an existing workspace is
used as it is — symbolic links never stop the server, names macOS wrote in NFD are one name
with their NFC spelling on every path-taking input, line endings and byte-order marks are
kept on disk while the prompt reads plain text, `memory_doctor` reports OpenClaw shapes, and
nothing is written by reading (no GET of the API, the pages or the admin writes)."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import re
import unicodedata

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from tests.hand_written import HAND_PAGE, snapshot, write_hand_written
from tests.helpers import tool_text
from tests.openclaw_workspace import big_note, build

NFC = unicodedata.normalize("NFC", "sách-đang-đọc.md")
NFD = unicodedata.normalize("NFD", "sách-đang-đọc.md")


# --- symbolic links never stop the server ---------------------------------------------


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


# --- NFD names ------------------------------------------------------------------------


@pytest.fixture
def nfd_file(workspace, master):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / NFD).write_text("# Sách\n\n- Dune, đọc xong\n", encoding="utf-8")
    return workspace / "memory" / NFD


def test_search_returns_a_path_memory_get_reads(nfd_file, master_client):
    hits = master_client.get("/api/memory/search", {"q": "dune", "agent_id": "master"}).json()
    [hit] = hits["results"]
    for path in (hit["path"], unicodedata.normalize("NFD", hit["path"])):
        text = tool_text(master_client, "memory_get", path=path)
        assert "Dune" in text, path
    assert unicodedata.normalize("NFC", hit["path"]) == f"memory/{NFC}"


@pytest.mark.parametrize("spelling", [NFC, NFD])
def test_either_spelling_reads_and_writes_the_one_file(
    nfd_file, master_client, owner_client, workspace, spelling
):
    # Over MCP too: tests/memory/mcp/test_server.py.
    assert "Dune" in tool_text(master_client, "memory_get", path=f"memory/{spelling}")
    line = tool_text(master_client, "memory_get", path=f"memory/{spelling}#L3")
    assert line == "- Dune, đọc xong\n"
    url = f"/api/agents/master/memory/files/memory/{spelling}"
    put = owner_client.put(url, {"body": "# Sách\n\n- Dune\n- Solaris\n"}, format="json")
    assert put.status_code == 200, put.content
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


# --- line endings and BOM ----------------------------------------------------------------


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


def test_an_append_into_a_crlf_note_uses_crlf(workspace, master, owner_client, owner_today):
    day = owner_today.isoformat()
    (workspace / "memory").mkdir(exist_ok=True)
    note = workspace / "memory" / f"{day}.md"
    note.write_bytes(f"# {day}\r\n\r\n- 08:00 first\r\n".encode())
    saved = owner_client.post("/api/agents/master/memory/save", {"text": "second"}).json()
    owner_client.post("/api/agents/master/memory/lines", {"lines": ["durable"]})
    data = note.read_bytes()
    assert data == f"# {day}\r\n\r\n- 08:00 first\r\n{saved['line']}\r\n".encode()
    assert b"\n" not in data.replace(b"\r\n", b"")


def test_a_bom_is_kept_on_disk_and_never_reaches_the_prompt(
    workspace, master, owner_client, owner_today
):
    day = owner_today.isoformat()
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


# --- test_agent_dirs.py --------------------
# SPEC §1/§12/§15: nothing the owner did not ask for appears in their workspace. An agent
# made any way (REST, the Django admin) gets no folder, and start-up makes no MEMORY.md,
# memory/ or users/owner/facts/ (an empty file or folder shows as untracked in the owner's
# git): each is made by the first write that needs it, and every read copes with absence.


def test_the_admin_makes_an_agent_and_no_folder(alice, master, workspace):
    client = Client()
    client.force_login(alice)
    response = client.post(
        "/admin/memory/agent/add/",
        {"id": "scribe", "name": "Scribe", "memory_consolidate": ""},
    )
    assert response.status_code == 302, response.content[:500]
    owner = APIClient()
    owner.force_authenticate(alice)
    assert owner.get("/api/agents/scribe").json()["name"] == "Scribe"
    assert not (workspace / "agents").exists()


def test_an_agent_made_over_rest_gets_its_folder_with_its_first_write(
    owner_client, master, workspace
):
    response = owner_client.post(
        "/api/agents", data={"id": "scout", "name": "Scout"}, format="json"
    )
    assert response.status_code == 201
    assert not (workspace / "agents").exists()
    # Every read copes with the absence: empty, never an error, nothing created.
    assert owner_client.get("/api/agents/scout/memory").json()["body"] == ""
    assert owner_client.get("/api/agents/scout/memory/notes").json()["count"] == 0
    assert owner_client.get("/api/agents/scout/memory/files").status_code == 200
    assert owner_client.get("/api/agents/scout/memory/context?conversation=c").json() == {
        "system": "",
        "pre_turn": "",
    }
    assert owner_client.get("/api/memory/search?q=anything&agent_id=scout").status_code == 200
    assert owner_client.get("/api/agents/scout/memory/wiki").json()["count"] == 0
    assert not (workspace / "agents").exists()
    note = owner_client.put(
        "/api/agents/scout/memory/notes/2026-01-01", data={"body": "n\n"}, format="json"
    )
    assert note.status_code == 201
    assert (workspace / "agents/scout/memory/2026-01-01.md").read_text(encoding="utf-8") == "n\n"
    assert not (workspace / "agents/scout/MEMORY.md").exists()


def test_start_up_makes_nothing_of_the_owners_in_the_workspace(workspace, master, owner_today):
    build(workspace, "vi", today=owner_today)
    before = {p for p in everything(workspace) if not p.startswith(".memory-")}
    call_command("memory_init", stdout=io.StringIO())
    after = {p for p in everything(workspace) if not p.startswith(".memory-")}
    assert after == before  # no MEMORY.md beside memory.md, no users/, no agent folders
    for machinery in (".memory-locks", ".memory-state"):
        assert (workspace / machinery / ".gitignore").read_text() == "*\n"


def test_the_first_fact_makes_the_facts_folder(owner_client, master, workspace):
    assert owner_client.get("/api/memory/user").json()["facts"] == []
    assert not (workspace / "users").exists()
    owner_client.put(
        "/api/memory/user/facts/tea",
        data={"description": "likes green tea", "type": "preference", "body": "b"},
        format="json",
    )
    assert (workspace / "users/owner/facts/tea.md").is_file()


# --- test_doctor.py --------------------
# `python manage.py memory_doctor` (docs/decisions.md, "OpenClaw and clients"): on a
# workspace of each OpenClaw shape it says the layout, the prompt files and their sizes
# against the caps, what it ignores and why, and what start-up would create — and changes
# nothing, not even a lock file.


def everything(root) -> dict[str, object]:
    """Every entry below root with its bytes (files), target (links) or nothing (dirs)."""
    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            found[rel] = ("dir",)
        else:
            found[rel] = (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_mode)
    return found


def doctor(*args: str) -> str:
    out = io.StringIO()
    call_command("memory_doctor", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("shape", ["vi", "en", "zh"])
def test_it_reports_each_shape_and_changes_nothing(workspace, master, shape, owner_today):
    built = build(workspace, shape, today=owner_today)
    before = everything(workspace)
    text = doctor()
    assert everything(workspace) == before
    assert "Layout: an OpenClaw workspace, used as it is" in text
    assert "USER.md at the root" in text
    assert "USER.md                  USER.md" in text  # the root file is the user's USER.md
    assert "a persona file: not memory" in text
    assert "memory/.draft.md                         hidden" in text
    assert "memory/synced.md                         a symbolic link: never followed" in text
    assert "memory/scan-latin1.md                    not UTF-8 from byte 3" in text
    assert "memory/photo.jpg                         not Markdown (.md)" in text
    agent_dir = built.agents[0]
    assert f"Agent folder {agent_dir}/ holds memory files but no agent yet" in text
    creates = text.split("would create:\n")[1].split("\n\n")[0].split("\n")
    assert creates == [
        "  .memory-locks/ (lock files, ignored by git)",
        "  .memory-state/ (derived state, ignored by git)",
    ]  # memory files and folders come with their first write
    assert "Nothing was changed." in text
    if shape == "vi":
        assert "memory.md stands for MEMORY.md" in text
        assert "MEMORY.md (empty)" not in text  # never beside memory.md
    if shape == "en":
        assert "odd names, read as notes of their day: 2026-01-05_1030.md" in text
        assert "not read as a note: 2026-02-30 is not a real date" in text
        assert "OpenClaw memory-wiki page(s)" in text
        assert "Wiki vault: 6 page(s) (concepts 2, entities 1, sources 3)" in text


def test_it_shows_the_context_before_and_after_the_caps(workspace, master, owner_today):
    build(workspace, "en", today=owner_today)
    big_note(workspace, owner_today, 3_700_000)
    report = json.loads(doctor("--json"))
    (agent,) = [a for a in report["agents"] if a["known"]]
    assert agent["pre_turn_before"] > 3_600_000
    assert agent["pre_turn_after"] <= 30_000
    today_row = [row for row in agent["prompt"] if row["label"] == f"memory/{owner_today}.md"]
    assert today_row[0]["chars"] > 3_600_000 and today_row[0]["in_block"]
    row = rf"memory/{owner_today}\.md +3,[67]\d\d,\d\d\d chars \(in the block, cut to 19,\d\d\d"
    assert re.search(row, doctor())


def test_it_shows_what_the_pre_turn_block_holds_for_each_agent(workspace, master, owner_today):
    """SPEC §4.2: every note of today and yesterday, session and slugged ones too, newest
    first, each whole, cut or only named within the caps."""
    built = build(workspace, "zh", today=owner_today)
    yesterday = owner_today - dt.timedelta(days=1)
    (workspace / f"memory/{yesterday}-evening.md").write_text("- 21:00 晚上散步\n")
    big_note(workspace, owner_today, 40_000)
    text = doctor()
    block = text.split("Pre-turn block")[1].split("  Context before")[0].split("\n")[1:-1]
    assert [line.split()[0] for line in block] == [
        f"memory/{owner_today}.md",
        f"memory/{yesterday}.md",
        f"memory/{yesterday}-evening.md",
        f"memory/{yesterday}-1530.md",
        f"memory/{yesterday}-0900.md",
    ]
    assert "(in the block, cut to" in block[0]
    assert block[-1].endswith("(in the block, whole)") or "not shown" in block[-1]
    assert f"Agent folder {built.agents[0]}/ holds memory files" in text


def test_it_offers_agents_only_for_folders_holding_memory_files(workspace, master):
    """A workspace that keeps code under agents/ is not offered an agent per folder."""
    for n in range(40):
        (workspace / f"agents/tool-{n}/src").mkdir(parents=True)
        (workspace / f"agents/tool-{n}/src/main.py").write_text("print(1)\n")
    (workspace / "agents/tool-0/README.md").write_text("# not memory\n")
    (workspace / "agents/scribe/memory").mkdir(parents=True)
    (workspace / "agents/scribe/memory/2026-01-01.md").write_text("- a note\n")
    (workspace / "agents/Bad Name").mkdir()
    (workspace / "agents/Bad Name/MEMORY.md").write_text("- x\n")
    text = doctor()
    offered = [line for line in text.split("\n") if line.startswith("Agent folder")]
    assert offered == [
        "Agent folder agents/scribe/ holds memory files but no agent yet — create the agent "
        "'scribe' (POST /api/agents or the admin) to use it"
    ]
    assert "agents/: 40 folder(s) without memory files" in text
    assert "agents/Bad Name" in text.split("Ignored, and why:")[1]


def test_it_writes_nothing_not_even_the_database_file(workspace, tmp_path, owner_today):
    """The doctor on a fresh machine: no database yet, and it stays so."""
    import subprocess
    import sys

    from django.conf import settings as django_settings

    build(workspace, "en", today=owner_today)
    before = everything(workspace)
    database = tmp_path / "never.sqlite3"
    env = {**os.environ, "MY_AGENT_HOME": str(workspace), "DATABASE_URL": f"sqlite:///{database}"}
    done = subprocess.run(
        [sys.executable, "manage.py", "memory_doctor"],
        cwd=django_settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Database: none yet (the first make run creates it)" in done.stdout
    assert "Agent master (the home itself)" in done.stdout
    assert done.stdout.endswith("Nothing was changed.\n")
    assert not database.exists() and list(tmp_path.glob("never.sqlite3*")) == []
    assert everything(workspace) == before


def test_it_reports_extra_paths_and_a_bad_user_file_setting(
    workspace, master, settings, tmp_path, owner_today
):
    build(workspace, "zh", today=owner_today)
    (tmp_path / "team").mkdir()
    settings.MEMORY_EXTRA_PATHS = [str(tmp_path / "team"), str(tmp_path / "missing")]
    settings.MEMORY_USER_FILE = "../outside.md"
    text = doctor()
    assert f"{tmp_path / 'team'}: shown as extra/team/" in text
    assert f"{tmp_path / 'missing'}: does not exist" in text
    assert "MEMORY_USER_FILE:" in text


def test_on_this_apps_own_workspace_it_says_so(workspace, master):
    (workspace / "users/owner/facts").mkdir(parents=True)
    (workspace / "users/owner/USER.md").write_text("me\n")
    (workspace / "memory").mkdir()
    (workspace / "MEMORY.md").write_text("- a\n")
    text = doctor()
    assert "Layout: this app's workspace" in text
    assert "USER.md                  users/owner/USER.md" in text
    assert "Start-up (make run → memory_init) would create:\n  .memory-locks/" in text


def test_after_start_up_the_apps_own_folders_are_not_reported_as_ignored(
    workspace, master, owner_today
):
    build(workspace, "vi", today=owner_today)
    assert ".memory-state/ (derived state, ignored by git)" in doctor()
    call_command("memory_init", stdout=io.StringIO())
    text = doctor()
    assert (workspace / ".memory-state").is_dir()
    assert ".memory-state" not in text.split("Ignored, and why:")[1]
    assert ".memory-state/" not in text.split("would create:")[1]


# --- GETs never write ------------------------------------------------------------------
# GETs never write (a house rule; SPEC §1: nothing the owner keeps is rewritten by
# reading): every GET of the API, the management pages and the admin leaves the workspace
# exactly as it was — the same paths, bytes, modes and modification times, and no lock
# file or folder created (MCP reads: tests/memory/mcp/test_server.py). The workspace is the one
# of tests/hand_written.py, which the app never initialised.


@pytest.fixture
def hand_written(workspace, master, helper_agent, owner_today):
    """A workspace as a person left it (written with plain file calls, never the app)."""
    return write_hand_written(workspace, owner_today)


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


def test_no_api_get_writes_to_the_workspace(hand_written, owner_client, owner_today):
    before = snapshot(hand_written)
    for url in API_GETS:
        response = owner_client.get(url.format(today=owner_today))
        # /healthz is 503 here: no worker has beaten in a test.
        assert response.status_code < 500 or url == "/healthz", (url, response.status_code)
        assert snapshot(hand_written) == before, url


def test_no_api_get_of_an_agent_token_writes(hand_written, master_client, owner_today):
    before = snapshot(hand_written)
    for url in API_GETS:
        master_client.get(url.format(today=owner_today))
        assert snapshot(hand_written) == before, url


def test_no_page_or_admin_get_writes_to_the_workspace(hand_written, alice, owner_today):
    client = Client()
    client.force_login(alice)
    before = snapshot(hand_written)
    for url in PAGE_GETS:
        response = client.get(url.format(today=owner_today))
        assert response.status_code < 500, (url, response.status_code)
        assert snapshot(hand_written) == before, url


def test_the_wiki_report_is_computed_without_writing(hand_written, owner_client):
    report = owner_client.get("/api/agents/master/memory/wiki/report").json()
    assert report["pages"] == 2
    assert {issue["kind"] for issue in report["issues"]} >= {"dangling", "stale"}
    assert report["open_questions"] == [
        {"slug": "minh", "key": "entities/minh", "title": "Minh", "question": "Who is Minh?"}
    ]
    # Nothing was created: neither the reports nor machine blocks in the pages.
    assert not (hand_written / "memory/wiki/reports").exists()
    assert (hand_written / "memory/wiki/entities/han-eco.md").read_text() == HAND_PAGE


def test_the_lock_directory_is_ignored_by_git_after_start_up(workspace, master):
    from django.core.management import call_command

    call_command("memory_init")
    assert (workspace / ".memory-locks/.gitignore").read_text() == "*\n"
    # The pool of lock files is made at start-up (its exact size: tests/memory, prepare()).
    assert len(os.listdir(workspace / ".memory-locks")) > 1


def test_it_treats_missing_files_as_absent_not_errors(owner_client, master, workspace):
    for path in ("USER.md", "MEMORY.md"):
        assert not (workspace / path).exists()
    user = owner_client.get("/api/memory/user")
    assert user.status_code == 200
    assert user.json()["facts"] == []
    context = owner_client.get("/api/agents/master/memory/context", {"conversation": "c1"})
    assert context.status_code == 200
    assert context.json() == {"system": "", "pre_turn": ""} or (
        "## MEMORY.md" not in context.json()["system"]
        and "## USER.md" not in context.json()["system"]
    )


def test_an_agents_memory_md_is_made_by_its_first_write(owner_client, master, workspace):
    response = owner_client.post(
        "/api/agents", data={"id": "scout", "name": "Scout"}, format="json"
    )
    assert response.status_code == 201
    # SPEC §1: nothing is made before a write needs it — no empty MEMORY.md, no folder.
    assert not (workspace / "agents/scout").exists()
    saved = owner_client.put("/api/agents/scout/memory", {"body": "- first\n"}, format="json")
    assert saved.status_code == 200, saved.content
    assert (workspace / "agents/scout/MEMORY.md").read_text() == "- first\n"
    assert not (workspace / "agents/scout/memory").exists()
