"""A full disk and a read-only workspace (SPEC §1, §17): an append is whole or absent, every
write path answers a JSON 507 (full) or 503 (read-only) that says so — REST, the tools
over REST and MCP, the in-process tool loop, the pages, an approval — and reads keep
working on a read-only workspace.

The disk: a real 1 MiB tmpfs mounted under the test's tmp_path where this machine allows
`mount` (root: here and in CI), else ENOSPC / EROFS injected at the workspace layer (the
OS calls memory.workspace makes; MEMORY_TEST_DISK=injected forces that). Each test prints
and records (`disk_method`) which one it used."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.test import Client

from memory import tools, workspace
from memory.mcp.server import call_tool_now
from memory.presence import Caller

LONG = "đọc sách " * 440  # ~4,000 characters, ~6 KB of UTF-8: more than a page


@dataclass
class Disk:
    home: Path
    method: str  # "tmpfs" or "injected"
    monkeypatch: pytest.MonkeyPatch

    def fill(self) -> None:
        """Leave no free block (a file already there may still grow into its last page)."""
        if self.method == "tmpfs":
            with open(self.home / "filler.bin", "wb", buffering=0) as handle:
                for size in (65536, 4096, 512, 1):  # down to the last bytes of the last block
                    try:
                        while handle.write(b"\0" * size) == size:
                            pass
                    except OSError as exc:
                        assert exc.errno == errno.ENOSPC
            return
        real_write = os.write

        def short_write(fd, data):
            return real_write(fd, bytes(data)[: max(1, len(data) // 4)])

        def no_space(fd):
            raise OSError(errno.ENOSPC, "No space left on device (injected)")

        self.monkeypatch.setattr(os, "write", short_write)
        self.monkeypatch.setattr(os, "fsync", no_space)

    def free(self) -> None:
        if self.method == "tmpfs":
            (self.home / "filler.bin").unlink()
        else:
            self.monkeypatch.undo()

    def read_only(self) -> None:
        if self.method == "tmpfs":
            subprocess.run(["mount", "-o", "remount,ro", str(self.home)], check=True)
            return
        real_open, real_mkdir, real_unlink = os.open, os.mkdir, os.unlink
        home = str(self.home)
        writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND

        def ro_open(path, flags, *args, **kwargs):
            if str(path).startswith(home) and flags & writing:
                raise OSError(errno.EROFS, "Read-only file system (injected)")
            return real_open(path, flags, *args, **kwargs)

        def ro(path, *args, **kwargs):
            if str(path).startswith(home):
                raise OSError(errno.EROFS, "Read-only file system (injected)")
            return real_mkdir(path, *args, **kwargs)

        def ro_unlink(path, *args, **kwargs):
            if str(path).startswith(home):
                raise OSError(errno.EROFS, "Read-only file system (injected)")
            return real_unlink(path, *args, **kwargs)

        self.monkeypatch.setattr(os, "open", ro_open)
        self.monkeypatch.setattr(os, "mkdir", ro)
        self.monkeypatch.setattr(os, "unlink", ro_unlink)


def _mount_tmpfs(path: Path) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(path)],
        capture_output=True,
    )
    return done.returncode == 0


@pytest.fixture
def disk(tmp_path, settings, monkeypatch, record_property, master, helper_agent):
    home = tmp_path / "small-home"
    home.mkdir()
    # MEMORY_TEST_DISK=injected runs the injected variant where mount would work too.
    forced = os.environ.get("MEMORY_TEST_DISK") == "injected"
    method = "tmpfs" if not forced and _mount_tmpfs(home) else "injected"
    print(f"disk-full method: {method}")
    record_property("disk_method", method)
    settings.MY_AGENT_HOME = str(home)
    monkeypatch.setenv("MY_AGENT_HOME", str(home))
    workspace.prepare()
    # An existing workspace: the files and folders a write would otherwise make first.
    for folder in ("memory", "users/owner/facts", "agents/helper/memory"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    for memory_file in ("MEMORY.md", "agents/helper/MEMORY.md"):
        (home / memory_file).touch()
    try:
        yield Disk(home, method, monkeypatch)
    finally:
        monkeypatch.undo()
        if method == "tmpfs":
            subprocess.run(["umount", "-l", str(home)], check=False)


def _files(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and p.name != "filler.bin" and ".memory-locks" not in p.parts
    }


def _no_temp_files(home: Path) -> bool:
    return not [p for p in home.rglob("*.tmp")]


# --- a full disk -------------------------------------------------------------------------


def test_memory_save_on_a_full_disk_is_507_and_leaves_no_half_line(disk, owner_client):
    first = owner_client.post("/api/agents/master/memory/save", {"text": "before"})
    assert first.status_code == 200
    note = disk.home / "memory" / first.json()["name"]
    before = note.read_bytes()
    disk.fill()

    response = owner_client.post("/api/agents/master/memory/save", {"text": LONG})

    assert response.status_code == 507, (disk.method, response.content)
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["code"] == "disk_full"
    assert "disk is full" in body["detail"] and first.json()["name"] in body["detail"]
    assert note.read_bytes() == before, disk.method  # whole or absent: absent
    assert _no_temp_files(disk.home)
    # Reading still works, and a write succeeds once there is room again.
    assert owner_client.get("/api/agents/master/memory/notes").status_code == 200
    disk.free()
    again = owner_client.post("/api/agents/master/memory/save", {"text": LONG})
    assert again.status_code == 200
    assert note.read_bytes().decode("utf-8").endswith(f"{LONG.strip()}\n")


def test_every_rest_write_on_a_full_disk_is_507_and_changes_nothing(disk, owner_client):
    assert owner_client.put("/api/agents/master/memory", {"body": "- old\n"}).status_code == 200
    disk.fill()
    before = _files(disk.home)
    writes = [
        ("put", "/api/memory/user", {"body": LONG}),
        ("put", "/api/memory/user/facts/coffee", {"description": "d", "type": "preference"}),
        ("put", "/api/agents/master/memory", {"body": LONG}),
        ("post", "/api/agents/master/memory/lines", {"lines": [LONG[:1900]]}),
        ("put", "/api/agents/master/memory/notes/2026-01-02", {"body": LONG}),
        ("post", "/api/agents/master/tools/memory_save", {"text": LONG}),
        (
            "post",
            "/api/agents/master/tools/user_memory_save",
            {"name": "tea", "description": "likes tea", "type": "preference", "body": LONG},
        ),
        (
            "put",
            "/api/agents/master/memory/wiki/pages/minh",
            {"title": "Minh", "kind": "entity", "sources": ["note:2026-01-01"], "body": LONG},
        ),
    ]
    for method, url, data in writes:
        response = getattr(owner_client, method)(url, data)
        assert response.status_code == 507, (disk.method, url, response.status_code)
        assert response.json()["code"] == "disk_full", url
        assert _files(disk.home) == before, url
    assert _no_temp_files(disk.home)


def test_the_tools_say_the_disk_is_full_over_mcp_and_in_process(disk, master):
    disk.fill()
    before = _files(disk.home)
    mcp = call_tool_now(Caller(agent_id="master"), "memory_save", {"text": LONG})
    assert mcp.is_error and "disk is full" in mcp.content[0].text, disk.method
    loop = tools.run_tool(master, "memory_save", {"text": LONG}, source="chat")
    assert loop.startswith("Error: The workspace's disk is full"), loop
    assert _files(disk.home) == before


def test_a_page_save_on_a_full_disk_shows_the_message_with_507(disk, alice):
    pages = Client()
    pages.force_login(alice)
    disk.fill()
    before = _files(disk.home)
    response = pages.post("/manage/memory/user/", {"body": LONG, "base_hash": ""})
    assert response.status_code == 507, disk.method
    assert "disk is full" in response.content.decode()
    response = pages.post("/manage/memory/agents/master/memory/", {"body": LONG, "base_hash": ""})
    assert response.status_code == 507
    assert "disk is full" in response.content.decode()
    assert _files(disk.home) == before


def test_an_approval_on_a_full_disk_is_507_and_stays_pending(disk, owner_client, master):
    from memory import writes

    _, proposal = writes.add_memory_lines_or_propose(master, ["a durable line"], source="job:x")
    disk.fill()
    before = _files(disk.home)
    response = owner_client.post(f"/api/memory/proposals/{proposal.pk}", {"approve": True})
    assert response.status_code == 507, (disk.method, response.content)
    proposal.refresh_from_db()
    assert proposal.status == "pending"
    assert _files(disk.home) == before
    disk.free()
    response = owner_client.post(f"/api/memory/proposals/{proposal.pk}", {"approve": True})
    assert response.status_code == 200
    assert (disk.home / "MEMORY.md").read_text().endswith("a durable line\n")


# --- a read-only workspace -------------------------------------------------------------------


def test_a_read_only_workspace_is_503_on_writes_and_still_reads(disk, owner_client, alice):
    owner_client.put("/api/memory/user", {"body": "Minh\n"})
    saved = owner_client.post("/api/agents/master/memory/save", {"text": "before"}).json()
    disk.read_only()
    before = _files(disk.home)

    for method, url, data in [
        ("post", "/api/agents/master/memory/save", {"text": "after"}),
        ("put", "/api/memory/user", {"body": "changed\n"}),
        ("put", "/api/agents/master/memory", {"body": "changed\n"}),
        ("post", "/api/agents/master/tools/memory_save", {"text": "after"}),
    ]:
        response = getattr(owner_client, method)(url, data)
        assert response.status_code == 503, (disk.method, url, response.content)
        assert response.json()["code"] == "read_only"
        assert "read-only" in response.json()["detail"]

    for url in [
        "/api/memory/user",
        "/api/agents/master/memory",
        "/api/agents/master/memory/notes",
        f"/api/agents/master/memory/notes/{saved['day']}",
        "/api/memory/search?q=before",
        "/api/agents/master/memory/context?conversation=c1",
        "/api/agents/master/memory/wiki/report",
        "/api/stats",
    ]:
        response = owner_client.get(url)
        assert response.status_code == 200, (disk.method, url, response.content)
    assert owner_client.get("/api/memory/user").json()["body"] == "Minh\n"

    pages = Client()
    pages.force_login(alice)
    assert pages.get("/manage/memory/").status_code == 200
    response = pages.post("/manage/memory/user/", {"body": "changed\n", "base_hash": ""})
    assert response.status_code == 503
    assert "read-only" in response.content.decode()
    assert _files(disk.home) == before


def test_start_up_completes_on_a_read_only_workspace(disk, capsys):
    from django.core.management import call_command

    disk.read_only()
    call_command("memory_init")
    err = capsys.readouterr().err
    if disk.method == "tmpfs":
        # The lock pool exists already (made before the remount): nothing to say there;
        # every agent dir exists too, so start-up had nothing to create.
        assert "Traceback" not in err


def test_creating_an_agent_on_a_read_only_workspace_is_503_and_makes_no_row(disk, owner_client):
    """SPEC §12, §17: it answered 201 with no directory, and the agent could not be used."""
    disk.read_only()
    before = _files(disk.home)
    response = owner_client.post("/api/agents", {"id": "scout", "name": "Scout"}, format="json")
    assert response.status_code == 503, (disk.method, response.content)
    assert response.json()["code"] == "read_only"
    assert owner_client.get("/api/agents/scout").status_code == 404
    listed = {agent["id"] for agent in owner_client.get("/api/agents").json()["results"]}
    assert listed == {"helper", "master"}
    assert _files(disk.home) == before
