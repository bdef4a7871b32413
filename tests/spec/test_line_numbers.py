"""SPEC §5/§6.1: memory_get reads "by the path memory_search shows" — the `[path:line]`
of a search hit must lead memory_get to that same line; memory_save folds newlines."""

from __future__ import annotations

import pytest

from tests.helpers import tool_text


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
