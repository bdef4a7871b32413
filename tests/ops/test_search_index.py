"""The search index under real processes (SPEC §6.1: the index is a cache that never takes
search down; hand edits within 2 s): the production server (`bin/serve`: uvicorn, the
worker and the index keeper) searched by 20 agents at once while the index is rebuilt,
truncated, rebuilt and killed half-way, while 70 MB of notes are copied in by hand, and
beside a stdio MCP process started in another time zone. Every search must answer 200
with the right hits. Each test prints its figures (`make test-slow` runs with -s)."""

from __future__ import annotations

import json
import random
import shutil
import signal
import statistics
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.ops.procs import ROOT
from tests.ops.server import BIN, Deployment, percentile

# Each test starts the whole server and loads it for minutes (70 MB copied in, rebuilds
# under 20 searching agents): more than the suite's 300 s per test on a loaded machine.
pytestmark = pytest.mark.timeout(1800)

AGENTS = [f"a{n:02d}" for n in range(20)]
MARKED = 5  # notes of each agent holding its marker word
WORDS = "river stone lantern orchard meadow copper harbor violet ember thistle".split()


def _note(rng: random.Random, day: str, lines: int, extra: str = "") -> str:
    body = [f"# {day}", ""]
    for _ in range(lines):
        body.append("- " + " ".join(rng.choice(WORDS) for _ in range(12)))
    if extra:
        body.append(f"- {extra}")
    return "\n".join(body) + "\n"


def _workspace(home: Path, *, notes: int = 40) -> None:
    rng = random.Random(22)
    for number, agent in enumerate(AGENTS):
        folder = home / "agents" / agent / "memory"
        folder.mkdir(parents=True, exist_ok=True)
        for day in range(notes):
            name = f"2025-{day // 28 % 12 + 1:02d}-{day % 28 + 1:02d}"
            marker = f"marker{number:02d}x" if day < MARKED else ""
            (folder / f"{name}.md").write_text(_note(rng, name, 30, marker), encoding="utf-8")


@pytest.fixture
def served(tmp_path):
    deployments: list[Deployment] = []

    def start(**env: str) -> Deployment:
        _workspace(tmp_path / "home")
        env.setdefault("MEMORY_SEARCH_DIR", str(tmp_path / "search"))
        deployment = Deployment(tmp_path, web_workers=2, q_workers=1, **env)
        deployments.append(deployment)
        with deployment.client() as client:
            for agent in AGENTS:
                response = client.post("/api/agents", json={"id": agent, "name": agent})
                assert response.status_code in (200, 201), response.text
        return deployment

    yield start
    for deployment in deployments:
        deployment.stop()


class Searchers:
    """20 agents searching at once, each for its own marker: every answer must be 200 with
    exactly its MARKED notes."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.stop = threading.Event()
        self.count = 0
        self.errors: list[str] = []
        self.latencies: list[float] = []
        self.lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._loop, args=(number, agent), daemon=True)
            for number, agent in enumerate(AGENTS)
        ]

    def __enter__(self) -> Searchers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=120)

    def _loop(self, number: int, agent: str) -> None:
        expected = {f"memory/2025-01-{day + 1:02d}.md" for day in range(MARKED)}
        with self.deployment.client(timeout=120) as client:
            while not self.stop.is_set():
                started = time.monotonic()
                try:
                    response = client.get(
                        "/api/memory/search",
                        params={"q": f"marker{number:02d}x", "agent_id": agent, "limit": 20},
                    )
                except httpx.HTTPError as exc:
                    self._fail(f"{agent}: {type(exc).__name__}: {exc}")
                    continue
                took = time.monotonic() - started
                if response.status_code != 200:
                    self._fail(f"{agent}: {response.status_code} {response.text[:200]}")
                    continue
                paths = {hit["path"] for hit in response.json()["results"]}
                if paths != expected:
                    self._fail(f"{agent}: wrong hits {sorted(paths)}")
                    continue
                with self.lock:
                    self.count += 1
                    self.latencies.append(took)

    def wait_for(self, count: int, timeout: float = 300) -> None:
        """Until `count` more searches have answered (a loaded machine answers slowly)."""
        target = self.count + count
        deadline = time.monotonic() + timeout
        while self.count < target and time.monotonic() < deadline:
            time.sleep(0.2)

    def _fail(self, message: str) -> None:
        with self.lock:
            self.count += 1
            self.errors.append(message)

    def report(self, what: str) -> str:
        lat = self.latencies or [0.0]
        return (
            f"{what}: {self.count} searches by {len(AGENTS)} agents, {len(self.errors)} errors; "
            f"median {statistics.median(lat) * 1000:.0f} ms, "
            f"p95 {percentile(lat, 0.95) * 1000:.0f} ms"
        )


def _generation(deployment: Deployment, base: Path) -> str | None:
    folders = [p for p in (base / "search").iterdir() if p.is_dir()]
    pointer = folders[0] / "current" if folders else None
    return pointer.read_text().strip() if pointer and pointer.exists() else None


def _index_file(base: Path) -> Path:
    folder = next(p for p in (base / "search").iterdir() if p.is_dir())
    return folder / f"{(folder / 'current').read_text().strip()}.sqlite3"


def _health_search(deployment: Deployment) -> dict:
    return httpx.get(f"{deployment.url}/healthz", timeout=10).json()["search"]


def _wait_ready(deployment: Deployment, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _health_search(deployment)["index"] == "ready":
            return
        time.sleep(0.2)
    raise AssertionError(_health_search(deployment))


def test_memory_reindex_truncation_and_a_killed_rebuild_never_fail_a_search(served, tmp_path):
    deployment = served()
    _wait_ready(deployment)
    first = _generation(deployment, tmp_path)
    with Searchers(deployment) as searchers:
        time.sleep(3)
        for _ in range(2):  # rebuilt twice while 20 agents search
            deployment.manage("memory_reindex")
        time.sleep(2)
    print("\n" + searchers.report("memory_reindex ×2 during searches"))
    assert searchers.count > 40 and searchers.errors == [], searchers.errors[:5]
    assert _generation(deployment, tmp_path) not in (None, first)

    # Cut short under the running server (a full disk, a crash, a hand).
    path = _index_file(tmp_path)
    with Searchers(deployment) as searchers:
        time.sleep(2)
        with open(path, "r+b") as handle:
            handle.truncate(path.stat().st_size // 3)
        searchers.wait_for(40)
        _wait_ready(deployment)
        searchers.wait_for(20)
    print(searchers.report("index truncated during searches"))
    assert searchers.count >= 60 and searchers.errors == [], searchers.errors[:5]
    assert _index_file(tmp_path) != path

    # A rebuild killed half-way: what it leaves is never used, and goes with the next build.
    with Searchers(deployment) as searchers:
        killed = subprocess.Popen(
            [str(BIN / "python"), "manage.py", "memory_reindex"], cwd=ROOT, env=deployment.env
        )
        time.sleep(1.0)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        searchers.wait_for(40)
    print(searchers.report("a rebuild killed half-way during searches"))
    assert searchers.count >= 40 and searchers.errors == [], searchers.errors[:5]
    deployment.manage("memory_reindex")
    # The old generations go once no process holds them: a worker lets go at its next query.
    folder = next(p for p in (tmp_path / "search").iterdir() if p.is_dir())
    deadline = time.monotonic() + 60
    with deployment.client() as client:
        while True:
            for agent in AGENTS[:4]:
                client.get("/api/memory/search", params={"q": "river", "agent_id": agent})
            generations = {p.name.split(".")[0] for p in folder.glob("g*.sqlite3")}
            if len(generations) == 1 or time.monotonic() > deadline:
                break
            time.sleep(2)
    assert generations == {_generation(deployment, tmp_path)}, generations


def test_notes_copied_in_by_hand_reach_search_while_every_search_answers(served, tmp_path):
    deployment = served()
    _wait_ready(deployment)
    # ~70 MB of notes made elsewhere, then copied into one agent's memory/ at once.
    source = tmp_path / "copied"
    source.mkdir()
    rng = random.Random(7)
    total = 0
    count = 0
    while total < 70_000_000:
        day = f"2019-{count // 28 % 12 + 1:02d}-{count % 28 + 1:02d}"
        text = _note(rng, day, 120, f"copiedpin{count}")
        (source / f"{day}-{count}.md").write_text(text, encoding="utf-8")
        total += len(text)
        count += 1
    last = f"copiedpin{count - 1}"
    with Searchers(deployment) as searchers:
        time.sleep(1)
        started = time.monotonic()
        shutil.copytree(source, deployment.home / "agents" / "a03" / "memory" / "copied")
        copied = time.monotonic() - started
        with deployment.client(timeout=120) as client:
            while True:
                response = client.get(
                    "/api/memory/search", params={"q": last, "agent_id": "a03", "limit": 5}
                )
                assert response.status_code == 200, response.text
                if response.json()["results"]:
                    break
                assert time.monotonic() - started < 900, "not caught up in 15 minutes"
                time.sleep(0.5)
        caught_up = time.monotonic() - started
    print(
        f"\n{count:,} notes, {total / 1e6:.0f} MB copied in {copied:.1f} s; the last one in "
        f"search after {caught_up:.1f} s ({count / caught_up:.0f} files/s)\n"
        + searchers.report("searches meanwhile")
    )
    assert searchers.errors == [], searchers.errors[:5]
    assert searchers.count > 100


def _saved(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    return [line.split(" ", 2)[-1] for line in lines if line.startswith("- ")]


def _mcp(deployment: Deployment, key: str, method: str, params: dict) -> dict:
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = httpx.post(f"{deployment.url}/mcp", json=body, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    text = response.text
    if text.startswith("event:") or "\ndata:" in text or text.startswith("data:"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


def _hand_edit_latencies(deployment: Deployment, key: str, rounds: int, timeout: float) -> list:
    took = []
    folder = deployment.home / "agents" / "a05" / "memory"
    for n in range(rounds):
        word = f"handpin{n}z{random.randrange(10**6)}"
        with open(folder / f"by-hand-{n}.md", "w", encoding="utf-8") as handle:
            handle.write(f"- written by hand: {word}\n")
        started = time.monotonic()
        while True:
            answer = _mcp(
                deployment,
                key,
                "tools/call",
                {"name": "memory_search", "arguments": {"query": word}},
            )
            if word in json.dumps(answer):
                took.append(time.monotonic() - started)
                break
            assert time.monotonic() - started < timeout, f"{word} not found in {timeout} s"
            time.sleep(0.05)
    return took


def test_a_hand_edit_is_found_over_mcp_within_two_seconds(served, tmp_path):
    deployment = served()
    _wait_ready(deployment)
    assert _health_search(deployment)["hand_edits"] == "inotify"
    key = deployment.manage("memory_token", "agent", "a05").strip()
    took = _hand_edit_latencies(deployment, key, 20, 2.0)
    print(
        f"\nhand edit → memory_search over MCP, watched: median {statistics.median(took):.2f} s, "
        f"p95 {percentile(took, 0.95):.2f} s, max {max(took):.2f} s"
    )
    assert max(took) < 2.0


def test_where_no_watch_is_possible_the_polling_bound_holds(served, tmp_path):
    deployment = served(MEMORY_SEARCH_WATCH="poll", MEMORY_SEARCH_RECONCILE_SECONDS="4")
    _wait_ready(deployment)
    health = _health_search(deployment)
    assert health["hand_edits"] == "poll" and health["hand_edit_bound_seconds"] == 4.0
    key = deployment.manage("memory_token", "agent", "a05").strip()
    took = _hand_edit_latencies(deployment, key, 8, 4.0 + 2.0)
    print(
        f"\nhand edit → memory_search over MCP, polled (bound 4 s): median "
        f"{statistics.median(took):.2f} s, p95 {percentile(took, 0.95):.2f} s, "
        f"max {max(took):.2f} s"
    )
    assert max(took) < 4.0 + 1.0


def test_a_stdio_process_in_another_time_zone_shares_the_index_and_the_day(served, tmp_path):
    deployment = served(MEMORY_TIME_ZONE="Asia/Ho_Chi_Minh")
    _wait_ready(deployment)
    generation = _generation(deployment, tmp_path)
    env = dict(deployment.env, MEMORY_TIME_ZONE="America/Los_Angeles", TZ="America/Los_Angeles")
    env.pop("MEMORY_SEARCH_KEEPER", None)
    stdio = subprocess.Popen(
        [str(BIN / "python"), "manage.py", "mcp", "--agent", "a01"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )

    def ask(number: int, method: str, params: dict) -> dict:
        stdio.stdin.write(json.dumps({"jsonrpc": "2.0", "id": number, "method": method,
                                      "params": params}) + "\n")  # fmt: skip
        stdio.stdin.flush()
        while True:
            line = stdio.stdout.readline()
            assert line, "the stdio server ended"
            message = json.loads(line)
            if message.get("id") == number:
                return message

    try:
        ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "ops", "version": "1"}})  # fmt: skip
        stdio.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        stdio.stdin.write("\n")
        stdio.stdin.flush()
        with Searchers(deployment) as searchers:
            for n in range(10):
                call = {"name": "memory_search", "arguments": {"query": "marker01x"}}
                found = ask(10 + n, "tools/call", call)
                assert "marker01x" in json.dumps(found)
            saved = ask(30, "tools/call", {"name": "memory_save",
                                           "arguments": {"text": "from stdio"}})  # fmt: skip
            time.sleep(2)
        key = deployment.manage("memory_token", "agent", "a01").strip()
        over_http = _mcp(deployment, key, "tools/call",
                         {"name": "memory_save", "arguments": {"text": "from http"}})  # fmt: skip
    finally:
        stdio.kill()
        stdio.wait()
    print("\n" + searchers.report("searches beside a stdio process in another zone"))
    assert searchers.errors == [], searchers.errors[:5]
    assert _generation(deployment, tmp_path) == generation  # nobody rebuilt it
    days = [json.dumps(saved), json.dumps(over_http)]
    notes = sorted((deployment.home / "agents/a01/memory").glob("20*.md"))
    holding = [
        p.name for p in notes if "from stdio" in p.read_text() or "from http" in p.read_text()
    ]
    assert len(holding) == 1, (holding, days)
