"""memory/maintenance.py: what the worker's supervisor removes every five minutes, not
only at start-up (SPEC §18): the temp files of writes killed before their rename, once
older than two minutes (ws.STALE_TEMP_SECONDS), and an INDEX.md left behind its
facts."""

from __future__ import annotations

import os
import time

from memory import facts, maintenance
from memory import workspace as ws


def test_temp_files_of_killed_writes_older_than_two_minutes_go(workspace):
    notes = workspace / "memory"
    notes.mkdir()
    killed = notes / ".2026-11-30.md.0123456789abcdef.tmp"
    live = notes / ".MEMORY.md.fedcba9876543210.tmp"
    for path in (killed, live):
        path.write_text("half\n")
    assert ws.STALE_TEMP_SECONDS == 120
    old = time.time() - 130
    os.utime(killed, (old, old))
    os.utime(live, (time.time() - 30, time.time() - 30))
    assert maintenance.upkeep().temp_files_removed == ["memory/.2026-11-30.md.0123456789abcdef.tmp"]
    assert not killed.exists() and live.exists()


def test_an_index_behind_its_facts_is_read_right_and_then_written(workspace, db):
    facts.save_fact(
        "coffee", description="black", type="preference", body="", written_by="owner", source="web"
    )
    # A fact written as an approval writes it, the kill coming before its INDEX.md line.
    ws.write(
        facts.fact_path("tea"),
        facts.render_fact(
            "tea", description="green", type="preference", body="", written_by="m", source="x"
        ),
    )
    index = workspace / facts.INDEX_PATH
    assert "[tea]" not in index.read_text(encoding="utf-8")
    assert "- [tea](tea.md) (preference) — green" in facts.read_index()
    assert "[tea]" not in index.read_text(encoding="utf-8")  # reading wrote nothing
    assert maintenance.upkeep().index_healed
    assert "- [tea](tea.md) (preference) — green" in index.read_text(encoding="utf-8")
    assert maintenance.upkeep() == maintenance.Upkept([], False)
