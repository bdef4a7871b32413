"""The production server as `make run` starts it — `manage.py migrate`, `memory_init`, then
`bin/serve` (uvicorn + `manage.py memory_worker`) — on its own SQLite database and
workspace, for tests that attack it over real HTTP and kill its processes."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.ops.procs import ROOT, alive, children, free_port, wait_for

BIN = Path(sys.executable).parent


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class Deployment:
    def __init__(self, base: Path, *, web_workers: int = 3, q_workers: int = 2, **env: str):
        self.base = base
        self.home = base / "home"
        self.home.mkdir(parents=True, exist_ok=True)  # a test may lay the notes first
        self.db_path = base / "db.sqlite3"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/root"),
            "DATABASE_URL": f"sqlite:///{self.db_path}",
            "MY_AGENT_HOME": str(self.home),
            "SECRET_KEY": "fault-suite-secret-key-not-for-production",
            "PORT": str(self.port),
            "BIN": str(BIN),
            "WEB_WORKERS": str(web_workers),
            "Q_WORKERS": str(q_workers),
            "LOG_LEVEL": "INFO",
            **env,
        }
        self.manage("migrate", "--noinput", "-v0")
        self.manage("memory_init", f"--port={self.port}")
        self.owner_key = self.manage("memory_token", "owner").strip()
        self.log_path = base / "serve.log"
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            ["bin/serve"],
            cwd=ROOT,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(self.healthy, seconds=90, what="the server healthy")

    # -- commands and HTTP --

    def manage(self, *args: str) -> str:
        out = subprocess.run(
            [str(BIN / "python"), "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    def client(self, key: str | None = None, timeout: float = 15) -> httpx.Client:
        headers = {"Authorization": f"Token {key or self.owner_key}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def db(self) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)

    # -- processes --

    def _child(self, word: str) -> int | None:
        for pid in children(self.proc.pid):
            if word in cmdline(pid):
                return pid
        return None

    def web_master(self) -> int | None:
        return self._child("memoryproject.web")

    def supervisor(self) -> int | None:
        return self._child("memory_worker")

    def web_workers(self) -> list[int]:
        master = self.web_master()
        return children(master) if master else []

    def cluster(self) -> dict[str, list[int]]:
        """The worker cluster's processes by role (from django-q2's start-up lines)."""
        supervisor = self.supervisor()
        sentinels = children(supervisor) if supervisor else []
        if not sentinels:
            return {}
        log = self.log_path.read_text(errors="replace")
        roles: dict[int, str] = {}
        for pattern, role in (
            (r"ready for work at (\d+)", "worker"),
            (r"monitoring at (\d+)", "monitor"),
            (r"pushing tasks at (\d+)", "pusher"),
        ):
            for pid in re.findall(pattern, log):
                roles[int(pid)] = role
        found: dict[str, list[int]] = {"sentinel": sentinels[:1]}
        for pid in children(sentinels[0]):
            if pid in roles:
                found.setdefault(roles[pid], []).append(pid)
        return found

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._log.close()


def kill(pid: int | None) -> bool:
    if not pid or not alive(pid):
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def since(start: float) -> float:
    return time.monotonic() - start
