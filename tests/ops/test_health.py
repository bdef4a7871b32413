"""SPEC §18: `GET /healthz` and `python manage.py memory_health` report the web
process, the database, whether the workspace can take writes, the worker heartbeat's age
and the pending proposals; 503 / exit 1 when something is wrong; never a write."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from memory.models import WorkerBeat
from proposals import actions
from tests.processes import test_database_url

ROOT = Path(__file__).resolve().parents[2]


def beat(age: float = 1.0, name: str = "host-a:100") -> WorkerBeat:
    now = timezone.now()
    return WorkerBeat.objects.create(
        name=name,
        host=name.split(":")[0],
        pid=100,
        broker="orm",
        started_at=now - dt.timedelta(hours=1),
        beat_at=now - dt.timedelta(seconds=age),
        restarts=2,
    )


def snapshot(home: Path) -> dict[str, tuple[int, int, int]]:
    return {
        str(path.relative_to(home)): (
            path.stat().st_mtime_ns,
            path.stat().st_size,
            path.stat().st_mode,
        )
        for path in home.rglob("*")
    }


@pytest.mark.django_db
def test_healthy_is_200_with_every_check(master, helper_agent, workspace):
    beat(age=3)
    actions.propose(
        "agent_memory", agent=helper_agent, target="MEMORY.md", payload={"lines": ["a"]}
    )
    before = snapshot(workspace)

    response = Client().get("/healthz")

    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert body["web"] == {"ok": True}
    assert body["database"]["ok"] and body["database"]["unapplied_migrations"] == 0
    assert body["workspace"]["writable"] is True and body["workspace"]["free_bytes"] > 0
    assert body["worker"]["clusters_alive"] == 1
    assert 2 <= body["worker"]["heartbeat_age_seconds"] < 30
    assert body["proposals"] == {"ok": True, "pending": 1}
    assert "clusters" not in body["worker"]  # no host names for anonymous probes
    assert snapshot(workspace) == before  # looked at, never written


@pytest.mark.django_db
def test_no_worker_or_a_stale_one_is_503(master):
    assert Client().get("/healthz").status_code == 503
    beat(age=120)

    response = Client().get("/healthz")

    assert response.status_code == 503
    worker = response.json()["worker"]
    assert worker["ok"] is False and worker["clusters_alive"] == 0
    assert worker["heartbeat_age_seconds"] >= 120


@pytest.mark.django_db
def test_only_get_and_head(master):
    beat()
    assert Client().head("/healthz").status_code == 200
    assert Client().post("/healthz").status_code == 405


@pytest.mark.django_db
def test_a_read_only_workspace_is_unhealthy(master, workspace, tmp_path):
    """A real read-only mount (tmpfs, ro) where this machine lets us mount, else a
    directory without write permission (as a user other than root)."""
    beat()
    target = tmp_path / "ro-home"
    target.mkdir()
    mounted = False
    if os.geteuid() == 0:
        mounted = (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(target)]
            ).returncode
            == 0
        )
    if not mounted:
        if os.geteuid() == 0:
            pytest.skip("running as root where mount is refused: no way to make it read-only")
        target.chmod(0o555)
    from django.conf import settings

    settings.MY_AGENT_HOME = str(target)
    try:
        response = Client().get("/healthz")
        print(f"\nread-only workspace by {'a ro tmpfs mount' if mounted else 'chmod 0555'}")
        assert response.status_code == 503
        assert response.json()["workspace"]["writable"] is False
        assert response.json()["workspace"]["read_only_mount"] is mounted
    finally:
        settings.MY_AGENT_HOME = str(workspace)
        if mounted:
            subprocess.run(["umount", str(target)], check=True)
        else:
            target.chmod(0o755)


def run_health(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "memory_health", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.django_db(transaction=True)
def test_the_command_prints_the_report_and_its_exit_code_says_it(master, workspace):
    env = {**os.environ, "DATABASE_URL": test_database_url(), "MY_AGENT_HOME": str(workspace)}

    sick = run_health(env)
    assert sick.returncode == 1
    assert "FAIL worker: heartbeat_age_seconds=None" in sick.stdout
    assert sick.stdout.strip().endswith("NOT healthy")

    beat(age=2, name="worker-host:4242")
    well = run_health(env)
    assert well.returncode == 0, well.stdout
    assert "ok   database: vendor=" in well.stdout
    assert "cluster worker-host:4242 (orm): last beat" in well.stdout
    assert well.stdout.strip().endswith("healthy")

    import json

    assert json.loads(run_health(env, "--json").stdout)["worker"]["clusters_alive"] == 1


def test_an_unreachable_database_fails_the_command(tmp_path):
    env = {
        **os.environ,
        "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
        "MY_AGENT_HOME": str(tmp_path),
    }

    result = run_health(env)

    assert result.returncode == 1
    assert "FAIL database: vendor=postgresql, error=OperationalError" in result.stdout
