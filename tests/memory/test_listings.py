"""Listings that cost one page (docs/decisions.md, "Facts, notes and the prompt"): notes and facts
paged from one listing of names, counts without a stat, memory_save looking only at the note's last
byte, and the workspace's batch write."""

from __future__ import annotations

import datetime as dt
import os
import random

import pytest

from memory import facts, notes, reading
from memory import workspace as ws
from memory.errors import DiskFull, InvalidInput
from memory.listing import Pages
from memory.text import note_day
from memory.workspace import batches


def _note(home, name: str, text: str = "x\n") -> None:
    (home / "memory").mkdir(exist_ok=True)
    (home / "memory" / name).write_text(text, encoding="utf-8")


@pytest.fixture
def notes_dir(master, workspace):
    for name in [
        "2026-11-28.md",
        "2026-11-30.md",
        "2026-11-30-1030.md",
        "2026-11-29-evening.md",
        "2026-02-30.md",  # shaped like a note, but not a day: a hand-kept file
        "facebook-books.md",
        "README.md",
    ]:
        _note(workspace, name)
    os.symlink(workspace / "memory" / "2026-11-28.md", workspace / "memory" / "2026-11-27.md")
    (workspace / "memory" / "2026-11-26.md").mkdir()  # a directory is not a note
    (workspace / "memory" / ".2026-11-25.md").write_text("hidden")
    return workspace / "memory"


def test_notes_are_listed_newest_first_and_paged_with_their_total(master, notes_dir):
    names = [info.name for info in notes.list_notes(master)]
    assert names == [
        "2026-11-30-1030.md",
        "2026-11-30.md",
        "2026-11-29-evening.md",
        "2026-11-28.md",
    ]
    page = notes.notes_listing(master, offset=1, limit=2)
    assert ([info.name for info in page.items], page.total) == (names[1:3], 4)
    items, total = notes.notes_listing(master, offset=10, limit=5)
    assert (items, total) == ([], 4)
    first = notes.notes_listing(master, limit=1).items[0]
    assert (first.day, first.size) == (dt.date(2026, 11, 30), 2)
    assert first.modified.tzinfo is not None


def test_hand_kept_files_follow_the_notes_by_name(master, notes_dir):
    listing = notes.notes_listing(master, include_other=True, offset=3)
    assert [(info.name, info.day) for info in listing.items] == [
        ("2026-11-28.md", dt.date(2026, 11, 28)),
        ("2026-02-30.md", None),
        ("README.md", None),
        ("facebook-books.md", None),
    ]
    assert listing.total == 7


def test_counts_match_the_listings(master, notes_dir):
    assert notes.count_notes(master) == len(notes.list_notes(master)) == 4
    assert notes.count_notes(master, include_other=True) == 7


@pytest.mark.parametrize("offset, limit", [(-1, None), (0, -5), ("1", None), (0, 2.5), (True, 1)])
def test_a_bad_page_is_refused(master, notes_dir, offset, limit):
    with pytest.raises(InvalidInput):
        notes.notes_listing(master, offset=offset, limit=limit)


def test_note_names_are_told_apart_exactly_as_note_day_does(master, workspace):
    # The listing classifies tens of thousands of names without a call each; it must
    # agree with memory.text.note_day, the one rule for what a note's name is.
    rng = random.Random(17)
    names = {"2026-11-30.md", "2026-02-29.md", "2024-02-29.md", "0000-01-01.md"}
    names |= {"2026-13-01.md", "2026-11-30-.md", "2026-11-30-A.md", "2026-01-05_1030.md"}
    names |= {"2026-03-22-zhiji-E001.md", "2026-11-30-a-b.md", "2026-11-30__x.md"}
    for _ in range(2000):
        year, month, day = rng.randint(0, 9999), rng.randint(0, 19), rng.randint(0, 39)
        suffix = rng.choice(["", "-a", "-1030", "_1030", "-x.y", "_b", "-", "-Ok-2", "--z"])
        names.add(f"{year:04d}-{month:02d}-{day:02d}{suffix}.md")
    for name in names:
        _note(workspace, name)
    expected = {name: parsed[0] for name in names if (parsed := note_day(name))}
    listed = notes.list_notes(master, include_other=True)
    assert {info.name: info.day for info in listed if info.day} == expected
    assert {info.name for info in listed if info.day is None} == names - expected.keys()
    assert notes.count_notes(master) == len(expected)
    days = [(info.day, info.name[:-3]) for info in listed if info.day]
    assert days == sorted(days, reverse=True)


def test_the_notes_block_reads_only_the_newest_days(master, workspace):
    for index in range(30):
        day = dt.date(2026, 11, 1) + dt.timedelta(days=index)
        _note(workspace, f"{day.isoformat()}.md", f"# {day}\n\n- 10:00 day {index}\n")
    block = notes.read_notes_block(master, days=3)
    assert block.days == [dt.date(2026, 11, 30), dt.date(2026, 11, 29), dt.date(2026, 11, 28)]


def test_stats_count_notes_and_facts_without_listing_them(owner_client, master, notes_dir):
    facts.save_fact(
        "coffee", description="black", type="preference", body="", written_by="owner",
        source="chat",
    )  # fmt: skip
    stats = owner_client.get("/api/stats").json()
    assert (stats["notes"], stats["facts"]) == (4, 1)


def test_facts_are_paged_by_name(workspace):
    for name in ["pear", "apple", "fig"]:
        facts.save_fact(
            name, description=name, type="preference", body="", written_by="owner", source="chat"
        )
    items, total = facts.facts_listing(offset=1, limit=1)
    assert ([fact.name for fact in items], total) == (["fig"], 3)
    assert facts.count_facts() == 3


# --- a directory's names, kept while it is unchanged ---------------------------------------


def _counting_list_names(monkeypatch) -> list[str]:
    from memory.workspace import scans

    calls: list[str] = []
    real = scans.list_names

    def counting(rel_dir: str, **kwargs):
        calls.append(rel_dir)
        return real(rel_dir, **kwargs)

    monkeypatch.setattr(scans, "list_names", counting)
    return calls


def test_names_are_listed_again_only_when_the_directory_changed(master, notes_dir, monkeypatch):
    from memory.workspace import scans

    monkeypatch.setattr(scans, "RACY_NS", -1)  # every listing settled: kept at once
    calls = _counting_list_names(monkeypatch)
    assert notes.count_notes(master) == 4
    assert notes.notes_listing(master, limit=2).total == 4
    assert notes.count_notes(master) == 4
    assert calls == ["memory"]  # one listing for all three
    _note(notes_dir.parent, "2026-12-01.md")  # by hand
    assert notes.notes_listing(master, limit=1).items[0].name == "2026-12-01.md"
    assert notes.count_notes(master) == 5
    (notes_dir / "2026-11-28.md").unlink()
    assert notes.count_notes(master) == 4
    assert calls == ["memory"] * 3


def test_a_listing_taken_while_the_directory_may_still_change_is_not_kept(
    master, notes_dir, monkeypatch
):
    # The directory was changed a moment ago: a change within the same timestamp tick
    # would leave its stamp as it is, so what was listed is used once and not kept.
    calls = _counting_list_names(monkeypatch)
    for _ in range(3):
        assert notes.count_notes(master) == 4
    assert calls == ["memory"] * 3


def test_a_note_written_by_hand_shows_in_the_list_at_once(master, notes_dir, monkeypatch):
    from memory.workspace import scans

    monkeypatch.setattr(scans, "RACY_NS", -1)
    before = notes.count_notes(master)
    _note(notes_dir.parent, "2026-12-02.md")
    assert notes.count_notes(master) == before + 1
    assert notes.notes_listing(master, limit=1).items[0].name == "2026-12-02.md"


def test_the_facts_count_follows_the_directory(workspace, monkeypatch):
    from memory.workspace import scans

    monkeypatch.setattr(scans, "RACY_NS", -1)
    for name in ["pear", "apple"]:
        facts.save_fact(
            name, description=name, type="preference", body="", written_by="owner", source="chat"
        )
    assert facts.count_facts() == 2
    (workspace / "users" / "owner" / "facts" / "apple.md").unlink()  # by hand
    assert facts.count_facts() == 1
    assert [fact.name for fact in facts.list_facts()] == ["pear"]


def test_names_that_came_and_went_update_the_sorted_names_as_sorting_all_would():
    rng = random.Random(5)
    pool = [f"2026-{m:02d}-{d:02d}{sfx}.md" for m in range(1, 13) for d in range(1, 32)
            for sfx in ("", "-1030", "_x")] + ["README.md", "a.md", "2026-02-30-x.md"]  # fmt: skip
    names = set(rng.sample(pool, 300))
    value = reading._sort_names(sorted(names))
    fact_pool = [f"fact-{n}.md" for n in range(400)] + ["INDEX.md", "Not A Slug.md"]
    fact_names = set(rng.sample(fact_pool, 200))
    fact_value = facts._sorted_fact_names(sorted(fact_names))
    for _ in range(50):
        added = frozenset(rng.sample(sorted(set(pool) - names), rng.randint(0, 5)))
        removed = frozenset(rng.sample(sorted(names), rng.randint(0, 5)))
        names = (names - removed) | added
        value = reading._resort_names(value, added, removed)
        assert value == reading._sort_names(sorted(names))
        added = frozenset(rng.sample(sorted(set(fact_pool) - fact_names), rng.randint(0, 5)))
        removed = frozenset(rng.sample(sorted(fact_names), rng.randint(0, 5)))
        fact_names = (fact_names - removed) | added
        fact_value = facts._resorted_fact_names(fact_value, added, removed)
        assert fact_value == facts._sorted_fact_names(sorted(fact_names))


def test_pages_answer_a_listing_as_a_sequence_reading_only_the_page(master, notes_dir):
    asked: list[tuple[int, int | None]] = []

    def fetch(offset: int, limit: int | None):
        asked.append((offset, limit))
        return notes.notes_listing(master, offset=offset, limit=limit)

    pages = Pages(fetch)
    assert len(pages) == 4
    assert [info.name for info in pages[1:3]] == ["2026-11-30.md", "2026-11-29-evening.md"]
    assert pages[-1].name == "2026-11-28.md"
    assert pages[10:20] == []
    assert asked == [(0, 0), (1, 2), (3, 1), (4, 0)]


def test_every_file_is_paged_in_the_order_of_the_whole_list(master, notes_dir):
    (notes_dir / "people").mkdir()
    (notes_dir / "people" / "lan.md").write_text("# Lan\n", encoding="utf-8")
    whole = [row.path for row in reading.memory_files(master)]
    assert whole[:4] == [
        "memory/2026-11-30-1030.md",
        "memory/2026-11-30.md",
        "memory/2026-11-29-evening.md",
        "memory/2026-11-28.md",
    ]
    for offset in range(len(whole) + 1):
        page, counts = reading.memory_files_listing(master, offset=offset, limit=3)
        assert [row.path for row in page.items] == whole[offset : offset + 3]
        assert page.total == len(whole)
    assert (counts["note"], counts["file"]) == (4, 4)


# --- memory_save looks at the last byte only ------------------------------------------------


def test_memory_save_appends_to_a_note_it_could_not_decode(master, workspace):
    # The old append read the whole note as UTF-8 first: a stray byte made it fail.
    today = notes.memory_save(master, "first").name
    path = workspace / "memory" / today
    path.write_bytes(path.read_bytes() + b"broken \xff byte, no newline")
    notes.memory_save(master, "second")
    data = path.read_bytes()
    assert data.endswith(b"broken \xff byte, no newline\n" + data.splitlines()[-1] + b"\n")
    assert data.splitlines()[-1].endswith(b" second")


def test_memory_save_reads_no_text_of_the_note(master, workspace, monkeypatch):
    notes.memory_save(master, "first")
    monkeypatch.setattr(ws, "read", lambda rel: pytest.fail(f"read {rel}"))
    notes.memory_save(master, "second")


def test_an_empty_note_gets_its_heading(master, workspace):
    day = notes.memory_save(master, "first").day
    path = workspace / "memory" / f"{day.isoformat()}.md"
    path.write_text("", encoding="utf-8")
    notes.memory_save(master, "again")
    assert path.read_text(encoding="utf-8").startswith(f"# {day.isoformat()}\n\n- ")


# --- the batch write -----------------------------------------------------------------------


def test_write_many_changes_nothing_when_one_file_cannot_be_written(workspace, monkeypatch):
    ws.write("a.md", "old a\n")
    ws.write("sub/b.md", "old b\n")
    real_write = os.write
    calls = []

    def full_disk(fd, data):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(DiskFull):
        ws.write_many({"a.md": "new a\n", "sub/b.md": "new b\n"})
    monkeypatch.undo()
    assert (ws.read("a.md"), ws.read("sub/b.md")) == ("old a\n", "old b\n")
    leftovers = [n for _, _, files in os.walk(workspace) for n in files if n.endswith(".tmp")]
    assert leftovers == []


def test_write_many_leaves_a_file_changed_since_its_base_alone(workspace):
    ws.write("a.md", "read\n")
    base = ws.hash_text("read\n")
    ws.write("a.md", "changed by hand\n")
    written = ws.write_many(
        {"a.md": "mine\n", "b.md": "new\n"}, base_hashes={"a.md": base, "b.md": ws.ABSENT}
    )
    assert written == ["b.md"]
    assert (ws.read("a.md"), ws.read("b.md")) == ("changed by hand\n", "new\n")


def test_write_many_writes_large_batches_in_groups(workspace, monkeypatch):
    monkeypatch.setattr(batches, "WRITE_MANY_GROUP", 3)
    texts = {f"many/{index}.md": f"{index}\n" for index in range(10)}
    assert ws.write_many(texts) == list(texts)
    assert all(ws.read(rel) == text for rel, text in texts.items())


def test_list_names_and_file_infos_skip_what_list_files_skips(workspace):
    (workspace / "d").mkdir()
    (workspace / "d" / "a.md").write_text("a")
    (workspace / "d" / ".h.md").write_text("h")
    (workspace / "d" / "c.txt").write_text("c")
    (workspace / "d" / "sub.md").mkdir()
    os.symlink(workspace / "d" / "a.md", workspace / "d" / "link.md")
    assert ws.list_names("d") == ["a.md"] == [i.path[2:] for i in ws.list_files("d")]
    assert [info.path for info in ws.file_infos("d", ["a.md", "link.md", "gone.md"])] == ["d/a.md"]
    assert ws.list_names("missing") == []


def test_write_many_keeps_each_files_mode_line_endings_and_bom(workspace):
    crlf, bom = workspace / "a.md", workspace / "sub" / "b.md"
    crlf.write_bytes(b"old\r\nlines\r\n")
    crlf.chmod(0o640)
    bom.parent.mkdir()
    bom.write_bytes(b"\xef\xbb\xbfold b\n")

    ws.write_many({"a.md": "new\nlines\n", "sub/b.md": "new b\n", "c.md": "fresh\n"})

    assert crlf.read_bytes() == b"new\r\nlines\r\n"
    assert crlf.stat().st_mode & 0o777 == 0o640
    assert bom.read_bytes() == b"\xef\xbb\xbfnew b\n"
    assert (workspace / "c.md").read_bytes() == b"fresh\n"
    assert (workspace / "c.md").stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
