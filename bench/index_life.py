"""The search index's life over HTTP against the real server (`bin/serve`: uvicorn workers,
the worker cluster, the index keeper), on the workspace of bench/search.py (`--scale`,
`--agents`, default 10× over 20 agents):

- **first start**: `migrate`, `memory_init`, then `bin/serve` on a workspace with no index:
  seconds until `/healthz` answers (target ≤ 15 s whatever the size), until the first
  search answers (from the files while the index is built), and until the keeper says the
  index is ready (with what `/healthz` said meanwhile: "indexing, N of M files");
- **worker memory**: `--minutes` (default 10) of searches — every agent, one agent, the
  tool — from `--clients` threads, sampling each web worker's RSS and PSS every 30 s:
  growth from the first sample after warm-up to the last (target ≤ +30 MB), and the floor
  (a worker's RSS before any search) times the workers against their total at the end
  (`WEB_WORKERS=4` costs no more than 4 × the floor);
- with `--reindex`: `manage.py memory_reindex` during the run (searches and errors).

Only loopback is contacted; everything is stopped at the end. Run:
`.venv/bin/python bench/index_life.py [--scale 10] [--minutes 10] [--workers 2]`.
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time

import httpx

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _memory(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of a process in MB."""
    rss = pss = 0.0
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) / 1024
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return rss, pss


def _children(pid: int) -> list[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True, check=False
    )
    return [int(p) for p in out.stdout.split()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _web_workers(serve_pid: int) -> list[int]:
    for pid in _children(serve_pid):
        if "memoryproject.web" in _cmdline(pid) or "uvicorn" in _cmdline(pid):
            return [p for p in _children(pid) if "resource_tracker" not in _cmdline(p)]
    return []


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values) or [0.0]
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reindex", action="store_true")
    parser.add_argument("--home", help="reuse a workspace kept by an earlier run")
    parser.add_argument("--search-dir", help="reuse its index too (no first-start build)")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memory-index-life-"))
    home = Path(args.home) if args.home else tmp / "home"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
        "MY_AGENT_HOME": str(home),
        "MEMORY_SEARCH_DIR": args.search_dir or str(tmp / "search"),
        "SECRET_KEY": "bench-secret-key-not-for-production",
        "WEB_WORKERS": str(args.workers),
        "Q_WORKERS": "1",
        "BIN": str(BIN),
    }
    serve = None
    try:
        if not args.home:
            started = time.perf_counter()
            home.mkdir()
            made = subprocess.run(
                [sys.executable, "-c", _GENERATE, str(home), str(args.scale), str(args.agents)],
                cwd=ROOT,
                env={**env, "DJANGO_SETTINGS_MODULE": "memoryproject.settings"},
                capture_output=True,
                text=True,
                check=True,
            )
            print(f"workspace: {made.stdout.strip()} in {time.perf_counter() - started:.0f} s")
        manage = [str(BIN / "python"), "manage.py"]
        subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        subprocess.run([*manage, "memory_init"], cwd=ROOT, env=env, check=True, capture_output=True)
        subprocess.run(
            [sys.executable, "-c", _AGENTS, str(args.agents)],
            cwd=ROOT,
            env={**env, "DJANGO_SETTINGS_MODULE": "memoryproject.settings"},
            check=True,
        )
        key = subprocess.run(
            [*manage, "memory_token", "owner"], cwd=ROOT, env=env, capture_output=True, text=True
        ).stdout.strip()
        # The floor on this machine now: one process importing Django and its settings.
        started = time.perf_counter()
        subprocess.run([*manage, "check", "-v0"], cwd=ROOT, env=env, check=True)
        took = time.perf_counter() - started
        print(f"reference: `manage.py check` (a bare Django start) took {took:.1f} s")
        port = 18000 + os.getpid() % 1000
        env["PORT"] = str(port)
        url = f"http://127.0.0.1:{port}"
        log = open(tmp / "serve.log", "w")  # noqa: SIM115 — closed with the server
        started = time.perf_counter()
        serve = subprocess.Popen(
            ["bin/serve"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        client = httpx.Client(base_url=url, headers={"Authorization": f"Token {key}"}, timeout=600)
        first_start(client, started)
        memory_run(client, serve.pid, args)
    finally:
        if serve is not None:
            os.killpg(serve.pid, signal.SIGTERM)
            try:
                serve.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(serve.pid, signal.SIGKILL)
        if args.keep:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


_GENERATE = """
import sys, django
sys.path.append("bench")  # last: bench/http.py must not stand for the http package
import os
os.environ.setdefault("MY_AGENT_HOME", sys.argv[1])
django.setup()
import search as s
from pathlib import Path
scale, agents = int(sys.argv[2]), int(sys.argv[3])
files, size = s.build_workspace(Path(sys.argv[1]), days=3650 * scale, facts=1000 * scale,
                                agents=agents)
print(f"{files:,} files, {size / 1e6:.0f} MB, {agents} agents")
"""

_AGENTS = """
import sys, django
django.setup()
from memory.models import Agent
for number in range(1, int(sys.argv[1])):
    Agent.objects.get_or_create(id=f"a{number:02d}", defaults={"name": f"a{number:02d}"})
"""


def first_start(client: httpx.Client, started: float) -> None:
    healthz = search_at = ready_at = None
    said: list[str] = []
    while time.perf_counter() - started < 1800:
        try:
            health = client.get("/healthz")
        except httpx.HTTPError:
            time.sleep(0.1)
            continue
        if healthz is None and health.status_code in (200, 503):
            healthz = time.perf_counter() - started
        message = health.json().get("search", {}).get("message", "")
        if message and (not said or said[-1] != message) and len(said) < 400:
            said.append(message)
        if search_at is None:
            answer = client.get("/api/memory/search", params={"q": "benh vien", "agent_id": "a01"})
            if answer.status_code == 200:
                search_at = time.perf_counter() - started
            else:
                print(f"  search answered {answer.status_code}: {answer.text[:200]}")
        if health.json().get("search", {}).get("index") == "ready":
            ready_at = time.perf_counter() - started
            break
        time.sleep(0.5)
    print(f"first start: /healthz answered after {healthz:.1f} s (target ≤ 15 s)", flush=True)
    print(f"  first search answered (from the files) after {search_at:.1f} s")
    print(f"  index ready after {ready_at:.1f} s")
    indexing = [m for m in said if m.startswith("indexing")]
    if indexing:
        print(f"  /healthz meanwhile: {indexing[0]!r} … {indexing[-1]!r}")


QUERIES = ["sách", "nguyen", "benh vien", "ho chi minh", "deadline", "cà phê sữa", "docs"]


def memory_run(client: httpx.Client, serve_pid: int, args: argparse.Namespace) -> None:
    workers = _web_workers(serve_pid)
    floor = {pid: _memory(pid) for pid in workers}
    stop = threading.Event()
    lock = threading.Lock()
    times: list[float] = []
    errors: dict[int, int] = {}

    def loop(number: int) -> None:
        mine = httpx.Client(base_url=client.base_url, headers=client.headers, timeout=120)
        n = number
        while not stop.is_set():
            n += 1
            query = QUERIES[n % len(QUERIES)]
            params = {"q": query}
            if n % 3:
                params["agent_id"] = f"a{n % args.agents:02d}" if n % args.agents else "master"
            started = time.perf_counter()
            try:
                status = mine.get("/api/memory/search", params=params).status_code
            except httpx.HTTPError:
                status = 599
            with lock:
                times.append(time.perf_counter() - started)
                if status != 200:
                    errors[status] = errors.get(status, 0) + 1

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(args.clients)]
    for thread in threads:
        thread.start()
    samples: list[tuple[float, dict[int, tuple[float, float]]]] = []
    started = time.perf_counter()
    reindexed = False
    while time.perf_counter() - started < args.minutes * 60:
        time.sleep(30 if args.minutes >= 2 else 5)
        samples.append((time.perf_counter() - started, {pid: _memory(pid) for pid in workers}))
        if args.reindex and not reindexed and time.perf_counter() - started > 60:
            reindexed = True
            subprocess.Popen([str(BIN / "python"), "manage.py", "memory_reindex"], cwd=ROOT,
                             env={**os.environ, **_env_of(serve_pid)})  # fmt: skip
    stop.set()
    for thread in threads:
        thread.join(timeout=120)
    print(
        f"\n{len(times):,} searches in {args.minutes:g} min from {args.clients} clients: median "
        f"{statistics.median(times) * 1000:.0f} ms, p95 {_pct(times, 0.95) * 1000:.0f} ms, "
        f"errors {errors or 0}"
    )
    print("worker RSS / PSS (MB) every 30 s:")
    for at, memories in samples:
        row = "  ".join(f"{rss:6.1f}/{pss:6.1f}" for rss, pss in memories.values())
        print(f"  {at:5.0f} s  {row}")
    if len(samples) >= 2:
        for pid in workers:
            base = samples[0][1][pid][0]
            last = samples[-1][1][pid][0]
            peak = max(memories[pid][0] for _, memories in samples)
            print(
                f"worker {pid}: floor {floor[pid][0]:.1f} MB, after warm-up {base:.1f} MB, end "
                f"{last:.1f} MB (growth {last - base:+.1f} MB, {last - floor[pid][0]:+.1f} MB "
                f"from the floor; peak {peak:.1f}); target growth ≤ +30 MB"
            )
        total = sum(memory[0] for memory in samples[-1][1].values())
        floor_total = sum(memory[0] for memory in floor.values())
        print(
            f"{len(workers)} workers: {total:.0f} MB in all at the end; {len(workers)} × the "
            f"floor = {floor_total:.0f} MB (ratio {total / max(floor_total, 1):.2f})"
        )


def _env_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


if __name__ == "__main__":
    main()
