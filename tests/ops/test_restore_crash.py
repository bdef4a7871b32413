"""SPEC §7, a restore killed at any point: the file and its history agree after a restart.
A real process restoring a version is SIGKILLed at each point of the restore — the intent
committed, the temp file written, the file replaced before its version is recorded, the
version recorded before the intent is removed, before the refresh — then the server's
start-up (`manage.py memory_init`) runs, and the file holds exactly its latest version's
text, with nothing left to settle."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ops.procs import ROOT

SCRIPT = Path(__file__).with_name("restore_crash.py")
POINTS = ["intent", "temp", "replaced", "recorded", "refresh"]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("restore-crash")
    (base / "home").mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "DATABASE_URL": f"sqlite:///{base / 'db.sqlite3'}",
        "MY_AGENT_HOME": str(base / "home"),
        "SECRET_KEY": "restore-crash-secret-key-not-for-production",
    }
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "memory_init")
    versions = json.loads(run(env, "setup").stdout)
    return {"env": env, "versions": versions, "home": base / "home"}


def manage(env: dict, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def run(env: dict, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out


def kill_while_restoring(env: dict, version: int, point: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "restore", str(version), point],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline().strip()
        assert line == "stopped", proc.stderr.read()
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("point", POINTS)
def test_a_restore_killed_at_any_point_leaves_file_and_history_in_agreement(deployment, point):
    env = deployment["env"]
    before = json.loads(run(env, "check").stdout)
    # A version whose text the file does not hold now (restoring its own text is 409).
    version = next(pk for pk, text in deployment["versions"] if text and text != before["file"])

    kill_while_restoring(env, version, point)
    manage(env, "memory_init")  # the restart

    after = json.loads(run(env, "check").stdout)
    assert after["file"] == after["latest"], after
    assert after["intents"] == 0
    if after["file"] != before["file"]:  # the restore had reached the disk: it says so
        assert after["op"] == "restore", after
    else:
        assert after["latest"] == before["latest"]
