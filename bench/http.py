"""HTTP benchmark: every figure a person meets, over HTTP against the server `make run`
starts (bin/serve: uvicorn with 2 web workers and the worker process), at several sizes of
workspace, with the references measured in the same run.

For each `--scales` size (1× is bench/search.py's ten years: 3,650 daily notes spread over
`--agents` agents and 1,000 facts, 4,651 files; 10× is 46,501 files; `--large` adds 30×,
≈140,000 files) it builds the workspace in a temporary directory (its own SQLite database,
search index and port), adds a busy today's note for the default agent, signs the owner in,
issues a token per agent, then:

- starts `make run` (migrate, memory_init, bin/serve) and times it until `/healthz`
  answers (the first start; the keeper builds the index in the background), then until
  `/healthz` says the index is ready — the figures below are measured from then on;
- warms every path once, then `--runs` rounds, one request at a time, interleaving in
  each round (in an order of its own, so no figure always follows `rg`) the HTTP floor
  (`GET /api/agents/master`, a trivial authenticated GET), `rg -i -c` over the files
  searched (every agent's, and the default agent's) for the round's query, and each
  figure: search (the `memory_search` tool, the REST search with and without `agent_id`,
  the Search page), a fact PUT (updates and new facts alternating), memory_save, the
  first page of notes, `/api/stats`, and the pages (a note, today's note, a file's
  history);
- 20 agents searching at once (a thread per agent with its own token, the REST search):
  throughput and p95;
- restarts the server and times the first query after the restart;
- prints each figure's median and p95, its ratio to the floor (and search's to `rg`),
  the load average, and the web workers' RSS.

With several sizes it ends with a table of every figure by size and the fitted growth
exponent (the slope of log time over log files: 1 is linear; search should stay below 1).

Only loopback is ever contacted; each server is stopped at the end (and on any error).
Run: `.venv/bin/python bench/http.py` (options: --scales 1,3,10, --large, --agents,
--runs, --seconds, --keep, --server-root). Each size runs in a process of its own (Django's
settings are read once); `--one N --json FILE` is that process.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ holds http.py: its folder goes last on the path, so the standard library's http
# package (which Django imports) is never this benchmark.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse
import datetime as dt
import http.client
import json
import math
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.parse

import search as search_bench  # noqa: E402  (bench/search.py: the workspace generator)

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
QUERIES = [q for q in search_bench.QUERIES if q != "zyxwv"]
RG = search_bench.RG
TODAY_LINES = 400  # today's note of a busy day (memory_save appends to it during the run)

# name → (target in ms or None, which statistic the target is on)
TARGETS = {
    "search tool": (50, "median"),
    "search REST, agent_id": (50, "median"),
    "search REST, every agent": (50, "median"),
    "page: search": (50, "median"),  # as every search (and ≤ 200 as every page)
    "fact PUT": (50, "p95"),
    "memory_save": (20, "p95"),
    "notes, first page": (100, "median"),
    "stats": (100, "median"),
    "page: a note": (200, "median"),
    "page: today's note": (200, "median"),
    "page: a file's history": (200, "median"),
}
SEARCHES = ("search tool", "search REST, agent_id", "search REST, every agent", "page: search")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _pct(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] if ordered else 0


def _rss(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return 0.0


def _uvicorn_workers(session_leader: int) -> list[int]:
    """The web workers: processes of the server's session running uvicorn's worker
    (multiprocessing children of the uvicorn supervisor)."""
    out = subprocess.run(
        ["ps", "-o", "pid=,ppid=,args=", "-s", str(session_leader)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    rows = [line.split(None, 2) for line in out.splitlines() if line.strip()]
    supervisors = {
        pid for pid, _ppid, args in rows if "memoryproject.web" in args or "bin/uvicorn" in args
    }
    return [
        int(pid)
        for pid, ppid, args in rows
        if ppid in supervisors and "resource_tracker" not in args
    ]


# --- the workspace ---------------------------------------------------------------------


def build(tmp: Path, scale: int, agents: int) -> dict:
    """The workspace, the database, the owner, tokens; returns what the run needs."""
    home, database = tmp / "home", tmp / "bench.sqlite3"
    home.mkdir()
    search_bench.setup_django(home, database)
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from memory import clock
    from memory.models import Agent, ApiToken

    call_command("migrate", verbosity=0)
    for base in search_bench.agent_dirs(agents)[1:]:
        Agent.objects.get_or_create(id=base.split("/")[1], defaults={"name": base})
    started = time.perf_counter()
    files, size = search_bench.build_workspace(
        home, days=3650 * scale, facts=1000 * scale, agents=agents
    )
    rng = random.Random(7)
    today = clock.today().isoformat()
    lines = [f"# {today}", ""] + [search_bench._line(rng) for _ in range(TODAY_LINES)]
    (home / "memory" / f"{today}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    files += 1
    built = time.perf_counter() - started
    owner = get_user_model().objects.create_superuser("owner", "owner@example.com", "pw-bench-1")
    _, key = ApiToken.issue(user=owner)
    agent_keys = {
        agent.pk: ApiToken.issue(agent=agent)[1] for agent in Agent.objects.order_by("pk")
    }
    browser = Client()
    browser.force_login(owner)
    note_day = sorted(p.stem for p in (home / "memory").glob("*.md") if p.stem != today)[-1]
    return {
        "home": home,
        "database": database,
        "files": files,
        "bytes": size,
        "generated_s": built,
        "key": key,
        "agent_keys": agent_keys,
        "session": browser.cookies["sessionid"].value,
        "note_day": note_day,
        "today": today,
    }


# --- the server ------------------------------------------------------------------------


class Server:
    """`make run` in a session of its own; stopped with its whole process group."""

    def __init__(self, root: Path, env: dict, port: int, log: Path) -> None:
        self.root, self.env, self.port, self.log_path = root, env, port, log
        self.process: subprocess.Popen | None = None

    def start(self) -> float:
        """Start it; seconds until /healthz answers."""
        started = time.perf_counter()
        self.log = open(self.log_path, "a")  # noqa: SIM115 — closed in stop()
        self.process = subprocess.Popen(
            ["make", "--no-print-directory", "run", f"PORT={self.port}"],
            cwd=self.root,
            env={**self.env, "PYTHONPATH": str(self.root)},
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = started + 3600
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"make run exited; see {self.log_path}")
            try:
                connection = http.client.HTTPConnection(HOST, self.port, timeout=5)
                connection.request("GET", "/healthz")
                connection.getresponse().read()
                connection.close()
                return time.perf_counter() - started
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the server did not answer within an hour; see {self.log_path}")

    def index_ready(self) -> float:
        """Seconds until /healthz says the search index is ready (the keeper builds it in
        the background; search answers from the files meanwhile, slower)."""
        started = time.perf_counter()
        while time.perf_counter() < started + 3600:
            connection = http.client.HTTPConnection(HOST, self.port, timeout=30)
            connection.request("GET", "/healthz")
            body = connection.getresponse().read()
            connection.close()
            if json.loads(body).get("search", {}).get("index") == "ready":
                return time.perf_counter() - started
            time.sleep(1)
        raise RuntimeError(f"the index was not ready within an hour; see {self.log_path}")

    def stop(self) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        # make exits before the web server it started has let go of the port: wait until
        # nothing answers there, so a restart is timed against the new server.
        deadline = time.perf_counter() + 30
        while time.perf_counter() < deadline:
            try:
                socket.create_connection((HOST, self.port), timeout=1).close()
            except OSError:
                break
            time.sleep(0.1)
        self.process = None
        self.log.close()


class Client:
    """One keep-alive connection; `call` times one request (status checked)."""

    def __init__(self, port: int, headers: dict) -> None:
        self.port, self.headers = port, headers
        self.connection = http.client.HTTPConnection(HOST, port, timeout=120)

    def call(self, method: str, path: str, body: object = None) -> tuple[float, int, bytes]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = dict(self.headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        for _attempt in range(2):
            started = time.perf_counter()
            try:
                self.connection.request(method, path, body=data, headers=headers)
                response = self.connection.getresponse()
                content = response.read()
                status = response.status
                break
            except (http.client.HTTPException, OSError):
                # The server closes a keep-alive connection idle for 5 s (uvicorn's
                # default), which a slow round can leave idle: once on a new connection.
                self.connection.close()
                self.connection = http.client.HTTPConnection(HOST, self.port, timeout=120)
                content, status = b"", 599
        return time.perf_counter() - started, status, content


# --- the figures -----------------------------------------------------------------------


def _q(text: str) -> str:
    return urllib.parse.quote(text)


def requests_of(data: dict, fact_names: list[str]) -> dict:
    """name → (client kind, n → (method, path, body))."""
    today, day = data["today"], data["note_day"]

    def fact(n: int):
        name = fact_names[n % len(fact_names)] if n % 2 == 0 else f"bench-new-{n:05d}"
        body = {
            "description": f"bench fact {n}",
            "type": "reference",
            "body": f"giá trị số {n}, đo huyết áp buổi sáng",
        }
        return "PUT", f"/api/memory/user/facts/{name}", body

    return {
        "search tool": (
            "api",
            lambda n: (
                "POST",
                "/api/agents/master/tools/memory_search",
                {"query": QUERIES[n % len(QUERIES)]},
            ),
        ),
        "search REST, agent_id": (
            "api",
            lambda n: (
                "GET",
                f"/api/memory/search?q={_q(QUERIES[n % len(QUERIES)])}&agent_id=master",
                None,
            ),
        ),
        "search REST, every agent": (
            "api",
            lambda n: ("GET", f"/api/memory/search?q={_q(QUERIES[n % len(QUERIES)])}", None),
        ),
        "page: search": (
            "page",
            lambda n: ("GET", f"/manage/memory/search/?q={_q(QUERIES[n % len(QUERIES)])}", None),
        ),
        "fact PUT": ("api", fact),
        "memory_save": (
            "api",
            lambda n: (
                "POST",
                "/api/agents/master/memory/save",
                {"text": f"bench line {n} đo huyết áp 120/80"},
            ),
        ),
        "notes, first page": ("api", lambda n: ("GET", "/api/agents/master/memory/notes", None)),
        "stats": ("api", lambda n: ("GET", "/api/stats", None)),
        "page: a note": (
            "page",
            lambda n: ("GET", f"/manage/memory/agents/master/notes/{day}/", None),
        ),
        "page: today's note": (
            "page",
            lambda n: ("GET", f"/manage/memory/agents/master/notes/{today}/", None),
        ),
        "page: a file's history": (
            "page",
            lambda n: (
                "GET",
                f"/manage/memory/history/?path=users/owner/facts/{fact_names[0]}.md",
                None,
            ),
        ),
    }


def rg_seconds(home: Path, word: str, paths: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [RG, "-i", "-c", "--no-messages", "--", word, *paths],
        cwd=home,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - started


def append_fsync_seconds(path: Path, n: int) -> float:
    """One line appended to a file on the workspace's volume and fsynced: what the disk
    alone costs a write (memory_save does this, and more)."""
    started = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"- 10:00 reference line {n}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - started


def concurrent_search(port: int, agent_keys: dict, *, requests: int, seconds: float) -> dict:
    """A thread per agent, each with its own token, searching its memory (REST) until
    `requests` in all are done or `seconds` have passed."""
    counter = iter(range(requests))
    lock = threading.Lock()
    times: list[float] = []
    errors: dict[int, int] = {}
    deadline = time.perf_counter() + seconds

    def agent_loop(agent_id: str, key: str) -> None:
        client = Client(port, {"Authorization": f"Token {key}"})
        mine, bad = [], {}
        while time.perf_counter() < deadline:
            with lock:
                number = next(counter, None)
            if number is None:
                break
            query = _q(QUERIES[number % len(QUERIES)])
            took, status, _ = client.call(
                "GET", f"/api/memory/search?q={query}&agent_id={agent_id}"
            )
            mine.append(took)
            if status >= 400:
                bad[status] = bad.get(status, 0) + 1
        with lock:
            times.extend(mine)
            for status, count in bad.items():
                errors[status] = errors.get(status, 0) + count

    threads = [threading.Thread(target=agent_loop, args=item) for item in agent_keys.items()]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return {
        "agents": len(threads),
        "requests": len(times),
        "per_s": len(times) / wall if wall else 0.0,
        "median": statistics.median(times) if times else 0.0,
        "p95": _pct(times, 0.95),
        "errors": errors,
    }


def measure(data: dict, port: int, runs: int, fact_names: list[str]) -> dict:
    home = data["home"]
    api = Client(port, {"Authorization": f"Token {data['key']}"})
    page = Client(port, {"Cookie": f"sessionid={data['session']}"})
    clients = {"api": api, "page": page}
    plan = requests_of(data, fact_names)
    every = ["MEMORY.md", "memory", "agents", "users/owner/facts"]
    own = ["MEMORY.md", "memory", "users/owner/facts"]
    times: dict[str, list[float]] = {
        name: [] for name in ["floor", "rg every", "rg own", "fsync", *plan]
    }
    scratch = home.parent / "fsync-reference.md"
    errors: dict[str, dict[int, int]] = {}
    # Warm: every worker imports, opens its index, fills its caches.
    for n in range(4):
        api.call("GET", "/api/agents/master")
        for name, (kind, make) in plan.items():
            if name in ("fact PUT", "memory_save"):
                continue
            clients[kind].call(*make(1000 + n))
    for n in range(runs):
        word = QUERIES[n % len(QUERIES)].split()[0]
        # Each round in an order of its own: a request right after `rg` (both cores busy
        # reading thousands of files) pays for it, and in a fixed order the same figure
        # always would.
        order = list(times)
        random.Random(n).shuffle(order)
        for name in order:
            if name == "rg every":
                times[name].append(rg_seconds(home, word, every))
                continue
            if name == "rg own":
                times[name].append(rg_seconds(home, word, own))
                continue
            if name == "fsync":
                times[name].append(append_fsync_seconds(scratch, n))
                continue
            if name == "floor":
                took, status, content = api.call("GET", "/api/agents/master")
            else:
                kind, make = plan[name]
                took, status, content = clients[kind].call(*make(n))
            times[name].append(took)
            if status >= 400:
                errors.setdefault(name, {})
                errors[name][status] = errors[name].get(status, 0) + 1
                if errors[name][status] == 1:
                    print(f"  {name}: HTTP {status} {content[:200]!r}", flush=True)
    return {
        name: {"median": statistics.median(values), "p95": _pct(values, 0.95)}
        for name, values in times.items()
    } | {"errors": errors}


def first_query(port: int, key: str) -> float:
    client = Client(port, {"Authorization": f"Token {key}"})
    took, _status, _ = client.call("GET", f"/api/memory/search?q={_q('huyet ap')}")
    return took


def run_one(args: argparse.Namespace) -> dict:
    server_root = Path(args.server_root).resolve() if args.server_root else ROOT
    tmp = Path(tempfile.mkdtemp(prefix="memory-http-"))
    port = free_port()
    env = dict(os.environ)
    env.update(
        MY_AGENT_HOME=str(tmp / "home"),
        DATABASE_URL=f"sqlite:///{tmp / 'bench.sqlite3'}",
        MEMORY_SEARCH_DIR=str(tmp / "search-index"),
        DEBUG="false",
        ALLOWED_HOSTS=HOST,
        SECRET_KEY="bench-http-not-secret",
        PORT=str(port),
    )
    os.environ.update(env)
    data = build(tmp, args.one, args.agents)
    from memory import facts as facts_module

    fact_names = [fact.name for fact in facts_module.facts_listing(limit=3).items]
    print(
        f"[{args.one}×] workspace: {data['files']:,} files, {data['bytes'] / 1e6:.1f} MB, "
        f"{args.agents} agents (generated in {data['generated_s']:.0f} s); "
        f"server: make run in {server_root}",
        flush=True,
    )
    server = Server(server_root, env, port, tmp / "server.log")
    result: dict = {"scale": args.one, "files": data["files"], "bytes": data["bytes"]}
    try:
        result["first start"] = server.start()
        result["index ready"] = result["first start"] + server.index_ready()
        print(
            f"[{args.one}×] first start: answering after {result['first start']:.1f} s, "
            f"index ready after {result['index ready']:.1f} s (measured from then on)",
            flush=True,
        )
        workers = _uvicorn_workers(server.process.pid)
        rss_before = {pid: _rss(pid) for pid in workers}
        result["figures"] = measure(data, port, args.runs, fact_names)
        result["concurrent"] = concurrent_search(
            port, data["agent_keys"], requests=args.concurrent, seconds=args.seconds
        )
        result["rss"] = {pid: (rss_before[pid], _rss(pid)) for pid in workers}
        result["load"] = os.getloadavg()[0]
        server.stop()
        result["restart"] = server.start()
        result["first query"] = first_query(port, data["key"])
    finally:
        server.stop()
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return result


# --- printing --------------------------------------------------------------------------


def _mark(value: float, target: float | None) -> str:
    if target is None:
        return ""
    return " ok" if value * 1000 <= target else " MISS"


def print_one(result: dict) -> None:
    figures = result["figures"]
    floor = figures["floor"]
    rg_every, rg_own = figures["rg every"]["median"], figures["rg own"]["median"]
    print(
        f"\n== {result['scale']}× — {result['files']:,} files, {result['bytes'] / 1e6:.0f} MB; "
        f"load average {result['load']:.2f} =="
    )
    print(
        f"HTTP floor (GET /api/agents/master): median {floor['median'] * 1000:.1f} ms, "
        f"p95 {floor['p95'] * 1000:.1f} ms; rg -i -c: every agent's files "
        f"{rg_every * 1000:.1f} ms, the default agent's {rg_own * 1000:.1f} ms"
    )
    fsync = figures["fsync"]
    print(
        f"disk (one line appended and fsynced): median {fsync['median'] * 1000:.1f} ms, "
        f"p95 {fsync['p95'] * 1000:.1f} ms"
    )
    print(f"{'figure':26} {'median':>9} {'p95':>9} {'÷ floor':>8} {'÷ rg':>6}  target")
    for name, (target, on) in TARGETS.items():
        fig = figures[name]
        rg = rg_every if name in ("search REST, every agent", "page: search") else rg_own
        ratio_rg = f"{fig['median'] / rg:6.2f}" if name in SEARCHES else " " * 6
        print(
            f"{name:26} {fig['median'] * 1000:7.1f}ms {fig['p95'] * 1000:7.1f}ms "
            f"{fig['median'] / floor['median']:8.1f} {ratio_rg}  {on} ≤ {target} ms"
            f"{_mark(fig[on], target)}"
        )
    if figures["errors"]:
        print(f"errors: {figures['errors']}")
    conc = result["concurrent"]
    print(
        f"{conc['agents']} agents searching at once: {conc['per_s']:.1f} req/s (≥ 50), "
        f"median {conc['median'] * 1000:.0f} ms, p95 {conc['p95'] * 1000:.0f} ms (≤ 300)"
        f"{'' if conc['per_s'] >= 50 and conc['p95'] <= 0.3 else ' MISS'}"
        f"{'; errors ' + str(conc['errors']) if conc['errors'] else ''}"
    )
    print(
        f"first start {result['first start']:.1f} s (index ready {result['index ready']:.0f} s); "
        f"restart {result['restart']:.1f} s; first "
        f"query after the restart {result['first query'] * 1000:.0f} ms (≤ 500)"
    )
    for pid, (before, after) in result["rss"].items():
        print(f"web worker {pid}: RSS {before:.0f} → {after:.0f} MB over the run")


def slope(xs: list[float], ys: list[float]) -> float:
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-6)) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    den = sum((x - mx) ** 2 for x in lx)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True)) / den if den else 0.0


def print_growth(results: list[dict]) -> None:
    files = [r["files"] for r in results]
    head = " ".join(f"{str(r['scale']) + '×':>9}" for r in results)
    print(f"\n== by size (median, ms; p95 for the writes) ==\n{'figure':26} {head}  exponent")
    names = ["floor", "rg every", "rg own", "fsync", *TARGETS]
    for name in names:
        on = TARGETS.get(name, (None, "median"))[1]
        values = [r["figures"][name][on] for r in results]
        exponent = slope(files, values)
        limit = 1.0 if name in SEARCHES else 1.1
        flag = (
            ""
            if name in ("floor", "rg every", "rg own", "fsync") or exponent <= limit
            else " ABOVE"
        )
        cells = " ".join(f"{v * 1000:9.1f}" for v in values)
        print(f"{name:26} {cells}  {exponent:5.2f}{flag}")
    rows = [
        ("20 agents: req/s", [r["concurrent"]["per_s"] / 1000 for r in results]),
        ("20 agents: p95", [r["concurrent"]["p95"] for r in results]),
        ("first query after restart", [r["first query"] for r in results]),
        ("first start (s)", [r["first start"] / 1000 for r in results]),
    ]
    for name, values in rows:
        cells = " ".join(f"{v * 1000:9.1f}" for v in values)
        print(f"{name:26} {cells}  {slope(files, values):5.2f}")
    print("(exponent: slope of log figure over log files; search ≤ 1 (sub-linear), others ≤ 1)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", default="1,3,10", help="sizes, comma-separated")
    parser.add_argument("--large", action="store_true", help="add 30× (≈140,000 files)")
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--runs", type=int, default=40, help="rounds of one request each")
    parser.add_argument("--concurrent", type=int, default=1000, help="requests, at most")
    parser.add_argument("--seconds", type=float, default=20, help="of concurrent search, at most")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--server-root", help="serve the code of another checkout (before)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--json", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        result = run_one(args)
        Path(args.json).write_text(json.dumps(result), encoding="utf-8")
        return
    scales = [int(s) for s in args.scales.split(",") if s]
    if args.large and 30 not in scales:
        scales.append(30)
    results = []
    with tempfile.TemporaryDirectory(prefix="memory-http-results-") as out:
        for scale in scales:
            target = Path(out) / f"{scale}.json"
            command = [sys.executable, __file__, "--one", str(scale), "--json", str(target)]
            for option in ("agents", "runs", "concurrent", "seconds"):
                command += [f"--{option}", str(getattr(args, option))]
            command += ["--keep"] if args.keep else []
            command += ["--server-root", args.server_root] if args.server_root else []
            subprocess.run(command, check=True)
            result = json.loads(target.read_text(encoding="utf-8"))
            print_one(result)
            results.append(result)
    if len(results) > 1:
        print_growth(results)
    print(f"\nrun at {dt.datetime.now():%Y-%m-%d %H:%M}; load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
