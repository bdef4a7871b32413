"""SPEC §18, past one machine: several hosts, one workspace. PostgreSQL and Redis on one host, two
web hosts (uvicorn), three worker hosts (`manage.py memory_worker` on the Redis broker),
all sharing one MY_AGENT_HOME directory — as network namespaces where this machine allows
(else processes on loopback; the output says which). Concurrently: memory_save from 16
clients over both web hosts, 12 simultaneous approvals of each of 20 proposals,
consolidations for 20 agents (a fake model server over HTTP), and one worker host killed
while it holds a consolidation. Then the invariants of the issue, and the figures."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.fakellm import FakeLLM, Reply
from tests.ops.hosts import Network
from tests.ops.procs import ROOT, wait_for
from tests.ops.server import BIN, percentile, since

logging.getLogger("httpx").setLevel(logging.WARNING)

CLIENTS = 16
SAVES_PER_CLIENT = 40
PROPOSALS = 20
APPROVERS = 12
AGENTS = 20
HOSTS = ["db", "web1", "web2", "worker1", "worker2", "worker3"]


def pg_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: p.parent.name)
    if not found:
        pytest.fail("PostgreSQL is not installed (apt-get install postgresql; .ci/run does)")
    return found[-1]


class Cluster:
    """Everything started on the hosts, and how to reach it."""

    def __init__(self, base: Path, model_port: int) -> None:
        self.base = base
        self.net = Network(HOSTS)
        self.home = base / "home"  # the one shared workspace
        self.home.mkdir()
        db = self.net.hosts["db"]
        self.logs = base / "logs"
        self.logs.mkdir()

        # PostgreSQL (as the postgres user when we are root: it refuses root).
        user = "postgres" if os.geteuid() == 0 else None
        # Outside pytest's tmp (mode 0700, root's): the postgres user must reach it.
        self.pg_dir = Path(tempfile.mkdtemp(prefix="memory-multihost-pg-"))
        self.pg_dir.chmod(0o755)
        data = self.pg_dir / "data"
        data.mkdir()
        if user:
            shutil.chown(data, user)
        pg = pg_bin()
        db.run(
            [
                *(["runuser", "-u", user, "--"] if user else []),
                str(pg / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
            ],
            check=True,
            capture_output=True,
        )
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write("host all all 0.0.0.0/0 trust\n")
        pg_port = db.port(5432)
        db.start(
            [
                str(pg / "postgres"),
                "-D",
                str(data),
                "-c",
                f"listen_addresses={db.address}",
                "-p",
                str(pg_port),
                "-k",
                str(data),
                "-c",
                "max_connections=300",
                "-c",
                "fsync=off",
            ],
            log=self.logs / "postgres.log",
            env=dict(os.environ),
            user=user,
        )
        admin = f"postgresql://postgres@{db.address}:{pg_port}/postgres"

        def pg_up() -> bool:
            try:
                with psycopg.connect(admin, connect_timeout=2):
                    return True
            except psycopg.OperationalError:
                return False

        wait_for(pg_up, seconds=60, what="PostgreSQL up")
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE DATABASE memory")
        self.database_url = f"postgres://postgres@{db.address}:{pg_port}/memory"

        # Redis.
        redis_port = db.port(6379)
        db.start(
            [
                shutil.which("redis-server") or "redis-server",
                "--bind",
                db.address,
                "--port",
                str(redis_port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
            ],
            log=self.logs / "redis.log",
            env=dict(os.environ),
        )
        self.redis_url = f"redis://{db.address}:{redis_port}/0"
        wait_for(lambda: _redis_up(self.redis_url), seconds=30, what="Redis up")

        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/root"),
            "DATABASE_URL": self.database_url,
            "Q_REDIS_URL": self.redis_url,
            "MY_AGENT_HOME": str(self.home),
            "SECRET_KEY": "multi-host-test-secret-key-shared-by-all-hosts",
            "ALLOWED_HOSTS": "*",
            "MEMORY_LLM_PROVIDER": "openai",
            # The model server listens on every address of this (the test's) side.
            "MEMORY_LLM_BASE_URL": f"http://{self.net.gateway}:{model_port}/v1",
            "MEMORY_LLM_MODEL": "gpt-4o-mini",
            "MEMORY_LLM_API_KEY": "sk-test",
            "MEMORY_LLM_TIMEOUT": "30",
            "MEMORY_RUN_LEASE_SECONDS": "5",
            "MEMORY_RUN_QUEUED_LEASE_SECONDS": "45",
            "MEMORY_WORKER_REAP_SECONDS": "1",
            "Q_WORKERS": "2",
        }
        # The documented steps (docs/operations.md): migrate once, then start the hosts.
        self.manage("migrate", "--noinput", "-v0")
        self.manage("memory_init")
        self.owner_key = self.manage("memory_token", "owner").strip()
        self.web: list[str] = []
        for name in ("web1", "web2"):
            host = self.net.hosts[name]
            port = host.port(8000)
            host.start(
                [
                    str(BIN / "uvicorn"),
                    "memoryproject.asgi:application",
                    "--host",
                    host.address,
                    "--port",
                    str(port),
                    "--workers",
                    "3",
                    "--no-server-header",
                ],
                log=self.logs / f"{name}.log",
                env=self.env,
                cwd=ROOT,
            )
            self.web.append(f"http://{host.address}:{port}")
        for name in ("worker1", "worker2", "worker3"):
            self.net.hosts[name].start(
                [str(BIN / "python"), "manage.py", "memory_worker"],
                log=self.logs / f"{name}.log",
                env=self.env,
                cwd=ROOT,
            )
        wait_for(self.all_up, seconds=120, what="web and worker hosts up")

    def manage(self, *args: str) -> str:
        out = subprocess.run(
            [str(BIN / "python"), "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    def all_up(self) -> bool:
        try:
            for url in self.web:
                health = httpx.get(f"{url}/healthz", timeout=5).json()
                if health["worker"]["clusters_alive"] < 3:
                    return False
            return True
        except (httpx.HTTPError, ValueError):
            return False

    def client(self, index: int, key: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=self.web[index % 2],
            timeout=60,
            headers={"Authorization": f"Token {key or self.owner_key}"},
        )

    def db(self) -> psycopg.Connection:
        return psycopg.connect(self.database_url, autocommit=True)

    def close(self) -> None:
        self.net.close()
        shutil.rmtree(self.pg_dir, ignore_errors=True)


def _redis_up(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


@pytest.fixture
def model():
    server = FakeLLM(host="0.0.0.0").start()
    yield server
    server.stop()


@pytest.fixture
def hosts(tmp_path, model):
    cluster = Cluster(tmp_path, model.port)
    try:
        yield cluster
    finally:
        cluster.close()


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.outcomes: Counter[str] = Counter()
        self.window: dict[str, list[float]] = {}

    def timed(self, op: str, send) -> httpx.Response | None:
        started = time.monotonic()
        try:
            response = send()
            outcome = str(response.status_code)
        except httpx.HTTPError as exc:
            response, outcome = None, type(exc).__name__
        took = since(started)
        with self.lock:
            self.outcomes[f"{op} {outcome}"] += 1
            self.latency[op].append(took)
            first, last = self.window.get(op, [started, started + took])
            self.window[op] = [min(first, started), max(last, started + took)]
        return response


def test_several_hosts_one_workspace(hosts, model):
    cluster = hosts
    rewrite = {"memory": "# Memory\n\n- Học tiếng Nhật mỗi sáng (2026-01-05)\n", "reasons": []}
    model.script(Reply(content=rewrite, delay=1.5))
    tally = Tally()
    setup_started = time.monotonic()

    # Agents, their tokens, a MEMORY.md and a note each.
    agents = [f"mh-{n:02d}" for n in range(AGENTS)]
    with cluster.client(0) as owner:
        for agent in agents + ["proposer"]:
            assert owner.post("/api/agents", json={"id": agent, "name": agent}).status_code == 201
            owner.put(
                f"/api/agents/{agent}/memory",
                json={"body": f"# Memory\n\n- {agent} thích đi bộ (2026-01-01)\n"},
            )
    old = time.time() - 3600
    for agent in agents:
        os.utime(cluster.home / "agents" / agent / "MEMORY.md", (old, old))
    # One process issues every agent's token (what `memory_token agent <id>` does each).
    issue = (
        "import json; from memory.models import Agent, ApiToken; "
        "print(json.dumps({a.id: ApiToken.issue(agent=a)[1] for a in Agent.objects.all()}))"
    )
    keys = json.loads(cluster.manage("shell", "-c", issue).strip().splitlines()[-1])
    for index, agent in enumerate(agents):
        with cluster.client(index, keys[agent]) as client:
            assert (
                client.post(
                    f"/api/agents/{agent}/memory/save", json={"text": f"{agent} đi bộ 5 km"}
                ).status_code
                == 200
            )
    # 20 proposals (one user fact each), made by a scheduled job.
    proposals: list[int] = []
    with cluster.client(1, keys["proposer"]) as client:
        for n in range(PROPOSALS):
            response = client.put(
                f"/api/memory/user/facts/multi-host-{n}",
                json={
                    "description": f"fact {n}",
                    "type": "preference",
                    "body": f"thích {n}\n",
                    "source": "job:multi-host",
                },
            )
            assert response.status_code == 202, response.text
            proposals.append(response.json()["proposal"]["id"])
    setup = since(setup_started)

    stop = threading.Event()
    acked: list[str] = []
    approvals: dict[int, Counter[int | str]] = defaultdict(Counter)
    runs: dict[str, int] = {}
    overlap: list[tuple] = []
    killed: dict[str, float] = {}

    def saver(index: int) -> None:
        with cluster.client(index, keys["master"]) as client:
            for n in range(SAVES_PER_CLIENT):
                text = f"multi {index}-{n}"
                response = tally.timed(
                    "memory_save",
                    lambda t=text: client.post("/api/agents/master/memory/save", json={"text": t}),
                )
                if response is not None and response.status_code == 200:
                    acked.append(text)

    def approve_all() -> None:
        clients = [cluster.client(i) for i in range(APPROVERS)]
        for pk in proposals:
            go = threading.Barrier(APPROVERS)

            def one(client: httpx.Client, pk: int = pk, go: threading.Barrier = go) -> None:
                go.wait()
                response = tally.timed(
                    "approve (12 at once)",
                    lambda: client.post(f"/api/memory/proposals/{pk}", json={"approve": True}),
                )
                with tally.lock:
                    approvals[pk][response.status_code if response is not None else "error"] += 1

            racers = [threading.Thread(target=one, args=(c,)) for c in clients]
            for racer in racers:
                racer.start()
            for racer in racers:
                racer.join()
        for client in clients:
            client.close()

    def consolidate_all() -> None:
        for index, agent in enumerate(agents):
            with cluster.client(index, keys[agent]) as client:
                response = tally.timed(
                    "consolidate (start)",
                    lambda a=agent: client.post(f"/api/agents/{a}/memory/consolidate"),
                )
                assert response is not None and response.status_code == 202, response
                runs[agent] = response.json()["run"]["id"]

    def watch_runs() -> None:
        """Never two running consolidations (or compiles) of one agent, seen from outside."""
        with cluster.db() as db:
            while not stop.is_set():
                rows = db.execute(
                    "SELECT agent_id, count(*) FROM memory_run WHERE status='running' AND kind IN "
                    "('consolidate','compile') GROUP BY agent_id HAVING count(*) > 1"
                ).fetchall()
                overlap.extend(rows)
                time.sleep(0.1)

    def kill_a_worker_host() -> None:
        victim = cluster.net.hosts["worker1"]

        def holding() -> bool:
            with model._lock:
                return any(
                    not r.finished and (r.client == victim.address or not cluster.net.netns)
                    for r in model.requests
                )

        wait_for(holding, seconds=60, what="worker1 holding a consolidation", every=0.05)
        killed["processes"] = victim.kill()
        killed["at"] = time.monotonic()

    watcher = threading.Thread(target=watch_runs)
    watcher.start()
    started = time.monotonic()
    work = [threading.Thread(target=saver, args=(i,)) for i in range(CLIENTS)]
    work += [
        threading.Thread(target=approve_all),
        threading.Thread(target=consolidate_all),
        threading.Thread(target=kill_a_worker_host),
    ]
    for thread in work:
        thread.start()
    for thread in work:
        thread.join(timeout=300)

    # Every consolidation finished (redone where lost) before the invariants are read.
    def settled():
        with cluster.db() as db:
            return not db.execute(
                "SELECT count(*) FROM memory_run WHERE status='running'"
            ).fetchone()[0]

    wait_for(settled, seconds=180, what="every run finished", every=0.5)
    elapsed = since(started)
    stop.set()
    watcher.join()

    # --- no acknowledged line lost (or doubled) -----------------------------------------------
    found: Counter[str] = Counter()
    for note in (cluster.home / "memory").glob("*.md"):
        for line in note.read_text().splitlines():
            if line.startswith("- ") and " multi " in f" {line[8:]}":
                found[line[8:]] += 1
    assert len(acked) == CLIENTS * SAVES_PER_CLIENT
    assert all(found[text] == 1 for text in acked), [t for t in acked if found[t] != 1][:5]

    # --- each proposal decided exactly once ---------------------------------------------------
    with cluster.db() as db:
        rows = dict(
            db.execute(
                "SELECT id, status FROM proposals_proposal WHERE id = ANY(%s)", (proposals,)
            ).fetchall()
        )
        payloads = dict(
            db.execute(
                "SELECT id, payload FROM proposals_proposal WHERE id = ANY(%s)", (proposals,)
            ).fetchall()
        )
    for pk in proposals:
        assert approvals[pk] == Counter({200: 1, 409: APPROVERS - 1}), (pk, approvals[pk])
        assert rows[pk] == "approved"
        writes = payloads[pk] if isinstance(payloads[pk], dict) else json.loads(payloads[pk])
        for path, text in writes["writes"].items():
            assert (cluster.home / path).read_text() == text

    # --- runs: never two at once per agent, all finished, the lost ones reaped and redone --------
    assert overlap == []
    with cluster.db() as db:
        all_runs = db.execute(
            "SELECT id, agent_id, kind, status, summary, trigger FROM memory_run"
        ).fetchall()
    assert all(status != "failed" or summary for _, _, _, status, summary, _ in all_runs)
    lost = [row for row in all_runs if row[4].startswith("worker lost")]
    redone = []
    for run_id, _agent, _kind, _status, summary, _trigger in lost:
        redo = [row for row in all_runs if row[5] == f"redo of #{run_id}"]
        assert len(redo) == 1, (run_id, summary)
        assert redo[0][3] in ("succeeded", "skipped", "failed") and redo[0][4]
        redone.append(redo[0])
    for agent in agents:
        assert any(
            r[1] == agent and r[2] == "consolidate" and r[3] == "succeeded" for r in all_runs
        ), agent
    if cluster.net.netns:
        lost_consolidations = [r for r in lost if r[2] == "consolidate"]
        assert lost_consolidations, "worker1 was killed holding a consolidation: it must be lost"
    model_calls_from_victim = sum(
        1 for r in model.requests if r.client == cluster.net.hosts["worker1"].address
    )

    # --- health: the web hosts answer, two worker hosts beat ------------------------------------
    health = httpx.get(f"{cluster.web[0]}/healthz", timeout=10).json()
    assert health["ok"] is True, health
    report = cluster.manage("memory_health")

    latency = {
        op: f"{len(v)} ops, {len(v) / max(tally.window[op][1] - tally.window[op][0], 1e-3):.1f}/s,"
        f" p50 {percentile(v, 0.5) * 1000:.0f} ms, p95 {percentile(v, 0.95) * 1000:.0f} ms,"
        f" max {max(v) * 1000:.0f} ms"
        for op, v in sorted(tally.latency.items())
    }
    consolidations = [r for r in all_runs if r[2] == "consolidate"]
    print(
        f"\nMULTI-HOST ({cluster.net.describe()})"
        f"\n  PostgreSQL + Redis on db; uvicorn x3 on web1, web2; memory_worker (2 workers,"
        f" Redis broker) on worker1..3; one shared MY_AGENT_HOME"
        f"\n  setup {setup:.1f} s; the concurrent part {elapsed:.1f} s (until every run settled)"
        f"\n  memory_save: {len(acked)} acknowledged over both web hosts, all found once"
        f"\n  approvals: {PROPOSALS} proposals x {APPROVERS} at once: each 1 x 200 + "
        f"{APPROVERS - 1} x 409, files as planned"
        f"\n  consolidations: {len(consolidations)} runs for {AGENTS} agents, all agents"
        f" succeeded; concurrent rewrites of one agent seen: {len(overlap)}"
        f"\n  worker1 killed ({killed.get('processes', 0)} processes, SIGKILL) while it held"
        f" a model call ({model_calls_from_victim} calls from it); runs lost: {len(lost)},"
        f" reaped and redone: {len(redone)}"
        f"\n  model calls: {len(model.requests)}"
        f"\n  outcomes: {dict(sorted(tally.outcomes.items()))}"
        + "".join(f"\n  {op}: {text}" for op, text in latency.items())
        + "\n  memory_health:\n    "
        + report.strip().replace("\n", "\n    ")
    )
