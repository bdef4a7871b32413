"""OpenClaw's call shapes work unchanged: memory_search's maxResults (capped at 12),
minScore and corpus; memory_get's `from` and `lines`, and `path#L3` / `path#L3-L5`."""

from __future__ import annotations

import pytest

from memory import tools
from memory.errors import InvalidInput


def call(agent, name, **arguments) -> str:
    return tools.call_tool(agent, name, arguments, source="chat")


@pytest.fixture
def notes(master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    lines = [f"- 09:{n:02d} tea number {n}" for n in range(20)] + ["- 10:00 tea with lemon"]
    (workspace / "memory" / "2026-03-14.md").write_text("# 2026-03-14\n" + "\n".join(lines) + "\n")
    return master


def test_max_results_limits_and_is_capped_at_12(notes):
    assert len(call(notes, "memory_search", query="tea", maxResults=3).splitlines()) == 3
    assert len(call(notes, "memory_search", query="tea", maxResults=50).splitlines()) == 12


def test_min_score_keeps_entries_holding_that_share_of_the_words(notes):
    # No entry holds both words: partial matches come back, unless minScore asks for all.
    assert call(notes, "memory_search", query="lemon zebra").startswith("[memory/2026-03-14.md")
    assert call(notes, "memory_search", query="lemon zebra", minScore=1.0) == (
        'No memory matches "lemon zebra".'
    )
    assert "lemon" in call(notes, "memory_search", query="lemon zebra", minScore=0.5)


@pytest.mark.parametrize("corpus", ["memory", "sessions", "all"])
def test_corpus_is_accepted_and_searches_the_memory(notes, corpus):
    assert "lemon" in call(notes, "memory_search", query="lemon", corpus=corpus)


def test_an_unknown_corpus_or_a_min_score_past_one_is_refused(notes):
    with pytest.raises(InvalidInput):
        call(notes, "memory_search", query="tea", corpus="web")
    with pytest.raises(InvalidInput):
        call(notes, "memory_search", query="tea", minScore=2)


def test_memory_get_takes_from_and_lines(notes):
    assert call(notes, "memory_get", path="memory/2026-03-14.md", **{"from": 2}, lines=2) == (
        "- 09:00 tea number 0\n- 09:01 tea number 1\n"
    )


def test_memory_get_reads_a_citation_suffix(notes):
    assert call(notes, "memory_get", path="memory/2026-03-14.md#L3-L4") == (
        "- 09:01 tea number 1\n- 09:02 tea number 2\n"
    )
    single = call(notes, "memory_get", path="memory/2026-03-14.md#L22")
    assert single.startswith("- 10:00 tea with lemon")
    # Explicit arguments win over the suffix.
    assert call(notes, "memory_get", path="memory/2026-03-14.md#L3-L4", lines=1) == (
        "- 09:01 tea number 1\n"
    )


@pytest.mark.parametrize(
    "path", ["memory/2026-03-14.md#L0", "memory/2026-03-14.md#L5-L3", "memory/2026-03-14.md#x"]
)
def test_a_bad_citation_suffix_is_refused(notes, path):
    with pytest.raises(InvalidInput):
        call(notes, "memory_get", path=path)


def test_from_and_from_line_must_agree(notes):
    with pytest.raises(InvalidInput, match="not two different lines"):
        call(notes, "memory_get", path="memory/2026-03-14.md", from_line=2, **{"from": 3})
