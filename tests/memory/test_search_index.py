"""The search index's life (SPEC §6.1 "the index is a cache"; docs/search.md): generations
built beside the current one and switched to, never a file replaced under a reader; a
damaged or missing index answered around from the files and rebuilt; catch-up in short
write transactions; the index's files this user's only."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from pathlib import Path

from memory import search, search_index, search_keeper, search_store
from memory import workspace as files
from memory.models import Agent

MASTER = Agent(id="master", name="Master", is_default=True)  # no database needed
OLD = 1_600_000_000


def put(home: Path, rel: str, body: str, *, mtime: int = OLD) -> Path:
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


def texts(query: str) -> list[str]:
    return [hit.text for hit in search.search(query, agent=MASTER)]


def test_a_rebuild_is_a_new_generation_and_an_open_one_keeps_working(workspace):
    put(workspace, "memory/2020-01-01.md", "- medlar\n")
    assert texts("medlar") == ["- medlar"]
    old = search_index.get()
    first = old.generation

    report = search_index.build()  # as `manage.py memory_reindex` while the server runs
    assert report.generation != first
    assert search_store.current() == report.generation
    # The old generation was not removed under its reader, and reads whole and sound.
    assert old.db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert search_store.db_path(first).exists()
    # The next query moves this thread to the new one; then nobody holds the old one.
    assert texts("medlar") == ["- medlar"]
    assert search_index.get().generation == report.generation
    assert search_store.retire_unused() == [first]
    assert not search_store.db_path(first).exists()


def test_a_generation_held_by_another_connection_is_not_removed(workspace):
    put(workspace, "memory/2020-01-01.md", "- rowan\n")
    texts("rowan")
    search_index.forget_connections()
    held = search_index.open_current()  # another process's reader, in effect
    search_index.build()
    assert search_store.retire_unused() == []  # still leased
    assert held.db.execute("SELECT count(*) FROM files").fetchone() == (1,)
    held.close()
    assert len(search_store.retire_unused()) == 1


def test_a_truncated_index_is_answered_around_and_rebuilt(workspace, settings, monkeypatch):
    for day in range(1, 29):
        put(workspace, f"memory/2020-02-{day:02d}.md", f"- quince {day}\n- other words\n")
    expected = texts("quince")
    assert len(expected) == 12
    path = search_index.index_path()
    search_index.forget_connections()
    with open(path, "r+b") as handle:  # a crash, a full disk or a hand cut it short
        handle.truncate(os.path.getsize(path) // 3)

    # The host's keeper (another process) rebuilds it; this query does not wait for that.
    settings.MEMORY_SEARCH_KEEPER = "auto"
    monkeypatch.setattr(search_keeper, "ensure", lambda: None)
    assert texts("quince") == expected  # from the files: the same hits
    assert search_store.current() is None  # nobody uses the damaged one any more
    settings.MEMORY_SEARCH_KEEPER = "off"
    assert texts("quince") == expected  # built again (here, inline)
    assert search_index.get().db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_garbage_in_place_of_the_index_is_dropped(workspace):
    put(workspace, "memory/2020-01-01.md", "- sloe\n")
    texts("sloe")
    path = search_index.index_path()
    search_index.forget_connections()
    with open(path, "r+b") as handle:
        handle.seek(0)
        handle.write(b"not an sqlite file at all" * 100)
    assert texts("sloe") == ["- sloe"]
    assert search_index.index_path() != path


def test_an_index_built_for_other_rules_is_replaced(workspace):
    put(workspace, "memory/2020-01-01.md", "- damson\n")
    texts("damson")
    first = search_index.get().generation
    db = search_index.get().db
    db.execute("UPDATE meta SET value = 'older' WHERE key = 'version'")
    search_index.forget_connections()  # as a process started after it would
    assert texts("damson") == ["- damson"]
    assert search_index.get().generation != first


def test_a_killed_build_leaves_nothing_that_is_used(workspace):
    put(workspace, "memory/2020-01-01.md", "- bullace\n")
    texts("bullace")
    directory = search_store.store_dir()
    # What a build killed half-way leaves: a generation with its lock, never switched to.
    with search_store.build_lock(directory):
        held = search_store.new_generation(directory)
        with sqlite3.connect(held.path) as partial:
            partial.execute("CREATE TABLE half(x)")
        held.release()  # the process died: its lock is gone with it
    assert search_store.current() != held.generation
    assert texts("bullace") == ["- bullace"]
    assert held.generation in search_store.retire_unused()
    assert not held.path.exists()


def test_the_index_is_this_users_only(workspace):
    put(workspace, "memory/2020-01-01.md", "- cornel\n")
    texts("cornel")
    directory = search_store.store_dir()
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    for path in directory.iterdir():
        if path.is_file():
            assert stat.S_IMODE(os.stat(path).st_mode) & 0o077 == 0, path.name


def test_a_large_catch_up_never_holds_the_write_lock_for_long(workspace, settings):
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 3600
    put(workspace, "memory/2020-01-01.md", "- hawthorn\n")
    texts("hawthorn")
    body = "".join(f"- hawthorn berry line {n} with some more words\n" for n in range(40))
    paths = [f"memory/copied/{n:04d}.md" for n in range(1200)]
    for rel in paths:
        put(workspace, rel, body)
    files.record_changes(paths)  # what the keeper records for a folder copied in

    waits: list[float] = []
    refused: list[str] = []
    done = threading.Event()

    def writer() -> None:  # a query's own catch-up in another process, meanwhile
        other = search_index.open_current()
        try:
            while not done.is_set():
                started = time.perf_counter()
                try:
                    search_index.begin(other)
                except sqlite3.OperationalError as exc:
                    refused.append(str(exc))
                    continue
                waits.append(time.perf_counter() - started)
                other.db.execute("COMMIT")
                time.sleep(0.02)
        finally:
            other.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        search_index.apply_changes(search_index.get(), background=True)  # as the keeper does
    finally:
        done.set()
        thread.join()
    assert refused == [] and waits and max(waits) < 2.0, (refused, max(waits or [0]))
    assert len(search.search("hawthorn berry", agent=MASTER, limit=100)) == 100


def test_a_query_during_a_keepers_backlog_applies_its_own_latest_change(workspace, settings):
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 3600
    put(workspace, "memory/2020-01-01.md", "- elder\n")
    texts("elder")
    paths = [f"memory/copied/{n:04d}.md" for n in range(search_index.INLINE_PATHS + 50)]
    for rel in paths:
        put(workspace, rel, "- other words\n")
    files.record_changes(paths)  # a backlog the keeper is working through
    files.write("agents/helper/MEMORY.md", "- unrelated\n")
    files.write("memory/today.md", "- elderflower cordial\n")  # an app write just now

    index = search_index.get()
    search_store.write_state({"watch": "inotify"}, search_store.store_dir())  # a live keeper
    search_index.catch_up(index, scopes={"", search_index.EXTRA_SCOPE_DIR})
    assert index.db.execute(
        "SELECT count(*) FROM files WHERE path = 'memory/today.md'"
    ).fetchone() == (1,)
    # The backlog's position stays for the keeper (it is not this query's to pay for).
    end = files.changes_position()
    assert index.meta("changes") != f"{end[0]}:{end[1]}"


def test_an_idle_process_lets_go_of_a_rebuilt_generation(workspace, monkeypatch):
    monkeypatch.setattr(search_index, "SWEEP_SECONDS", 0.1)
    put(workspace, "memory/2020-01-01.md", "- sorb\n")
    assert texts("sorb") == ["- sorb"]  # its connection goes back to the process's pool
    search_index.forget_connections()
    search_index.checkin(search_index.checkout())
    first = search_store.current()
    search_index.build()  # memory_reindex in another process; this one stays idle
    deadline = time.monotonic() + 10
    while first not in search_store.retire_unused() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not search_store.db_path(first).exists()


def _segments(db: sqlite3.Connection) -> dict[str, int]:
    return {table: search_index.segments(db, table) for table in search_index.fts_tables(db)}


def _small_flushes(monkeypatch) -> None:
    """FTS5 writes a b-tree whenever its pending words pass `hashsize` (1 MB by default):
    a few KB here, so a small workspace builds in many b-trees, as 10× does in 1 MB ones."""
    create = search_index._create_entries

    def create_small(db, scope_id):
        create(db, scope_id)
        db.execute(f"INSERT INTO e{scope_id}(e{scope_id}, rank) VALUES('hashsize', 4096)")

    monkeypatch.setattr(search_index, "_create_entries", create_small)


def test_the_build_leaves_one_b_tree_a_table(workspace, monkeypatch):
    _small_flushes(monkeypatch)
    for n in range(120):
        body = f"- quince {n} rowan{n} elder{n}\n"
        put(workspace, f"memory/2020-01-{n % 28 + 1:02d}-{n}.md", body)
    # Filled the same way but not merged (an index built in memory for one query):
    unmerged = search_index.from_files([MASTER.dir])
    assert max(_segments(unmerged.db).values()) > 1

    search_index.build()
    assert set(_segments(search_index.get().db).values()) == {1}
    assert len(search.search("quince", agent=MASTER, limit=100)) == 100


def test_compact_merges_what_writes_add_and_the_hits_stay(workspace):
    put(workspace, "memory/2020-01-01.md", "- quince tart\n")
    texts("quince")
    index = search_index.get()
    for n in range(12):  # twelve writes, each its own transaction: a b-tree each
        put(workspace, f"memory/2020-02-{n + 1:02d}.md", f"- quince jelly {n}\n")
        search_index.refresh_paths(index, [f"memory/2020-02-{n + 1:02d}.md"])
    table = index.scope(MASTER.dir)[1]
    before = search_index.segments(index.db, table)
    hits = texts("quince")
    assert before > 4

    assert search_index.compact(index, seconds=0) is True  # no time given: work left
    assert search_index.compact(index, seconds=10) is False
    assert search_index.segments(index.db, table) < before
    assert search_index.segments(index.db, table) <= 2
    index.db.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")  # or raises
    assert texts("quince") == hits
    assert search_index.compact(index, seconds=10) is False  # nothing left: no write
