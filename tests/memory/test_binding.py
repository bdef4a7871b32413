"""The workspace binding (memory.binding): the owner's time zone recorded with it (SPEC
§4.2), so every process — whatever its TZ or MEMORY_TIME_ZONE — writes one moment to one
day's note."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import pytest
from django.core.management import call_command

from memory import binding, clock
from memory.models import WorkspaceBinding
from tests.processes import test_database_url


def test_the_first_start_records_the_configured_zone(db, workspace, settings):
    settings.MEMORY_TIME_ZONE = "Asia/Ho_Chi_Minh"
    binding.check_workspace()
    assert WorkspaceBinding.objects.get(pk=1).time_zone == "Asia/Ho_Chi_Minh"
    settings.MEMORY_TIME_ZONE = "America/Los_Angeles"  # a process started elsewhere
    assert binding.time_zone() == "Asia/Ho_Chi_Minh"
    assert clock.zone_name() == "Asia/Ho_Chi_Minh"


def test_a_binding_made_before_zones_were_recorded_takes_the_first_askers(db, workspace, settings):
    WorkspaceBinding.objects.create(
        pk=1, path=str(workspace.resolve()), claimed_at="2026-01-01T00:00Z", time_zone=""
    )
    settings.MEMORY_TIME_ZONE = "Europe/Berlin"
    assert binding.time_zone() == "Europe/Berlin"
    binding.forget_checks()
    settings.MEMORY_TIME_ZONE = "UTC"
    assert binding.time_zone() == "Europe/Berlin"


def test_memory_workspace_changes_the_recorded_zone(db, workspace, settings):
    settings.MEMORY_TIME_ZONE = "UTC"
    binding.check_workspace()
    out = io.StringIO()
    call_command("memory_workspace", "--time-zone", "Asia/Tokyo", stdout=out)
    assert "now Asia/Tokyo" in out.getvalue()
    assert clock.zone_name() == "Asia/Tokyo"
    with pytest.raises(Exception, match="not a time zone"):
        call_command("memory_workspace", "--time-zone", "Mars/Olympus")


def _save_at(workspace, instant: str, zone: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="memoryproject.settings",
        MY_AGENT_HOME=str(workspace),
        DATABASE_URL=test_database_url(),
        MEMORY_TIME_ZONE=zone,
        TZ=zone,
        MEMORY_SEARCH_KEEPER="off",
    )
    program = "import django\ndjango.setup()\n" + textwrap.dedent(
        f"""
        import datetime as dt
        from memory import notes
        from memory.models import Agent
        agent = Agent(id="master", name="Master", is_default=True)
        saved = notes.memory_save(agent, "from {zone}", now=dt.datetime.fromisoformat("{instant}"))
        print(saved.day)
        """
    )
    return subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.django_db(transaction=True)
def test_two_processes_in_other_zones_write_one_moment_to_one_note(workspace, settings):
    settings.MEMORY_TIME_ZONE = "Asia/Ho_Chi_Minh"
    binding.check_workspace()  # the server's first start records its zone
    instant = "2026-12-01T20:31:00+00:00"  # 03:31 on 2 December in Ho Chi Minh City
    days = []
    for zone in ("America/Los_Angeles", "UTC"):  # a stdio client's process, another host
        done = _save_at(workspace, instant, zone)
        assert done.returncode == 0, done.stderr
        days.append(done.stdout.strip())
    assert days == ["2026-12-02", "2026-12-02"]
    note = (workspace / "memory/2026-12-02.md").read_text(encoding="utf-8")
    assert "- 03:31 from America/Los_Angeles\n" in note and "- 03:31 from UTC\n" in note
    assert not (workspace / "memory/2026-12-01.md").exists()
