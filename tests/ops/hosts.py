"""Hosts for the multi-host test: Linux network namespaces joined by a bridge (`ip netns`
+ veth) when this machine allows it (root, and `ip netns add` works), else plain
processes on loopback. Each host runs its own processes; `kill()` SIGKILLs everything on
it at once, as a machine that loses power."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

from tests.ops.procs import free_port


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def netns_possible() -> tuple[bool, str]:
    if os.geteuid() != 0:
        return False, "not root"
    if shutil.which("ip") is None:
        return False, "no `ip` command"
    probe = f"mhprobe{os.getpid()}"
    result = _ip("netns", "add", probe, check=False)
    if result.returncode != 0:
        return False, f"`ip netns add` refused: {result.stderr.strip()}"
    _ip("netns", "delete", probe, check=False)
    return True, ""


class Host:
    def __init__(self, name: str, address: str, netns: str | None) -> None:
        self.name = name
        self.address = address
        self.netns = netns
        self.procs: list[subprocess.Popen] = []

    def port(self, wanted: int) -> int:
        """Its own address has every port free in a namespace; on loopback hosts share one."""
        return wanted if self.netns else free_port(self.address)

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.netns] if self.netns else []

    def start(
        self,
        command: list[str],
        *,
        log: Path,
        env: dict[str, str],
        cwd: Path | None = None,
        user: str | None = None,
    ) -> subprocess.Popen:
        runas = ["runuser", "-u", user, "--"] if user else []
        handle = log.open("w")
        proc = subprocess.Popen(
            [*self.prefix(), *runas, *command],
            cwd=cwd,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        handle.close()
        self.procs.append(proc)
        return proc

    def run(self, command: list[str], **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run([*self.prefix(), *command], **kwargs)

    def pids(self) -> list[int]:
        if self.netns:
            out = _ip("netns", "pids", self.netns, check=False).stdout.split()
            return [int(pid) for pid in out]
        return [proc.pid for proc in self.procs if proc.poll() is None]

    def kill(self) -> int:
        """SIGKILL every process on the host (its namespace's, or its process groups)."""
        killed = 0
        for _ in range(3):  # processes forked while we kill
            for pid in self.pids():
                try:
                    if self.netns:
                        os.kill(pid, signal.SIGKILL)
                    else:
                        os.killpg(pid, signal.SIGKILL)
                    killed += 1
                except (ProcessLookupError, PermissionError):
                    pass
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        return killed


class Network:
    """`hosts` by name; `gateway` is this (the test's) side's address."""

    def __init__(self, names: list[str]) -> None:
        possible, self.why_not = netns_possible()
        self.netns = possible
        self.hosts: dict[str, Host] = {}
        self._links: list[str] = []
        tag = os.getpid() % 100000
        if not possible:
            self.gateway = "127.0.0.1"
            for name in names:
                self.hosts[name] = Host(name, "127.0.0.1", None)
            return
        subnet = f"10.{200 + os.getpid() % 50}.{(os.getpid() // 50) % 250}"
        self.bridge = f"mb{tag}"
        self.gateway = f"{subnet}.1"
        _ip("link", "add", self.bridge, "type", "bridge")
        self._links.append(self.bridge)
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for index, name in enumerate(names):
            netns = f"mh{tag}-{name}"
            outside, inside = f"mv{tag}x{index}", f"mv{tag}y{index}"
            _ip("netns", "add", netns)
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            self._links.append(outside)
            _ip("link", "set", inside, "netns", netns)
            _ip("link", "set", outside, "master", self.bridge)
            _ip("link", "set", outside, "up")
            address = f"{subnet}.{10 + index}"
            _ip("netns", "exec", netns, "ip", "addr", "add", f"{address}/24", "dev", inside)
            _ip("netns", "exec", netns, "ip", "link", "set", inside, "up")
            _ip("netns", "exec", netns, "ip", "link", "set", "lo", "up")
            self.hosts[name] = Host(name, address, netns)

    def describe(self) -> str:
        if self.netns:
            return "network namespaces (ip netns + veth on a bridge): " + ", ".join(
                f"{h.name} {h.address}" for h in self.hosts.values()
            )
        return f"separate processes on loopback (no network namespaces: {self.why_not})"

    def close(self) -> None:
        for host in self.hosts.values():
            host.kill()
        if not self.netns:
            return
        for host in self.hosts.values():
            _ip("netns", "delete", host.netns, check=False)
        for link in self._links:
            _ip("link", "delete", link, check=False)
