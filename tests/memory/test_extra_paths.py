"""Extra paths (SPEC §6.1), as OpenClaw's memorySearch.extraPaths: folders or files of
Markdown, absolute or relative to the home, that memory_search and memory_get read —
read-only, symlinks skipped, the same traversal rules, shown under their own prefix."""

from __future__ import annotations

import os

import pytest

from memory import reading, tools
from memory import workspace as ws
from memory.errors import DomainError, PathRefused


def call(agent, name, **arguments) -> str:
    return tools.call_tool(agent, name, arguments, source="chat")


@pytest.fixture
def extra(tmp_path, workspace, settings, master):
    """../team-docs (a folder beside the home) and an absolute single file."""
    team = tmp_path / "team-docs"
    (team / "guides").mkdir(parents=True)
    (team / "roadmap.md").write_text("# Roadmap\n\n- Ship the kiln monitor in May\n")
    (team / "guides/onboarding.md").write_text("# Onboarding\n\n- Kiln safety first\n")
    (team / ".secret.md").write_text("kiln hidden\n")
    (team / "notes.txt").write_text("kiln text file\n")
    (tmp_path / "elsewhere.md").write_text("kiln behind a link\n")
    os.symlink(tmp_path / "elsewhere.md", team / "linked.md")
    os.symlink(tmp_path, team / "linked-dir")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "overview.md").write_text("# Overview\n\n- The kiln is in shed 2\n")
    settings.MEMORY_EXTRA_PATHS = ["../team-docs", str(shared / "overview.md")]
    return tmp_path


def test_search_finds_extra_files_under_their_own_prefix(extra, master):
    found = call(master, "memory_search", query="kiln")
    assert "[extra/team-docs/roadmap.md:3] (# Roadmap) - Ship the kiln monitor in May" in found
    assert "[extra/team-docs/guides/onboarding.md:3] (# Onboarding) - Kiln safety first" in found
    assert "[extra/overview.md:3] (# Overview) - The kiln is in shed 2" in found
    # Symlinks (a file, a folder), hidden files and other file types are skipped.
    assert "behind a link" not in found and "hidden" not in found and "text file" not in found
    assert reading.list_extra_files() == [
        "extra/overview.md",
        "extra/team-docs/guides/onboarding.md",
        "extra/team-docs/roadmap.md",
    ]


def test_memory_get_reads_them_by_the_path_search_shows(extra, master):
    assert call(master, "memory_get", path="extra/team-docs/roadmap.md", **{"from": 3}) == (
        "- Ship the kiln monitor in May\n"
    )
    assert call(master, "memory_get", path="extra/overview.md").startswith("# Overview")


@pytest.mark.parametrize(
    "path",
    [
        "extra/team-docs/linked.md",  # a symlink inside
        "extra/team-docs/linked-dir/elsewhere.md",  # through a symlinked folder
        "extra/team-docs/.secret.md",
        "extra/team-docs/notes.txt",
        "extra/team-docs/../elsewhere.md",
        "extra/unknown/roadmap.md",
        "extra/team-docs",
        "extra/overview.md/x.md",
    ],
)
def test_memory_get_refuses_what_search_skips(extra, master, path):
    with pytest.raises(DomainError):
        call(master, "memory_get", path=path)


def test_extra_paths_are_read_only(extra, master, owner_client):
    before = (extra / "team-docs/roadmap.md").read_bytes()
    with pytest.raises(PathRefused):
        reading.resolve_memory_path(master, "extra/team-docs/roadmap.md")
    from memory import memory_tool

    with pytest.raises(DomainError):
        memory_tool.create(master, "/memories/extra/team-docs/roadmap.md", "x", source="chat")
    assert (extra / "team-docs/roadmap.md").read_bytes() == before


def test_a_symlinked_or_missing_extra_path_is_skipped_and_said_why(tmp_path, workspace, settings):
    (tmp_path / "real").mkdir()
    (tmp_path / "real/a.md").write_text("a\n")
    os.symlink(tmp_path / "real", tmp_path / "link")
    settings.MEMORY_EXTRA_PATHS = [str(tmp_path / "link"), str(tmp_path / "missing"), "x.txt"]
    (workspace / "x.txt").write_text("not markdown\n")
    problems = {root.name: root.problem for root in ws.extra_roots()}
    assert problems == {
        "link": "is a symbolic link (skipped, as OpenClaw skips them)",
        "missing": "does not exist",
        "x.txt": "is not a Markdown (.md) file",
    }
    assert ws.scan_extra() == []


def test_two_paths_with_one_name_get_two_prefixes(tmp_path, workspace, settings, master):
    for parent in ("a", "b"):
        (tmp_path / parent / "docs").mkdir(parents=True)
        (tmp_path / parent / "docs/x.md").write_text(f"from {parent} kiln\n")
    settings.MEMORY_EXTRA_PATHS = [str(tmp_path / "a/docs"), str(tmp_path / "b/docs")]
    assert reading.list_extra_files() == ["extra/docs-2/x.md", "extra/docs/x.md"]
    assert call(master, "memory_get", path="extra/docs-2/x.md") == "from b kiln\n"
