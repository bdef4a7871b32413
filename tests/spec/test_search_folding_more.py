"""SPEC §6.1 folding details: case-folding (not just lowercasing), đ/Đ, marks on any letter,
and the three-character whole-word rule applied to the folded text."""

from __future__ import annotations

import pytest

from tests.helpers import write_by_hand


def _write(workspace, text):
    write_by_hand(workspace / "memory/2026-01-01.md", text)


def _search(client, query):
    response = client.post(
        "/api/agents/master/tools/memory_search",
        data={"query": query},
        format="json",
    )
    assert response.status_code == 200, response.content
    return [line for line in response.json()["result"].splitlines() if line.startswith("[")]


@pytest.mark.parametrize(
    "query,line",
    [
        ("strasse", "Wohnung in der Straße"),  # casefold: ß → ss
        ("STRASSE", "Wohnung in der Straße"),
        ("dang", "ĐANG làm"),
        ("Đang", "dang lam"),
        ("cafe", "Café Giảng"),
        ("giang", "Café Giảng"),
        ("nao", "São Paulo não"),
        ("2026", "hạn chót 2026-03-01"),
    ],
)
def test_it_folds_before_comparing(owner_client, master, workspace, query, line):
    _write(workspace, f"{line}\n")
    assert _search(owner_client, query) == [f"[memory/2026-01-01.md:1] (2026-01-01 Thu) {line}"]


@pytest.mark.parametrize(
    "query,line,found",
    [
        ("an", "ăn cơm", True),
        ("an", "bạn bè", False),
        ("com", "ăn cơm", True),
        ("com", "computer", False),
        ("ho", "Hồ Tây", True),
        ("ho", "hội họp", False),
        ("doc", "doc_string", True),  # underscore is not a letter or digit: a word boundary
        ("doc", "doc2", False),
    ],
)
def test_it_matches_short_words_whole_after_folding(
    owner_client, master, workspace, query, line, found
):
    _write(workspace, f"{line}\n")
    assert (
        _search(owner_client, query) == [f"[memory/2026-01-01.md:1] (2026-01-01 Thu) {line}"]
    ) is found
