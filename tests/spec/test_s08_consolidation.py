"""SPEC §8 Consolidation: starting a run over REST (202, 409 while one runs), what a run
does with notes and a MEMORY.md it cannot read, and the files it leaves."""

from __future__ import annotations

import os
import stat

import pytest

from tests.spec.shapes import RUN_KEYS
from tests.spec.steps import consolidate


@pytest.fixture
def latin1(workspace, master, owner_today):
    """A hand-edited fact, USER.md, MEMORY.md and today's note, each with a latin-1 byte."""
    (workspace / "users/owner/facts").mkdir(parents=True, exist_ok=True)
    (workspace / "users/owner/USER.md").write_bytes(b"Caf\xe9 owner\n")
    (workspace / "users/owner/facts/cafe.md").write_bytes(
        b"---\nname: cafe\ndescription: caf\xe9 noir\ntype: preference\nwritten_by: owner\n"
        b"source: web\nupdated: 2026-11-01\n---\n\nNo sugar \xe9.\n"
    )
    (workspace / "MEMORY.md").write_bytes(b"- likes caf\xe9\n")
    day = owner_today.isoformat()
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / f"{day}.md").write_bytes(f"# {day}\n\n- 08:00 caf".encode() + b"\xe9\n")
    return day


def test_a_consolidation_names_the_note_it_could_not_read_and_goes_on(
    latin1, workspace, master, owner_client, fake_llm, runs_inline
):
    (workspace / "MEMORY.md").write_text("- likes coffee\n")
    # Today's session note: the first consolidation reads the days since MEMORY.md changed.
    (workspace / f"memory/{latin1}-0900.md").write_text(f"# {latin1}\n\n- 08:00 readable\n")
    fake_llm.script({"memory": "- likes coffee\n- readable\n", "reasons": []}, {"proposals": []})
    run = consolidate(owner_client, "master")
    assert run["status"] == "succeeded", run["summary"]
    assert f"left out memory/{latin1}.md: it has bytes that are not UTF-8 text" in run["reasons"]
    # The model read the readable note and not the other.
    prompt = fake_llm.prompts()[0]
    assert "readable" in prompt and "08:00 caf" not in prompt


def test_a_consolidation_refuses_a_memory_md_that_is_not_utf8(
    latin1, master, owner_client, fake_llm, runs_inline
):
    run = consolidate(owner_client, "master")
    assert run["status"] == "failed"
    assert "MEMORY.md has bytes that are not UTF-8" in run["summary"]
    assert fake_llm.prompts() == []


def test_a_consolidation_keeps_memory_md_readable_by_others(workspace, master, owner_client):
    (workspace / "MEMORY.md").write_text("- old\n")
    os.chmod(workspace / "MEMORY.md", 0o644)
    owner_client.put("/api/agents/master/memory", {"body": "- new\n"})
    assert stat.S_IMODE(os.stat(workspace / "MEMORY.md").st_mode) == 0o644


def test_it_answers_202_with_a_run_and_409_while_one_runs(owner_client, helper_agent, workspace):
    first = owner_client.post("/api/agents/helper/memory/consolidate")
    assert first.status_code == 202
    assert {"id", "status"} <= set(first.json()["run"])
    run = owner_client.get(f"/api/runs/{first.json()['run']['id']}").json()
    assert RUN_KEYS <= set(run)
    if run["status"] == "running":
        assert owner_client.post("/api/agents/helper/memory/consolidate").status_code == 409
        assert owner_client.post("/api/agents/helper/memory/wiki/compile").status_code == 409


def test_the_first_consolidation_reads_the_notes_since_memory_md_last_changed(
    workspace, master, owner_client, fake_llm, runs_inline, owner_today
):
    """An existing workspace: months of notes, and a MEMORY.md written long after them.
    The first consolidation reads what happened since MEMORY.md last changed, not the
    oldest notes; no later one reaches back before what the first read."""
    import datetime as dt
    import time

    def note(days_ago: int, text: str) -> str:
        day = (owner_today - dt.timedelta(days=days_ago)).isoformat()
        (workspace / "memory" / f"{day}.md").write_text(f"# {day}\n\n- 09:00 {text}\n")
        return day

    (workspace / "memory").mkdir()
    old = [note(days_ago, f"old news {days_ago}") for days_ago in (40, 39, 38)]
    (workspace / "MEMORY.md").write_text("- written after the old notes\n")
    changed = time.time() - 5 * 86400
    os.utime(workspace / "MEMORY.md", (changed, changed))
    recent = note(3, "recent news")
    fake_llm.script({"memory": "- one\n", "reasons": []}, {"proposals": []}, {"pages": []})
    first = consolidate(owner_client, "master")
    assert first["status"] == "succeeded", first["summary"]
    prompt = fake_llm.prompts()[0]
    assert f"memory/{recent}.md" in prompt and "recent news" in prompt
    assert not any(day in prompt for day in old) and "old news" not in prompt
    # A later run: a new note is read; the old ones never turn up as new.
    today = note(0, "today's news")
    fake_llm.script({"memory": "- two\n", "reasons": []}, {"proposals": []}, {"pages": []})
    second = consolidate(owner_client, "master")
    assert second["status"] == "succeeded", second["summary"]
    later = [p for p in fake_llm.prompts() if "today's news" in p]
    assert later and f"memory/{today}.md" in later[0] and "old news" not in later[0]


def test_a_first_consolidation_with_no_note_since_memory_md_changed_is_skipped(
    workspace, master, owner_client, fake_llm, runs_inline
):
    (workspace / "memory").mkdir()
    (workspace / "memory/2026-03-10.md").write_text("# 2026-03-10\n\n- 09:00 March\n")
    (workspace / "MEMORY.md").write_text("- written after March\n")
    run = consolidate(owner_client, "master")
    assert run["status"] == "skipped"
    assert run["summary"].startswith("no daily notes to read since ")
    assert fake_llm.prompts() == []
