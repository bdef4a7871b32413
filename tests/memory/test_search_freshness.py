"""Freshness of the search index (SPEC §6.1; docs/decisions.md, "Search"):

- a change made through the app is in the very next query, on every process and host —
  a host being a search index of its own (MEMORY_SEARCH_DIR) over the shared workspace;
- a change made by hand is found within MEMORY_SEARCH_RECONCILE_SECONDS, in the background
  while queries come, by the query itself after an idle spell;
- and a query never returns a line that is no longer in the file, even before that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memory import notes, search, search_index
from memory import workspace as files
from memory.models import Agent
from memory.workspace import changes
from tests.processes import test_database_url

OLD = 1_600_000_000
MASTER = Agent(id="master", name="Master", is_default=True)  # no database needed


def put(home: Path, rel: str, body: str, *, mtime: int = OLD) -> Path:
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


def texts(query: str, agent=MASTER) -> list[str]:
    return [hit.text for hit in search.search(query, agent=agent)]


@pytest.fixture
def hosts(workspace, tmp_path, settings):
    """Two hosts over one workspace: `use("a")` / `use("b")` points this process at that
    host's own index directory, as a process on that host would be."""

    def use(name: str) -> None:
        settings.MEMORY_SEARCH_DIR = str(tmp_path / f"host-{name}")

    return use


def test_an_app_write_on_one_host_is_in_the_next_query_on_another(workspace, hosts, settings):
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 3600  # no reconcile can be what finds it
    put(workspace, "memory/2020-01-01.md", "- persimmon\n")
    hosts("a")
    assert texts("persimmon") == ["- persimmon"]
    hosts("b")
    assert texts("persimmon") == ["- persimmon"]

    hosts("a")  # written on host a …
    files.append("memory/2020-01-01.md", "- persimmon tart\n")
    files.write("memory/fruit.md", "- persimmon tree\n")
    hosts("b")  # … in the next query on host b
    # What each host finds, whatever the order (length counts in the rank, SPEC §6.1).
    assert sorted(texts("persimmon")) == ["- persimmon", "- persimmon tart", "- persimmon tree"]
    hosts("a")
    files.delete("memory/fruit.md")
    hosts("b")
    assert sorted(texts("persimmon")) == ["- persimmon", "- persimmon tart"]


def _run(code: str, workspace: Path, settings) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="memoryproject.settings",
        MY_AGENT_HOME=str(workspace),
        MEMORY_SEARCH_DIR=str(settings.MEMORY_SEARCH_DIR),
        MEMORY_SEARCH_RECONCILE_SECONDS="3600",
        DATABASE_URL=test_database_url(),
    )
    program = "import django\ndjango.setup()\n" + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.django_db(transaction=True)
def test_an_app_write_in_another_process_is_in_the_next_query_here(workspace, settings):
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 3600
    put(workspace, "memory/2020-01-01.md", "- loquat\n")
    assert texts("loquat") == ["- loquat"]

    done = _run(
        """
        from memory import notes
        from memory.models import Agent
        agent = Agent(id="master", name="Master", is_default=True)
        for n in range(20):
            notes.memory_save(agent, f"loquat {n} from another process")
        """,
        workspace,
        settings,
    )
    assert done.returncode == 0, done.stderr

    found = texts("loquat another process")
    assert len(found) == 12 and all("from another process" in text for text in found)
    # All twenty writes are seen; the line missing two of the words ranks after them (SPEC §6.1).
    every = [hit.text for hit in search.search("loquat another process", agent=MASTER, limit=100)]
    assert sum("from another process" in text for text in every) == 20
    assert every[20:] == ["- loquat"]


@pytest.mark.django_db(transaction=True)
def test_a_query_in_another_process_sees_a_write_made_here(workspace, settings):
    put(workspace, "memory/2020-01-01.md", "- tamarind\n")
    assert texts("tamarind") == ["- tamarind"]  # the index exists and is current
    notes.memory_save(MASTER, "tamarind paste")

    asked = _run(
        """
        import json
        from memory import search
        from memory.models import Agent
        agent = Agent(id="master", name="Master", is_default=True)
        print(json.dumps([hit.text for hit in search.search("tamarind", agent=agent)]))
        """,
        workspace,
        settings,
    )
    assert asked.returncode == 0, asked.stderr
    # Both lines; the shorter ranks first (length counts, SPEC §6.1), so order is not asked.
    found = json.loads(asked.stdout)
    assert len(found) == 2 and "- tamarind" in found
    assert [text for text in found if text != "- tamarind"][0].endswith(" tamarind paste")


def test_a_line_removed_by_hand_is_never_returned_even_before_the_bound(workspace, settings):
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 3600
    note = put(workspace, "memory/2020-01-01.md", "- sapodilla\n- other\n")
    assert texts("sapodilla") == ["- sapodilla"]
    before = os.stat(note)

    # In place, same size, mtime put back: only ctime tells (and the text).
    with open(note, "r+", encoding="utf-8") as handle:
        handle.write("- marmalade")
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(note)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )

    assert texts("sapodilla") == []
    # The file was read again for that hit, so what it holds now is known too.
    assert texts("marmalade") == ["- marmalade"]


def test_a_racy_same_size_edit_within_one_tick_is_caught_by_its_hash(workspace, settings):
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 3600
    note = workspace / "memory/2020-01-01.md"
    files.write("memory/2020-01-01.md", "- jackfruit\n")
    assert texts("jackfruit") == ["- jackfruit"]
    stat = os.stat(note)
    # Rewritten by hand with every field of the key restored — as if within one tick of
    # a coarse clock. Only the content hash of a file read while racy can tell.
    with open(note, "r+", encoding="utf-8") as handle:
        handle.write("- pineapple")
    os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    row = (
        search_index.get()
        .db.execute("SELECT racy FROM files WHERE path = ?", ("memory/2020-01-01.md",))
        .fetchone()
    )
    assert row == (1,)
    assert texts("jackfruit") == []
    assert texts("pineapple") == ["- pineapple"]


def test_a_hand_edit_is_found_in_the_background_while_queries_come(workspace, settings):
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 1.5
    put(workspace, "memory/2020-01-01.md", "- soursop\n")
    put(workspace, "memory/2020-01-02.md", "- nothing\n")
    assert texts("soursop") == ["- soursop"]
    put(workspace, "memory/2020-01-02.md", "- soursop juice\n")

    time.sleep(0.8)  # past half the bound: the next query starts a reconcile …
    started = time.perf_counter()
    texts("soursop")
    assert time.perf_counter() - started < 1  # … and does not wait for it
    search_index.wait_for_background()
    assert sorted(texts("soursop")) == ["- soursop", "- soursop juice"]


def test_after_an_idle_spell_the_query_reconciles_first(workspace, settings):
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 0.3
    put(workspace, "memory/2020-01-01.md", "- cherimoya\n")
    assert texts("cherimoya") == ["- cherimoya"]
    put(workspace, "memory/books.md", "- cherimoya, a novel\n")
    (workspace / "memory/2020-01-01.md").unlink()
    time.sleep(0.4)
    assert texts("cherimoya") == ["- cherimoya, a novel"]


def test_a_host_that_fell_behind_the_change_log_reconciles(workspace, settings, monkeypatch):
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 3600
    monkeypatch.setattr(changes, "CHANGES_SEGMENT_BYTES", 64)
    monkeypatch.setattr(changes, "CHANGES_KEEP", 2)
    put(workspace, "memory/2020-01-01.md", "- guanabana\n")
    assert texts("guanabana") == ["- guanabana"]
    for n in range(30):  # many segments: the one this index stopped in is removed
        files.append(f"memory/2021-01-{n % 28 + 1:02d}.md", f"- guanabana {n}\n")
    segments = sorted((workspace / files.CHANGES_DIR).glob("*.log"))
    assert len(segments) == 2

    assert len(search.search("guanabana", agent=MASTER, limit=100)) == 31


def test_memory_reindex_rebuilds_from_the_files_and_says_what_it_cost(workspace, capsys):
    from django.core.management import call_command

    put(workspace, "memory/2020-01-01.md", "# 2020-01-01\n\n- feijoa\n")
    put(workspace, "MEMORY.md", "- feijoa jam\n")
    assert len(texts("feijoa")) == 2
    search_index.index_path().unlink()

    call_command("memory_reindex")
    out = capsys.readouterr().out
    # The note's date heading is no entry (SPEC §6.1): two files, two entries.
    assert "search index rebuilt:" in out and "2 files, 2 entries" in out and "MB on disk" in out
    assert len(texts("feijoa")) == 2
    call_command("memory_reindex", "--if-missing")
    assert "up to date" in capsys.readouterr().out


def test_the_index_is_never_put_inside_the_workspace(workspace, settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.MEMORY_SEARCH_DIR = str(workspace / "var")
    with pytest.raises(ImproperlyConfigured, match="outside the workspace"):
        search.search("anything", agent=MASTER)
    assert not (workspace / "var").exists()


def test_a_hit_is_not_read_through_a_directory_turned_into_a_symlink(workspace, tmp_path, settings):
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 3600
    put(workspace, "memory/people/anna.md", "- anna likes figs\n")
    assert texts("figs") == ["- anna likes figs"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "anna.md").write_text("- anna likes figs\n", encoding="utf-8")
    (workspace / "memory/people/anna.md").unlink()
    (workspace / "memory/people").rmdir()
    os.symlink(outside, workspace / "memory/people")

    assert texts("figs") == []
    assert files.read_keyed("memory/people/anna.md") is None


def test_memory_md_is_searched_only_while_no_memory_md_beside_it(workspace, settings):
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 3600
    put(workspace, "memory.md", "- quandong in the lower-case file\n")
    assert texts("quandong") == ["- quandong in the lower-case file"]
    files.write("MEMORY.md", "- quandong in MEMORY.md\n")  # now MEMORY.md is the file
    assert texts("quandong") == ["- quandong in MEMORY.md"]
    files.delete("MEMORY.md")
    assert texts("quandong") == ["- quandong in the lower-case file"]


def test_a_note_with_an_odd_name_ranks_by_its_day(workspace):
    # Lines of one length, so the tie is decided by the day (SPEC §6.1).
    put(workspace, "memory/2026-01-05_1030.md", "- bilberry odd\n", mtime=OLD)
    put(workspace, "memory/2025-06-01.md", "- bilberry plain\n", mtime=OLD + 10**8)
    hits = search.search("bilberry", agent=MASTER)
    assert [(hit.path, hit.date) for hit in hits] == [
        ("memory/2026-01-05_1030.md", "2026-01-05"),
        ("memory/2025-06-01.md", "2025-06-01"),
    ]
