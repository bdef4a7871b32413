"""INDEX.md changed by its lines (SPEC §2): exact after every write through the app,
regenerated whole when it does not match the facts, hand edits of the facts taken in within
MEMORY_RECONCILE_SECONDS — and a fact write reads no other fact."""

from __future__ import annotations

import os
import threading

import pytest

from memory import facts
from memory import workspace as ws

FIELDS = {"type": "preference", "body": "", "written_by": "owner", "source": "chat"}


def _save(name: str, description: str) -> None:
    facts.save_fact(name, description=description, **FIELDS)


def _index(home) -> str:
    return (home / "users/owner/facts/INDEX.md").read_text(encoding="utf-8")


def _expected() -> str:
    """INDEX.md as a regeneration from every fact file would write it."""
    return facts.index_text(facts.list_facts())


def _by_hand(home, name: str, description: str, *, type: str = "preference") -> None:
    text = facts.render_fact(
        name, description=description, type=type, body="", written_by="owner", source="chat"
    )
    (home / f"users/owner/facts/{name}.md").write_text(text, encoding="utf-8")


def _edit_in_place(path, old: str, new: str) -> None:
    """A hand edit that leaves the size, the mtime and the directory as they were."""
    before = os.stat(path)
    path.write_text(path.read_text().replace(old, new), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.fixture
def no_reconcile(settings):
    """Hand edits of fact files are only looked for after an hour: what the tests see is
    what the cheap checks on every write find."""
    settings.MEMORY_RECONCILE_SECONDS = 3600


def test_a_write_changes_its_line_and_keeps_the_index_sorted(workspace, no_reconcile):
    for name in ["mango", "apple", "zebra", "kiwi"]:
        _save(name, f"about {name}")
    _save("kiwi", "green, changed")
    facts.forget_fact("apple")
    assert _index(workspace) == (
        "- [kiwi](kiwi.md) (preference) — green, changed\n"
        "- [mango](mango.md) (preference) — about mango\n"
        "- [zebra](zebra.md) (preference) — about zebra\n"
    )
    assert _index(workspace) == _expected()


def test_a_fact_write_reads_no_other_fact(workspace, no_reconcile, monkeypatch):
    for index in range(30):
        _save(f"fact-{index:02d}", f"number {index}")
    read = []
    original = ws.read

    def counting(rel):
        read.append(rel)
        return original(rel)

    monkeypatch.setattr(ws, "read", counting)
    _save("fact-07", "seven, again")
    fact_files = [rel for rel in read if rel.startswith("users/owner/facts/fact-")]
    assert fact_files == []  # the new text is the one written, INDEX.md is spliced
    assert _index(workspace) == _expected()


def test_a_hand_edit_of_index_md_is_replaced_by_a_regeneration(workspace, no_reconcile):
    _save("coffee", "black")
    _save("tea", "green")
    (workspace / "users/owner/facts/INDEX.md").write_text("- my own list\n", encoding="utf-8")
    _save("water", "still")
    assert _index(workspace) == _expected()
    assert "my own list" not in _index(workspace)


def test_a_same_size_hand_edit_of_index_md_is_caught_by_its_hash(workspace, no_reconcile):
    _save("coffee", "black")
    _save("tea", "green")
    path = workspace / "users/owner/facts/INDEX.md"
    before = os.stat(path)
    path.write_text(path.read_text().replace("black", "white"), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    _save("tea", "green")
    assert "black" in _index(workspace) and "white" not in _index(workspace)


def test_facts_added_or_deleted_by_hand_show_at_the_next_write(workspace, no_reconcile):
    _save("coffee", "black")
    _by_hand(workspace, "added", "made by hand")
    _save("tea", "green")
    assert "- [added](added.md) (preference) — made by hand\n" in _index(workspace)
    (workspace / "users/owner/facts/added.md").unlink()
    _save("tea", "green again")
    assert "added" not in _index(workspace)
    assert _index(workspace) == _expected()


def test_a_fact_edited_by_hand_in_place_shows_within_the_reconcile_bound(workspace, settings):
    settings.MEMORY_RECONCILE_SECONDS = 3600
    _save("coffee", "black")
    _save("tea", "green")
    _edit_in_place(workspace / "users/owner/facts/coffee.md", "black", "white")
    _save("tea", "green, 2")
    assert "— black" in _index(workspace)  # within the bound: not looked for yet
    settings.MEMORY_RECONCILE_SECONDS = 0  # the bound has passed
    _save("tea", "green, 3")
    assert "— white" in _index(workspace)
    assert _index(workspace) == _expected()


def test_a_lost_or_broken_state_file_costs_one_regeneration(workspace, no_reconcile):
    _save("coffee", "black")
    _by_hand(workspace, "hidden", "edited while the state was lost")
    (workspace / facts.INDEX_STATE_PATH).write_text("{not json", encoding="utf-8")
    (workspace / "users/owner/facts/coffee.md").write_text(
        facts.render_fact("coffee", description="white", **FIELDS), encoding="utf-8"
    )
    _save("tea", "green")
    assert _index(workspace) == _expected()
    assert "— white" in _index(workspace) and "hidden" in _index(workspace)


def test_the_last_fact_forgotten_removes_index_md(workspace, no_reconcile):
    _save("coffee", "black")
    facts.forget_fact("coffee")
    assert not (workspace / "users/owner/facts/INDEX.md").exists()
    _save("tea", "green")
    assert _index(workspace) == "- [tea](tea.md) (preference) — green\n"


def test_an_approved_proposal_updates_its_line(workspace, no_reconcile):
    _save("coffee", "black")
    # A proposal writes the file itself, then asks for the index (kinds.after_write).
    ws.write(facts.fact_path("coffee"), facts.render_fact("coffee", description="white", **FIELDS))
    facts.update_index(["coffee"])
    assert _index(workspace) == "- [coffee](coffee.md) (preference) — white\n"


def test_concurrent_writers_leave_an_index_that_matches_the_facts(workspace, no_reconcile):
    errors: list[BaseException] = []

    def writer(number: int) -> None:
        try:
            for round_ in range(5):
                _save(f"writer-{number}-{round_ % 3}", f"round {round_}")
                if round_ == 3:
                    facts.forget_fact(f"writer-{number}-0")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(number,)) for number in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert _index(workspace) == _expected()
    assert len(_index(workspace).splitlines()) == 12


def test_a_hand_edit_shows_by_the_background_reconcile_without_a_write(workspace, settings):
    # What the worker's supervisor runs every half MEMORY_RECONCILE_SECONDS (SPEC §2).
    settings.MEMORY_RECONCILE_SECONDS = 10
    _save("coffee", "black")
    _save("tea", "green")
    _edit_in_place(workspace / "users/owner/facts/coffee.md", "black", "white")
    # The writes above reconciled less than half the bound ago: nothing to do yet.
    assert facts.reconcile_index() is False
    assert "— black" in _index(workspace)
    settings.MEMORY_RECONCILE_SECONDS = 0  # half the bound has passed
    assert facts.reconcile_index() is True
    assert "— white" in _index(workspace)
    assert _index(workspace) == _expected()
    assert facts.reconcile_index() is False  # nothing changed since: INDEX.md stays


def test_a_write_after_the_background_reconcile_stats_no_fact(workspace, settings, monkeypatch):
    settings.MEMORY_RECONCILE_SECONDS = 10
    for index in range(5):
        _save(f"fact-{index}", f"number {index}")
    settings.MEMORY_RECONCILE_SECONDS = 0
    facts.reconcile_index()
    settings.MEMORY_RECONCILE_SECONDS = 10
    scans = []
    real = ws.scan_files
    monkeypatch.setattr(ws, "scan_files", lambda *a, **k: scans.append(a) or real(*a, **k))
    _save("fact-9", "number 9")
    assert scans == []  # the reconcile ran moments ago: this write looks at its own line
    assert _index(workspace) == _expected()


def test_the_background_reconcile_creates_nothing_without_facts(workspace):
    assert facts.reconcile_index() is False
    assert not (workspace / "users/owner/facts").exists()
    assert not (workspace / facts.INDEX_STATE_PATH).exists()
