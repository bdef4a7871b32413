"""`python manage.py memory_doctor` (docs/decisions.md, "OpenClaw workspaces"): on a workspace of
each OpenClaw shape it says the layout, the prompt files and their sizes against the caps, what it
ignores and why, and what start-up would create — and changes nothing, not even a lock file."""

from __future__ import annotations

import io
import json
import os

import pytest
from django.core.management import call_command

from memory import clock
from tests.openclaw_workspace import big_note, build


def everything(root) -> dict[str, object]:
    """Every entry below root with its bytes (files), target (links) or nothing (dirs)."""
    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            found[rel] = ("dir",)
        else:
            found[rel] = (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_mode)
    return found


def doctor(*args: str) -> str:
    out = io.StringIO()
    call_command("memory_doctor", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("shape", ["vi", "en", "zh"])
def test_it_reports_each_shape_and_changes_nothing(workspace, master, shape):
    built = build(workspace, shape, today=clock.today())
    before = everything(workspace)
    text = doctor()
    assert everything(workspace) == before
    assert "Layout: an OpenClaw workspace, used as it is" in text
    assert "USER.md at the root" in text
    assert "USER.md                  USER.md" in text  # the root file is the user's USER.md
    assert "a persona file: not memory" in text
    assert "memory/.draft.md                         hidden" in text
    assert "memory/synced.md                         a symbolic link: never followed" in text
    assert "memory/scan-latin1.md                    not UTF-8 from byte 3" in text
    assert "memory/photo.jpg                         not Markdown (.md)" in text
    agent_dir = built.agents[0]
    assert f"Agent folder {agent_dir}/: no agent yet" in text
    assert "users/owner/facts/ (an empty folder for the shared facts)" in text
    assert "Nothing was changed." in text
    if shape == "vi":
        assert "memory.md stands for MEMORY.md" in text
        assert "MEMORY.md (empty)" not in text  # never beside memory.md
    if shape == "en":
        assert "odd names, read as notes of their day: 2026-01-05_1030.md" in text
        assert "not read as a note: 2026-02-30 is not a real date" in text
        assert "OpenClaw memory-wiki page(s)" in text
        assert "Wiki vault: 4 page(s) (concepts 1, entities 1, sources 2)" in text


def test_it_shows_the_context_before_and_after_the_caps(workspace, master):
    build(workspace, "en", today=clock.today())
    big_note(workspace, clock.today(), 3_700_000)
    report = json.loads(doctor("--json"))
    (agent,) = [a for a in report["agents"] if a["known"]]
    assert agent["pre_turn_before"] > 3_600_000
    assert agent["pre_turn_after"] <= 30_000
    today_row = [row for row in agent["prompt"] if row["label"] == f"memory/{clock.today()}.md"]
    assert today_row[0]["chars"] > 3_600_000
    assert "over the cap 20,000: cut with …" in doctor()


def test_it_reports_extra_paths_and_a_bad_user_file_setting(workspace, master, settings, tmp_path):
    build(workspace, "zh", today=clock.today())
    (tmp_path / "team").mkdir()
    settings.MEMORY_EXTRA_PATHS = [str(tmp_path / "team"), str(tmp_path / "missing")]
    settings.MEMORY_USER_FILE = "../outside.md"
    text = doctor()
    assert f"{tmp_path / 'team'}: shown as extra/team/" in text
    assert f"{tmp_path / 'missing'}: does not exist" in text
    assert "MEMORY_USER_FILE:" in text


def test_on_this_apps_own_workspace_it_says_so(workspace, master):
    (workspace / "users/owner/facts").mkdir(parents=True)
    (workspace / "users/owner/USER.md").write_text("me\n")
    (workspace / "memory").mkdir()
    (workspace / "MEMORY.md").write_text("- a\n")
    text = doctor()
    assert "Layout: this app's workspace" in text
    assert "USER.md                  users/owner/USER.md" in text
    assert "Start-up (make run → memory_init) would create:\n  .memory-locks/" in text


def test_after_start_up_the_apps_own_folders_are_not_reported_as_ignored(workspace, master):
    build(workspace, "vi", today=clock.today())
    assert ".memory-state/ (derived state, ignored by git)" in doctor()
    call_command("memory_init", stdout=io.StringIO())
    text = doctor()
    assert (workspace / ".memory-state").is_dir()
    assert ".memory-state" not in text.split("Ignored, and why:")[1]
    assert ".memory-state/" not in text.split("would create:")[1]
