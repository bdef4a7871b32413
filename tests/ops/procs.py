"""Real processes for the process-level tests: a `memory_worker` cluster on the test
database, its members by role, a probe task, and waiting with a deadline."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def children(pid: int) -> list[int]:
    """Direct children of `pid` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[1]) == pid:
            out.append(int(entry))
    return sorted(out)


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(check: Callable[[], Any], *, seconds: float, what: str, every: float = 0.2) -> Any:
    """Call `check` until it returns something truthy; AssertionError after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds:.0f} s")
        time.sleep(every)


class Worker:
    """`python manage.py memory_worker` in its own session, logging to a file."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.log_path = log
        self._log = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "memory_worker"],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def sentinel(self) -> int | None:
        kids = children(self.pid)
        return kids[0] if kids else None

    def members(self) -> dict[str, list[int]]:
        """The running cluster's processes by role: sentinel, worker, monitor, pusher
        (the roles from django-q2's own start-up lines)."""
        sentinel = self.sentinel()
        if sentinel is None:
            return {}
        roles: dict[int, str] = {}
        for pattern, role in (
            (r"ready for work at (\d+)", "worker"),
            (r"monitoring at (\d+)", "monitor"),
            (r"pushing tasks at (\d+)", "pusher"),
        ):
            for pid in re.findall(pattern, self.log()):
                roles[int(pid)] = role
        found: dict[str, list[int]] = {"sentinel": [sentinel]}
        for pid in children(sentinel):
            if pid in roles:
                found.setdefault(roles[pid], []).append(pid)
        return found

    def ready(self, workers: int) -> dict[str, list[int]] | None:
        members = self.members()
        if len(members.get("worker", [])) == workers and members.get("monitor"):
            if members.get("pusher") and "running." in self.log():
                return members
        return None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                pass
        for pid in [self.pid, *(self.members().get("sentinel", []))]:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self._log.close()


def probe(seconds: float = 60) -> float:
    """Queue a trivial django-q2 task and wait until a cluster has processed it (its
    result saved). Returns the seconds it took; AssertionError past `seconds`."""
    from django_q.models import Task
    from django_q.tasks import async_task

    started = time.monotonic()
    task_id = async_task("math.floor", 2.5)
    wait_for(
        lambda: Task.objects.filter(id=task_id).exists(),
        seconds=seconds,
        what=f"probe task {task_id} processed",
    )
    return time.monotonic() - started


def free_port(host: str = "127.0.0.1") -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class RedisServer:
    """A throwaway `redis-server` (Debian's package), no persistence."""

    def __init__(
        self,
        workdir: Path,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        prefix: list[str] | None = None,
    ) -> None:
        import shutil

        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self.host, self.port = host, port or free_port(host)
        workdir.mkdir(parents=True, exist_ok=True)
        self._log = (workdir / "redis.log").open("w")
        self.proc = subprocess.Popen(
            [
                *(prefix or []),
                binary,
                "--bind",
                host,
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(workdir),
                "--protected-mode",
                "no",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        import redis

        client = redis.Redis(host=host, port=self.port, socket_connect_timeout=1)

        def up() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        wait_for(up, seconds=30, what="redis-server up")

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._log.close()
