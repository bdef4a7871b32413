"""HTTP benchmark: the production server (gunicorn, as `make run` starts it) on loopback,
driven by a bounded number of client threads, on the workspace of bench/search.py.

Builds the workspace (`--scale`, `--agents`, default 1× spread over 20 agents), migrates
its own SQLite database, builds the search index, starts `gunicorn memoryproject.wsgi`
with `--workers 2` on 127.0.0.1 (a free port), and for each scenario sends requests from
`--clients` threads over keep-alive connections until `--requests` are done or
`--seconds` have passed, whichever comes first. It prints req/s and p50/p95/p99 per
scenario, the errors, and the memory of each web worker (RSS, and PSS, which counts a
page shared by several processes once across them) before and after:

- `search, every agent`: GET /api/memory/search?q=… without agent_id (§6.2);
- `search, one agent`: the same with agent_id=master;
- `memory_save`: POST /api/agents/master/memory/save;
- `context`: GET /api/agents/master/memory/context (a new conversation each time);
- `page: a note`: GET /manage/memory/agents/master/notes/<day>/ (signed in);
- `page: search`: GET /manage/memory/search/?q=… (signed in).

Only loopback is ever contacted; the server is stopped at the end (and on any error).
Run: `.venv/bin/python bench/http.py` (options: --scale, --agents, --clients, --requests,
--seconds, --keep).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ holds http.py: its folder goes last on the path, so the standard library's http
# package (which Django imports) is never this benchmark.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse

import search as search_bench  # noqa: E402  (bench/search.py: the workspace generator)

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
QUERIES = search_bench.QUERIES


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


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
    except FileNotFoundError:
        pass
    return rss, pss


def _workers(master_pid: int) -> list[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(master_pid)], capture_output=True, text=True, check=False
    )
    return [int(pid) for pid in out.stdout.split()]


class Scenario:
    def __init__(self, name: str, make_request) -> None:
        self.name = name
        self.make_request = make_request  # (n) -> (method, path, body or None)
        self.times: list[float] = []
        self.errors: dict[int, int] = {}
        self.wall = 0.0


def drive(
    port: int, scenario: Scenario, headers: dict, *, clients: int, requests: int, seconds: float
) -> None:
    counter = iter(range(requests))
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client() -> None:
        connection = http.client.HTTPConnection(HOST, port, timeout=60)
        mine: list[float] = []
        errors: dict[int, int] = {}
        while time.perf_counter() < deadline:
            with lock:
                number = next(counter, None)
            if number is None:
                break
            method, path, body = scenario.make_request(number)
            data = None if body is None else json.dumps(body).encode("utf-8")
            started = time.perf_counter()
            try:
                connection.request(method, path, body=data, headers=headers)
                response = connection.getresponse()
                response.read()
                status = response.status
            except (http.client.HTTPException, OSError):
                connection.close()
                connection = http.client.HTTPConnection(HOST, port, timeout=60)
                status = 599
            mine.append(time.perf_counter() - started)
            if status >= 400:
                errors[status] = errors.get(status, 0) + 1
        connection.close()
        with lock:
            scenario.times += mine
            for status, count in errors.items():
                scenario.errors[status] = scenario.errors.get(status, 0) + count

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    scenario.wall = time.perf_counter() - started


def _pct(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] if ordered else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=1000, help="per scenario, at most")
    parser.add_argument("--seconds", type=float, default=20, help="per scenario, at most")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--server-root",
        help="serve the code of another checkout (e.g. a worktree of an older revision: the "
        "figures before a change), on the same workspace",
    )
    args = parser.parse_args()
    server_root = Path(args.server_root).resolve() if args.server_root else ROOT

    tmp = Path(tempfile.mkdtemp(prefix="memory-http-"))
    home, database = tmp / "home", tmp / "bench.sqlite3"
    home.mkdir()
    env = dict(os.environ)
    env.update(
        MY_AGENT_HOME=str(home),
        DATABASE_URL=f"sqlite:///{database}",
        MEMORY_SEARCH_DIR=str(tmp / "search-index"),
        DEBUG="false",
        ALLOWED_HOSTS=HOST,
        SECRET_KEY="bench-http-not-secret",
    )
    os.environ.update(env)
    search_bench.setup_django(home, database)
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from memory import search_index
    from memory.models import Agent, ApiToken

    call_command("migrate", verbosity=0)
    for base in search_bench.agent_dirs(args.agents)[1:]:
        Agent.objects.get_or_create(id=base.split("/")[1], defaults={"name": base})
    files, size = search_bench.build_workspace(
        home, days=3650 * args.scale, facts=1000 * args.scale, agents=args.agents
    )
    report = search_index.build()
    owner = get_user_model().objects.create_superuser("owner", "owner@example.com", "pw-bench-1")
    _, key = ApiToken.issue(user=owner)
    browser = Client()
    browser.force_login(owner)
    session = browser.cookies["sessionid"].value
    note_day = sorted((home / "memory").glob("*.md"))[-1].stem
    print(f"server: gunicorn, 2 workers, code of {server_root}")
    print(
        f"workspace: {files:,} files, {size / 1e6:.1f} MB, {args.agents} agents; index "
        f"{report.entries:,} entries, {report.bytes / 1e6:.1f} MB, built in {report.seconds:.1f} s"
    )

    port = free_port()
    log = open(tmp / "gunicorn.log", "w")  # noqa: SIM115 — closed below
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "memoryproject.wsgi:application",
            "--bind",
            f"{HOST}:{port}",
            "--workers",
            "2",
            "--access-logfile",
            str(tmp / "access.log"),
        ],
        cwd=server_root,
        env={**env, "PYTHONPATH": str(server_root)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        for _ in range(200):
            try:
                with socket.create_connection((HOST, port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("gunicorn did not start; see " + str(tmp / "gunicorn.log"))
        api = {"Authorization": f"Token {key}", "Content-Type": "application/json"}
        page = {"Cookie": f"sessionid={session}"}

        def q(n: int) -> str:
            return urllib.parse.quote(QUERIES[n % len(QUERIES)])

        scenarios = [
            (
                Scenario(
                    "search, every agent", lambda n: ("GET", f"/api/memory/search?q={q(n)}", None)
                ),
                api,
            ),
            (
                Scenario(
                    "search, one agent",
                    lambda n: ("GET", f"/api/memory/search?q={q(n)}&agent_id=master", None),
                ),
                api,
            ),
            (
                Scenario(
                    "memory_save",
                    lambda n: (
                        "POST",
                        "/api/agents/master/memory/save",
                        {"text": f"bench line {n} đo huyết áp", "source": "chat"},
                    ),
                ),
                api,
            ),
            (
                Scenario(
                    "context (new conversation)",
                    lambda n: ("GET", f"/api/agents/master/memory/context?conversation=b{n}", None),
                ),
                api,
            ),
            (
                Scenario(
                    "page: a note",
                    lambda n: ("GET", f"/manage/memory/agents/master/notes/{note_day}/", None),
                ),
                page,
            ),
            (
                Scenario(
                    "page: search", lambda n: ("GET", f"/manage/memory/search/?q={q(n)}", None)
                ),
                page,
            ),
        ]
        # One request of each first: every worker imports, opens the index, warms up.
        for scenario, headers in scenarios:
            drive(port, scenario, headers, clients=2, requests=4, seconds=30)
            scenario.times.clear()
            scenario.errors.clear()
        memory_before = {pid: _memory(pid) for pid in _workers(server.pid)}
        header = f"{'scenario':30} {'requests':>8} {'req/s':>8} {'p50':>9} {'p95':>9} {'p99':>9}"
        print(f"\n{header}  errors")
        for scenario, headers in scenarios:
            drive(
                port,
                scenario,
                headers,
                clients=args.clients,
                requests=args.requests,
                seconds=args.seconds,
            )
            times = scenario.times
            print(
                f"{scenario.name:30} {len(times):8} {len(times) / scenario.wall:8.1f} "
                f"{_pct(times, 0.5) * 1000:7.1f}ms {_pct(times, 0.95) * 1000:7.1f}ms "
                f"{_pct(times, 0.99) * 1000:7.1f}ms  {scenario.errors or '-'}"
            )
        memory_after = {pid: _memory(pid) for pid in _workers(server.pid)}
        print("\nweb workers (MB): RSS before → after, PSS before → after")
        for pid in sorted(memory_after):
            rss0, pss0 = memory_before.get(pid, (0, 0))
            rss1, pss1 = memory_after[pid]
            print(f"  pid {pid}: RSS {rss0:6.1f} → {rss1:6.1f}   PSS {pss0:6.1f} → {pss1:6.1f}")
        first = scenarios[0][0]
        rate = len(first.times) / first.wall
        p95 = _pct(first.times, 0.95)
        print(
            f"\nsearch every agent: {rate:.1f} req/s (target >= 50) "
            f"{'PASS' if rate >= 50 else 'FAIL'}, p95 {p95 * 1000:.0f} ms (target <= 300) "
            f"{'PASS' if p95 <= 0.3 else 'FAIL'}; load average {os.getloadavg()[0]:.2f}"
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
