"""memory_get (SPEC §5): what it reads, what it refuses, and how it pages."""

from __future__ import annotations

import os

import pytest

from memory import tools
from memory.errors import NotFound, PathRefused
from memory.reading import MAX_CHARS, read_memory_file

SECRET = "helper's private line: the vault code is 4711"


def call_tool(agent, name, arguments):
    """A tool call from a chat: the runtime, not the arguments, says so."""
    return tools.call_tool(agent, name, arguments, source="chat")


def run_tool(agent, name, arguments):
    return tools.run_tool(agent, name, arguments, source="chat")


@pytest.fixture
def files(workspace, master, helper_agent):
    """Memory of both agents, a fact, USER.md, INDEX.md and a file outside the home."""
    (workspace / "MEMORY.md").write_text("# Master\n- likes tea\n")
    (workspace / "memory" / "wiki" / "entities").mkdir(parents=True)
    (workspace / "memory" / "2026-03-14.md").write_text("# 2026-03-14\n\n- 09:00 ran 5 km\n")
    (workspace / "memory" / "wiki" / "entities" / "eco-retreat.md").write_text("Eco page\n")
    (workspace / "memory" / "notes.txt").write_text("not markdown\n")
    helper_dir = workspace / "agents" / "helper"
    (helper_dir / "MEMORY.md").write_text(SECRET + "\n")
    (helper_dir / "memory" / "2026-03-14.md").write_text("# 2026-03-14\n\n- helper note\n")
    facts = workspace / "users" / "owner" / "facts"
    facts.mkdir(parents=True)
    (facts / "coffee.md").write_text("---\nname: coffee\n---\n\nBlack, no sugar.\n")
    (facts / "INDEX.md").write_text("- [coffee](coffee.md) (preference) — coffee\n")
    (workspace / "users" / "owner" / "USER.md").write_text("I am Alice.\n")
    outside = workspace.parent / "outside.md"
    outside.write_text(SECRET + "\n")
    return workspace


def get(agent, path, **kwargs) -> str:
    return call_tool(agent, "memory_get", {"path": path, **kwargs})


def test_it_reads_the_agents_memory_files_by_the_paths_search_shows(files, master):
    assert get(master, "MEMORY.md") == "# Master\n- likes tea\n"
    assert get(master, "memory/2026-03-14.md") == "# 2026-03-14\n\n- 09:00 ran 5 km\n"
    assert get(master, "memory/wiki/entities/eco-retreat.md") == "Eco page\n"
    assert get(master, "users/owner/facts/coffee.md") == (
        "---\nname: coffee\n---\n\nBlack, no sugar.\n"
    )


def test_it_reads_a_helpers_files_relative_to_its_own_dir(files, helper_agent):
    assert get(helper_agent, "MEMORY.md") == SECRET + "\n"
    assert get(helper_agent, "memory/2026-03-14.md") == "# 2026-03-14\n\n- helper note\n"
    assert get(helper_agent, "users/owner/facts/coffee.md").endswith("Black, no sugar.\n")


REFUSED_FOR_MASTER = [
    "../outside.md",
    "memory/../../outside.md",
    "memory/../agents/helper/MEMORY.md",
    "%2e%2e/outside.md",
    "memory/%2e%2e/%2e%2e/outside.md",
    "memory/..%2fagents/helper/MEMORY.md",
    "memory\uff0f..\uff0f..\uff0foutside.md",  # fullwidth slashes
    "\uff0e\uff0e/outside.md",  # fullwidth dots
    "MEMORY.md\x00.txt",
    "memory/2026-03-14.md\x00",
    "/etc/passwd",
    "/MEMORY.md",
    "C:\\MEMORY.md",
    "memory\\2026-03-14.md",
    "memory/notes.txt",
    "memory/2026-03-14",
    "MEMORY.MD",
    "memory.md",
    "agents/helper/MEMORY.md",
    "agents/helper/memory/2026-03-14.md",
    "users/owner/USER.md",
    "users/owner/facts/INDEX.md",
    "users/owner/facts/Coffee.md",
    "users/owner/facts/../../../agents/helper/MEMORY.md",
    "users/owner/facts/sub/coffee.md",
    "./MEMORY.md",
    "memory//2026-03-14.md",
    "memory/.hidden.md",
    ".memory-locks/x.md",
    "",
    "AGENTS.md",
]


@pytest.mark.parametrize("path", REFUSED_FOR_MASTER)
def test_it_refuses_paths_that_are_not_masters_memory(files, master, path):
    with pytest.raises(PathRefused):
        read_memory_file(master, path)
    # The same through the tool: an error text for the model, not the file's text.
    answer = run_tool(master, "memory_get", {"path": path})
    assert answer.startswith("Error: ")
    assert SECRET not in answer


@pytest.mark.parametrize(
    "path",
    [
        "../../MEMORY.md",
        "../../memory/2026-03-14.md",
        "memory/../../../MEMORY.md",
        "../master/MEMORY.md",
        "%2e%2e/%2e%2e/MEMORY.md",
        "/MEMORY.md",
    ],
)
def test_it_refuses_another_agents_files_to_a_helper(files, helper_agent, path):
    with pytest.raises(PathRefused):
        read_memory_file(helper_agent, path)


def test_it_refuses_a_symlink_out_of_the_home(files, master):
    os.symlink(files.parent / "outside.md", files / "memory" / "escape.md")
    with pytest.raises(PathRefused):
        read_memory_file(master, "memory/escape.md")


def test_it_refuses_a_symlink_to_another_agents_memory(files, master):
    os.symlink(files / "agents" / "helper" / "MEMORY.md", files / "memory" / "peek.md")
    os.symlink(files / "agents" / "helper", files / "memory" / "helper-dir")
    with pytest.raises(PathRefused):
        read_memory_file(master, "memory/peek.md")
    with pytest.raises(PathRefused):
        read_memory_file(master, "memory/helper-dir/MEMORY.md")


def test_it_refuses_a_symlink_to_user_md(files, master):
    os.symlink(files / "users" / "owner" / "USER.md", files / "memory" / "user.md")
    with pytest.raises(PathRefused):
        read_memory_file(master, "memory/user.md")


def test_it_refuses_even_a_symlink_that_stays_inside_the_agents_memory(files, master):
    # One rule for every link below the home: search and listings skip links, so
    # memory_get does not follow one either.
    os.symlink(files / "memory" / "2026-03-14.md", files / "memory" / "latest.md")
    with pytest.raises(PathRefused):
        get(master, "memory/latest.md")


def test_it_says_not_found_for_a_missing_memory_file(files, master):
    with pytest.raises(NotFound):
        get(master, "memory/2020-01-01.md")
    with pytest.raises(NotFound):
        get(master, "users/owner/facts/unknown.md")


def test_it_reads_a_range_of_lines_counted_from_one(files, master):
    (files / "memory" / "long.md").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    assert get(master, "memory/long.md", from_line=3, lines=2) == "line 3\nline 4\n"
    assert get(master, "memory/long.md", from_line=9, lines=5) == "line 9\nline 10\n"
    assert get(master, "memory/long.md", from_line=10) == "line 10\n"
    assert get(master, "memory/long.md", from_line=11) == (
        "[memory/long.md has 10 lines; there is nothing from line 11]"
    )


def test_it_cuts_a_single_line_longer_than_the_page_and_says_how_to_read_it(files, master):
    huge = "y" * 20_000
    (files / "memory" / "huge.md").write_text(f"{huge}\nafter\n")
    answer = get(master, "memory/huge.md")
    assert answer == "y" * MAX_CHARS + (
        "\n[… line 1 is longer than 12,000 characters: call memory_get with from_line=1, "
        "lines=1 for all of it; more: from_line=2]"
    )
    assert get(master, "memory/huge.md", lines=1) == huge + "\n"


def test_it_returns_a_file_without_final_newline_and_an_empty_file_clearly(files, master):
    (files / "memory" / "short.md").write_text("only line")
    (files / "memory" / "empty.md").write_text("")
    assert get(master, "memory/short.md") == "only line"
    assert get(master, "memory/empty.md") == "[memory/empty.md is empty]"
