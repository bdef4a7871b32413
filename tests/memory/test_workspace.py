"""The workspace module: atomic writes, path refusal (SPEC §1, §17)."""

from __future__ import annotations

import os

import pytest

from memory import workspace as ws
from memory.errors import PathRefused

TRAVERSAL = [
    "..",
    "../outside.md",
    "memory/../../outside.md",
    "memory/%2e%2e/%2e%2e/outside.md",  # never decoded: a literal name, but see below
    "．．/outside.md",  # fullwidth dots
    "memory/．．/．．/outside.md",
    "memory／..／outside.md",  # fullwidth slash
    "memory/2026-11-30.md\x00.txt",
    "/etc/passwd",
    "//etc/passwd",
    "C:/Windows/win.ini",
    "memory\\..\\..\\outside.md",
    "",
    "./MEMORY.md",
    "memory//2026-11-30.md",
]


@pytest.fixture
def outside(tmp_path):
    """A file next to (outside) the workspace, which nothing may read or change."""
    target = tmp_path / "outside.md"
    target.write_text("secret\n")
    return target


def _snapshot(path):
    return sorted(
        (p.relative_to(path).as_posix(), p.read_bytes() if p.is_file() else b"")
        for p in path.rglob("*")
        if ".memory-locks" not in p.parts
    )


def test_it_writes_atomically_and_returns_the_hash(workspace):
    digest = ws.write("users/owner/USER.md", "Tôi là Minh.\n")
    assert digest == ws.hash_text("Tôi là Minh.\n") == ws.file_hash("users/owner/USER.md")
    assert (workspace / "users/owner/USER.md").read_text(encoding="utf-8") == "Tôi là Minh.\n"
    assert ws.file_hash("users/owner/missing.md") == ws.ABSENT


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_it_leaves_the_old_text_when_a_write_fails_midway(workspace, monkeypatch, failing):
    ws.write("MEMORY.md", "old text\n")

    def boom(*args, **kwargs):
        raise OSError("disk full (injected)")

    monkeypatch.setattr(os, failing, boom)
    with pytest.raises(OSError, match="injected"):
        ws.write("MEMORY.md", "new text that never lands\n")
    monkeypatch.undo()

    assert (workspace / "MEMORY.md").read_text() == "old text\n"
    # No temp file is left beside it.
    assert sorted(p.name for p in workspace.iterdir() if p.is_file()) == ["MEMORY.md"]


def test_it_never_shows_half_a_file_to_a_reader_during_a_failed_write(workspace, monkeypatch):
    ws.write("memory/2026-11-30.md", "# 2026-11-30\n\n- 08:00 old\n")
    real_replace = os.replace
    seen = []

    def replace_then_fail(src, dst):
        # While the new text sits in its temp file, the note still reads as the old one.
        seen.append((workspace / "memory/2026-11-30.md").read_text())
        raise OSError("power cut (injected)")

    monkeypatch.setattr(os, "replace", replace_then_fail)
    with pytest.raises(OSError):
        ws.write("memory/2026-11-30.md", "x" * 100_000)
    monkeypatch.setattr(os, "replace", real_replace)
    assert seen == ["# 2026-11-30\n\n- 08:00 old\n"]
    assert ws.read("memory/2026-11-30.md") == "# 2026-11-30\n\n- 08:00 old\n"


@pytest.mark.parametrize("rel", TRAVERSAL)
def test_it_refuses_paths_that_leave_the_workspace(workspace, outside, rel):
    before = _snapshot(workspace.parent)
    if rel.startswith("memory/%2e%2e"):
        # Percent escapes are not decoded by the workspace: the name is literal and stays
        # inside the root, so it is simply a missing file.
        assert ws.read(rel) is None
        return
    with pytest.raises(PathRefused):
        ws.resolve(rel)
    with pytest.raises(PathRefused):
        ws.read(rel)
    with pytest.raises(PathRefused):
        ws.write(rel, "pwned\n")
    with pytest.raises(PathRefused):
        ws.append(rel, "pwned\n")
    with pytest.raises(PathRefused):
        ws.delete(rel)
    assert outside.read_text() == "secret\n"
    assert _snapshot(workspace.parent) == before


def test_it_refuses_a_symlink_out_of_the_workspace(workspace, outside, tmp_path):
    (workspace / "memory").mkdir()
    (workspace / "memory" / "2026-11-30.md").symlink_to(outside)
    (workspace / "agents").mkdir()
    (workspace / "agents" / "evil").symlink_to(tmp_path, target_is_directory=True)

    for rel in ("memory/2026-11-30.md", "agents/evil/outside.md", "agents/evil/new.md"):
        with pytest.raises(PathRefused):
            ws.read(rel)
        with pytest.raises(PathRefused):
            ws.write(rel, "pwned\n")
        with pytest.raises(PathRefused):
            ws.append(rel, "pwned\n")
    assert outside.read_text() == "secret\n"
    assert not (tmp_path / "new.md").exists()
    # Listing leaves the symlink out rather than following it.
    assert ws.list_files("memory") == []


def test_it_refuses_a_symlink_even_one_that_stays_inside(workspace):
    # A link inside one agent's dir could point at another agent's files.
    ws.write("memory/real.md", "inside\n")
    (workspace / "memory" / "alias.md").symlink_to(workspace / "memory" / "real.md")
    with pytest.raises(PathRefused):
        ws.read("memory/alias.md")
    with pytest.raises(PathRefused):
        ws.append("memory/alias.md", "- more\n")
    assert (workspace / "memory" / "real.md").read_text() == "inside\n"


def test_it_follows_a_workspace_root_that_is_itself_a_symlink(tmp_path, settings):
    real = tmp_path / "real-home"
    real.mkdir()
    (tmp_path / "link-home").symlink_to(real)
    settings.MY_AGENT_HOME = str(tmp_path / "link-home")
    ws.write("MEMORY.md", "- ok\n")
    assert (real / "MEMORY.md").read_text() == "- ok\n"
