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
        f"alpha{separator}beta\nsecond line\nxi target here\n", encoding="utf-8"
    )
    hit = tool_text(owner_client, "memory_search", query="target")
    assert hit == "[memory/2026-01-01.md:3] xi target here"
    got = tool_text(owner_client, "memory_get", path="memory/2026-01-01.md", from_line=3, lines=1)
    assert got.splitlines()[0] == "xi target here"


def test_it_folds_unicode_line_breaks_in_memory_save(owner_client, master, workspace, settings):
    import datetime as dt
    from zoneinfo import ZoneInfo

    today = dt.datetime.now(ZoneInfo(settings.MEMORY_TIME_ZONE)).date()
    tool_text(owner_client, "memory_save", text="one\u2028two\u2029three\x85four")
    text = (workspace / f"memory/{today}.md").read_text(encoding="utf-8")
    line = text.rstrip("\n").split("\n")[-1]
    assert line.endswith("one two three four")
