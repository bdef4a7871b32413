"""SPEC §13 Model providers: with no model configured a run is recorded as skipped, never a
crash or a fake answer."""

from __future__ import annotations

import os
from pathlib import Path

from tests.spec.steps import consolidate


def test_it_records_a_run_as_skipped_without_a_model(
    helper_agent, owner_client, settings, owner_today, runs_inline
):
    settings.MEMORY_LLM_MODEL = ""
    settings.MEMORY_LLM_BASE_URL = ""
    home = Path(settings.MY_AGENT_HOME)
    (home / "agents/helper/MEMORY.md").write_text("- a\n", encoding="utf-8")
    os.utime(home / "agents/helper/MEMORY.md", (1_600_000_000, 1_600_000_000))

    (home / f"agents/helper/memory/{owner_today}.md").write_text("- new\n", encoding="utf-8")
    run = consolidate(owner_client, "helper")
    assert run["status"] == "skipped"
    assert "no model configured" in run["summary"]
    assert (home / "agents/helper/MEMORY.md").read_text(encoding="utf-8") == "- a\n"
