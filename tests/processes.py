"""Worker processes started together: each prints "ready" and waits for a file, so all of
them reach the code under test at the same moment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_together(
    commands: list[list[str]], go: Path, *, timeout: float = 120
) -> list[tuple[int, str, str]]:
    """Run `python <command>` for each command. Each must print "ready" and then wait
    until the file `go` exists; once all are ready, `go` is created. Returns (exit code,
    stdout, stderr) per process, in order. Processes still running after a failure are
    killed."""
    procs = [
        subprocess.Popen(
            [sys.executable, *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        go.write_text("go")
        outputs = [proc.communicate(timeout=timeout) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    return [(proc.returncode, out, err) for proc, (out, err) in zip(procs, outputs, strict=True)]


def test_database_url() -> str:
    """The URL of the test database this test runs on, for a process the test starts
    (`manage.py …` would otherwise open the real database of DATABASE_URL)."""
    from django.db import connection

    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


test_database_url.__test__ = False  # a helper, not a test
