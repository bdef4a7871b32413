"""The index finds exactly what the §6.1 rules find (docs/decisions.md, "Search"): on a generated
workspace, memory.search and the slow reference (tests/memory/search_reference.py, every
file read and folded on every call) give the same hits, in the same order, with the same
words matched and weights — before and after app writes, hand edits and deletes."""

from __future__ import annotations

import datetime as dt
import os
import random
from pathlib import Path

import pytest

from memory import facts, search, search_index
from memory import text as text_rules
from memory import workspace as files
from tests.memory import search_reference as ref

VOCABULARY = (
    "sách đang đọc bệnh viện Hồ Chí Minh phở bò Đức Nguyễn họp khách hàng cà phê sữa đá "
    "chợ rau huyết áp ngủ chạy công viên mẹ điện nước tiếng Anh báo ô tô xe máy bảo hiểm "
    "the meeting notes project deadline coffee Anna blood pressure reading book docs "
    "docstring review deploy server backup report budget travel flight hotel dentist "
    "eco retreat invoice contract call doc an o ho 心跳 大同旅游 东京 서울 ソウル "
    # "book" starts more words than search.FEW_FORMS: an entry's words are then looked up
    # in a set, where fewer are looked for in its text
    "booking bookish booklet bookcase bookend bookmark bookshelf bookstore bookworm"
).split()
QUERY_WORDS = VOCABULARY + [
    "sach",
    "nguyen",
    "duc",
    "benh",
    "doc",
    "docs",
    "pho",
    "zzqx",
    "心",
    "旅游",
    "retr",
]
# A date lifts the notes of its days (SPEC §6.1), where an entry holding no query word is a
# hit too: a year holds more entries than the candidates, a month fewer.
DATE_QUERIES = ["2024", "2024 coffee", "2024 sách đọc", "2024-05", "May 2024 meeting", "2025 book"]


def _line(r: random.Random) -> str:
    return " ".join(r.choice(VOCABULARY) for _ in range(r.randint(2, 7)))


def _note(r: random.Random, day: dt.date) -> str:
    lines = [f"# {day.isoformat()}", ""]
    for _ in range(r.randint(2, 9)):
        roll = r.random()
        if roll < 0.6:
            lines.append(f"- {r.randint(0, 23):02d}:{r.randint(0, 59):02d} {_line(r)}")
        elif roll < 0.75:
            lines += [f"- {_line(r)}", f"  {_line(r)}"]  # a bullet continued
        elif roll < 0.9:
            lines += ["", _line(r), _line(r), _line(r), ""]  # a paragraph
        else:
            lines += ["", f"## {_line(r)}", ""]
    return "\n".join(lines) + "\n"


def _put(home: Path, rel: str, body: str, mtime: int) -> None:
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    os.utime(path, (mtime, mtime))


def generate(home: Path, seed: int) -> random.Random:
    r = random.Random(seed)
    base = dt.date(2024, 1, 1)
    stamp = 1_700_000_000
    for agent_dir in ("", "agents/helper"):
        prefix = f"{agent_dir}/" if agent_dir else ""
        for _ in range(40):
            day = base + dt.timedelta(days=r.randint(0, 500))
            name = day.isoformat() + (r.choice(["", "", "-1030", "-x"]))
            _put(home, f"{prefix}memory/{name}.md", _note(r, day), stamp + r.randint(0, 10**7))
        _put(home, f"{prefix}MEMORY.md", _note(r, base), stamp + r.randint(0, 10**7))
        same = stamp + 5_000_000  # two hand-kept files with the very same mtime
        _put(home, f"{prefix}memory/books.md", _note(r, base), same)
        _put(home, f"{prefix}memory/people/anna.md", _note(r, base), same)
        page = "\n".join(
            [
                "---",
                f"title: {_line(r)}",
                "kind: entity",
                "---",
                "",
                _line(r),
                "",
                text_rules.MACHINE_BLOCK_START,
                f"Links out: {_line(r)}",
                text_rules.MACHINE_BLOCK_END,
                _line(r),
                "",
            ]
        )
        _put(home, f"{prefix}memory/wiki/entities/page.md", page, stamp + r.randint(0, 10**7))
    # USER.md holds the same words: memory_search never finds it (SPEC §6.1), so every
    # comparison below also says it stays out of every agent's search.
    _put(home, "users/owner/USER.md", _note(r, base), stamp + r.randint(0, 10**7))
    for index in range(25):
        facts.save_fact(
            f"fact-{index}",
            description=_line(r),
            type="reference",
            body=_line(r) + "\n" + _line(r),
            written_by="owner",
            source="chat",
        )
        path = home / f"users/owner/facts/fact-{index}.md"
        os.utime(path, (stamp + index * 1000, stamp + index * 1000))
    return r


def _queries(r: random.Random, count: int) -> list[str]:
    return [" ".join(r.choice(QUERY_WORDS) for _ in range(r.randint(1, 4))) for _ in range(count)]


def _engine(query: str, agent, limit: int, include_user: bool = True) -> list[tuple]:
    return [
        (hit.path, hit.line, hit.end_line, hit.score, hit.weight, hit.text)
        for hit in search.search(query, agent=agent, limit=limit, include_user=include_user)
    ]


def _reference(query: str, home: Path, agent_dir: str, limit: int, include_user: bool = True):
    entries = ref.scope_entries(home, agent_dir, include_user=include_user)
    return [
        (f.path, f.first, f.last, f.score, f.weight, f.text)
        for f in ref.reference_search(query, entries, limit=limit)
    ]


def _compare(home, master, helper, queries) -> None:
    for query in queries:
        for agent, agent_dir in ((master, ""), (helper, "agents/helper")):
            for limit in (3, 12):
                assert _engine(query, agent, limit) == _reference(query, home, agent_dir, limit), (
                    query,
                    agent_dir,
                    limit,
                )
        assert _engine(query, master, 12, include_user=False) == _reference(
            query, home, "", 12, include_user=False
        ), query


@pytest.mark.parametrize("seed", [1, 2])
def test_the_index_finds_what_the_rules_find(master, helper_agent, workspace, settings, seed):
    settings.MEMORY_TIME_ZONE = "Asia/Ho_Chi_Minh"
    r = generate(workspace, seed)
    queries = _queries(r, 60)
    _compare(workspace, master, helper_agent, queries + DATE_QUERIES)

    # App writes: seen by the very next query.
    for _ in range(10):
        workspace_rel = f"memory/{dt.date(2024, 1, 1) + dt.timedelta(days=r.randint(0, 500))}.md"
        files.append(workspace_rel, f"- 12:00 {_line(r)}\n", create_with="# note\n\n")
    files.write("agents/helper/MEMORY.md", _note(r, dt.date(2025, 1, 1)))
    files.delete("memory/books.md")
    facts.forget_fact("fact-3")
    _compare(workspace, master, helper_agent, queries[:30])

    # Hand edits and deletes: seen after the reconcile (the bound is stated in settings).
    for path in list((workspace / "memory").glob("*.md"))[:8]:
        path.write_text(_note(r, dt.date(2024, 6, 1)), encoding="utf-8")
    (workspace / "memory/people/anna.md").unlink()
    _put(workspace, "memory/new-by-hand.md", _note(r, dt.date(2024, 6, 1)), 1_800_000_000)
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 0
    _compare(workspace, master, helper_agent, queries[30:])


def test_a_rebuilt_index_answers_the_same(master, helper_agent, workspace):
    r = generate(workspace, 3)
    queries = _queries(r, 20)
    before = [_engine(q, master, 12) for q in queries]
    report = search_index.build()
    assert report.files > 50 and report.entries > 400  # date headings are no entries
    assert [_engine(q, master, 12) for q in queries] == before


def test_entries_moved_to_make_room_are_found_as_before(
    master, helper_agent, workspace, monkeypatch
):
    """A file ranked between two others takes a slot between theirs; where none is left, the
    files around it move their entries to new slots (search_index._respace): search still
    finds exactly what the rules find, neighbours and all."""
    monkeypatch.setattr(search_index, "SLOT_GAP", 2)
    respaced = []
    respace = search_index._respace
    monkeypatch.setattr(
        search_index, "_respace", lambda *args: respaced.append(args) or respace(*args)
    )
    r = generate(workspace, 4)
    search_index.build()
    for suffix in "abcdefgh":  # one day: each between the last and the next day's note
        files.append(f"memory/2024-06-01-{suffix}.md", f"- 09:00 {_line(r)}\n", create_with="")
    _compare(workspace, master, helper_agent, _queries(r, 15))
    assert respaced
