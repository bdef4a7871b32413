"""No lost appends (SPEC §1, §5): memory_save from many threads and processes at once, and
appends racing full rewrites of the same note. Real threads, real processes."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from memory import notes, workspace
from memory.models import Agent, FileVersion
from tests.processes import test_database_url

AT = dt.datetime(2026, 11, 30, 9, 15, tzinfo=dt.UTC)
DAY = "2026-11-30"
HEADING = f"# {DAY}\n\n"
PROJECT = Path(__file__).resolve().parents[2]
# The writing threads record file versions in the database (memory.history): they need
# committed transactions, not the one a plain `db` test holds open.
pytestmark = pytest.mark.django_db(transaction=True)


def _lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("- ")]


def test_fifty_threads_lose_no_line_and_write_the_heading_once(master, workspace):
    threads, per_thread = 50, 20
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def save(t: int) -> None:
        try:
            barrier.wait()
            for i in range(per_thread):
                notes.memory_save(master, f"t{t}-{i}", now=AT)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    pool = [threading.Thread(target=save, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()

    assert errors == []
    text = (workspace / f"memory/{DAY}.md").read_text()
    assert text.startswith(HEADING)
    assert text.count(f"# {DAY}") == 1
    lines = _lines(text)
    assert sorted(lines) == sorted(
        f"- 09:15 t{t}-{i}" for t in range(threads) for i in range(per_thread)
    )
    # Each thread's own lines keep their order.
    for t in range(threads):
        mine = [line for line in lines if line.startswith(f"- 09:15 t{t}-")]
        assert mine == [f"- 09:15 t{t}-{i}" for i in range(per_thread)]
    assert text == HEADING + "".join(f"{line}\n" for line in lines)


CHILD = textwrap.dedent(
    """
    import datetime as dt, os, sys, time
    import django
    django.setup()
    from memory import notes
    from memory.models import Agent

    proc, count, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    # An unsaved row; the child's database is the test's (it records file versions).
    agent = Agent(id="master", name="Master", is_default=True)
    while not os.path.exists(go):
        time.sleep(0.005)
    at = dt.datetime(2026, 11, 30, 9, 15, tzinfo=dt.UTC)
    for i in range(count):
        notes.memory_save(agent, f"p{proc}-{i}", now=at)
    """
)


def _rewrite_keeping_lines(agent: Agent, revision: int) -> None:
    """What an editor does: read the note and write it back whole with one change (the
    heading), holding the note's lock so the read and the write see the same version."""
    rel = notes.note_path(agent, DAY)
    with workspace.locked(rel):
        current = workspace.read(rel) or HEADING
        first, _, rest = current.partition("\n")
        notes.write_note(agent, DAY, f"# {DAY} (rev {revision})\n{rest}")


@pytest.mark.parametrize("processes", [6])
def test_processes_lose_no_line_while_the_note_is_rewritten(master, workspace, processes):
    per_process = 150
    go = workspace.parent / "go"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memoryproject.settings",
        "DATABASE_URL": test_database_url(),
    }
    assert env["MY_AGENT_HOME"] == str(workspace)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(p), str(per_process), str(go)],
            cwd=PROJECT,
            env=env,
            stderr=subprocess.PIPE,
        )
        for p in range(processes)
    ]
    time.sleep(1.0)  # let every child reach the start line
    go.write_text("go")
    revision = 0
    # Full rewrites of the same note race the children's appends until they finish.
    while any(child.poll() is None for child in children):
        revision += 1
        _rewrite_keeping_lines(master, revision)
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err.decode()

    text = (workspace / f"memory/{DAY}.md").read_text()
    lines = _lines(text)
    assert sorted(lines) == sorted(
        f"- 09:15 p{p}-{i}" for p in range(processes) for i in range(per_process)
    )
    for p in range(processes):
        mine = [line for line in lines if line.startswith(f"- 09:15 p{p}-")]
        assert mine == [f"- 09:15 p{p}-{i}" for i in range(per_process)]
    assert text.count(f"# {DAY}") == 1
    assert revision > 1
    # Every append and every rewrite is a version, numbered without a gap, and the last
    # one holds exactly the file.
    path = notes.note_path(master, DAY)
    seqs = list(FileVersion.objects.filter(path=path).order_by("seq").values_list("seq", flat=True))
    appends = FileVersion.objects.filter(path=path, op="append").count()
    assert seqs == list(range(1, len(seqs) + 1))
    assert appends + 1 >= processes * per_process  # the first save creates the note
    from memory import history

    assert history.content(history.latest(path)) == (workspace / f"memory/{DAY}.md").read_bytes()


def _race(*actions) -> None:
    """Run the actions in threads released together by one barrier."""
    barrier = threading.Barrier(len(actions))

    def run(action) -> None:
        barrier.wait()
        action()

    pool = [threading.Thread(target=run, args=(action,)) for action in actions]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()


def test_an_append_racing_a_rewrite_is_never_lost(master, workspace):
    """Many rounds of one append against one full rewrite, started together."""
    rounds = 300
    for round_ in range(rounds):
        _race(
            lambda r=round_: notes.memory_save(master, f"r{r}", now=AT),
            lambda r=round_: _rewrite_keeping_lines(master, r),
        )
        text = (workspace / f"memory/{DAY}.md").read_text()
        assert f"- 09:15 r{round_}\n" in text, f"round {round_} lost its line"
        assert text.startswith(f"# {DAY}")
    lines = _lines((workspace / f"memory/{DAY}.md").read_text())
    assert lines == [f"- 09:15 r{r}" for r in range(rounds)]


def test_a_blind_rewrite_never_interleaves_with_an_append(master, workspace):
    """A rewrite that does not read first (write_note of a fixed text) may drop an append
    made before it — that is what replacing means — but the result is always exactly one
    of the two orders: the rewrite alone, or the rewrite followed by the appended line."""
    for round_ in range(200):
        notes.write_note(master, DAY, HEADING)
        new_text = f"# {DAY} (replaced {round_})\n"
        _race(
            lambda r=round_: notes.memory_save(master, f"r{r}", now=AT),
            lambda text=new_text: notes.write_note(master, DAY, text),
        )
        text = (workspace / f"memory/{DAY}.md").read_text()
        assert text in (new_text, f"{new_text}- 09:15 r{round_}\n"), text
