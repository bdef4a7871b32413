"""Schemathesis against `/api/schema/` of the production server (`make run`'s bin/serve:
uvicorn + the worker cluster) over real HTTP, as the owner and as an agent token, bounded
in time: no response may be a 5xx (SPEC §17). Slow: `make test-slow` (.ci/run) runs it.

Path parameters are drawn from a dictionary of ids that exist (agents, notes, facts,
pages, proposals, runs, tools) most of the time, so the generated requests reach the views
instead of 404ing at the lookup; the rest are generated freely. The figures (cases, time,
statuses) are printed, and the server's log must hold no traceback either."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import time
from pathlib import Path

from tests.ops.server import Deployment

BIN = Path(sys.executable).parent
OWNER_SECONDS = 140
AGENT_SECONDS = 100

CONFIG = """
[dictionaries.agents]
values = ["master", "helper"]
[dictionaries.names]
values = ["2026-11-30", "2026-11-30-1030", "2026-11-29", "coffee", "tea"]
[dictionaries.slugs]
values = ["minh", "han-eco", "ghost"]
[dictionaries.ids]
values = [1, 2, 3, 4]
[dictionaries.tools]
values = ["memory_save", "memory_search", "memory_get", "user_memory_save",
          "user_memory_forget", "wiki_get", "wiki_search", "wiki_apply"]
[dictionaries.scopes]
values = ["schedule", "conversation"]
[dictionaries.keys]
values = ["nightly", "c1", "last"]

[parameters]
"path.agent_id" = { dictionary = "agents", probability = 0.8 }
"path.name" = { dictionary = "names", probability = 0.6 }
"path.slug" = { dictionary = "slugs", probability = 0.6 }
"path.proposal_id" = { dictionary = "ids", probability = 0.7 }
"path.run_id" = { dictionary = "ids", probability = 0.7 }
"path.tool" = { dictionary = "tools", probability = 0.8 }
"path.scope" = { dictionary = "scopes", probability = 0.8 }
"path.scope_id" = { dictionary = "keys", probability = 0.7 }
"path.key" = { dictionary = "keys", probability = 0.7 }
"""


def _seed(server: Deployment) -> str:
    """Agents, notes, facts, pages, proposals, script-store entries — and an agent token."""
    with server.client() as owner:
        assert owner.post("/api/agents", json={"id": "helper", "name": "Helper"}).status_code == 201
        owner.put("/api/memory/user", json={"body": "Minh, Hà Nội.\n"})
        owner.put(
            "/api/memory/user/facts/coffee",
            json={"description": "likes coffee", "type": "preference", "body": "black"},
        )
        for agent in ("master", "helper"):
            owner.put(f"/api/agents/{agent}/memory", json={"body": "- durable\n"})
            owner.put(f"/api/agents/{agent}/memory/notes/2026-11-30", json={"body": "# n\n- a\n"})
            owner.post(f"/api/agents/{agent}/memory/save", json={"text": "đọc sách"})
            owner.put(
                f"/api/agents/{agent}/memory/wiki/pages/minh",
                json={"title": "Minh", "kind": "entity", "sources": ["note:2026-11-30"],
                      "body": "[[Ghost]]"},
            )  # fmt: skip
            owner.put(f"/api/agents/{agent}/script-store/schedule/nightly/last", json={"value": 1})
            owner.post(
                f"/api/agents/{agent}/memory/lines", json={"lines": ["x"], "source": "job:seed"}
            )
    return server.manage("memory_token", "agent", "master").strip()


def _run(server: Deployment, key: str, seconds: int, report: Path, config: Path) -> dict:
    report.mkdir(parents=True)
    started = time.monotonic()
    done = subprocess.run(
        [
            str(BIN / "schemathesis"),
            "--config-file",
            str(config),
            "run",
            f"{server.url}/api/schema/",
            "--header",
            f"Authorization: Token {key}",
            "--checks",
            "not_a_server_error",
            "--max-time",
            str(seconds),
            # One worker: two make hypothesis race on its own lambda cache (a client-side
            # "Runtime Error" that says nothing about the server).
            "--workers",
            "1",
            "--seed",
            "10",
            "--request-timeout",
            "30",
            "--report",
            "ndjson",
            "--report-dir",
            str(report),
            "--no-color",
        ],
        cwd=report,  # its cache (.schemathesis/) stays with the test
        capture_output=True,
        text=True,
        timeout=seconds + 240,
    )
    elapsed = time.monotonic() - started
    statuses: collections.Counter = collections.Counter()
    server_errors = []
    for path in report.glob("*.ndjson"):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            finished = event.get("ScenarioFinished")
            if not finished:
                continue
            for interaction in (finished["recorder"].get("interactions") or {}).values():
                response = interaction.get("response")
                code = response["status_code"] if response else "no response"
                statuses[code] += 1
                if isinstance(code, int) and code >= 500:
                    request = interaction["request"]
                    server_errors.append(f"{code} {request['method']} {request['uri']}")
    return {
        "exit": done.returncode,
        "output": done.stdout[-4000:] + done.stderr[-2000:],
        "seconds": round(elapsed, 1),
        "cases": sum(statuses.values()),
        "statuses": dict(sorted(statuses.items(), key=lambda item: str(item[0]))),
        "server_errors": server_errors,
    }


def test_no_generated_request_gets_a_5xx(tmp_path):
    server = Deployment(tmp_path / "server", web_workers=2, q_workers=1)
    try:
        agent_key = _seed(server)
        config = tmp_path / "schemathesis.toml"
        config.write_text(CONFIG)
        owner = _run(server, server.owner_key, OWNER_SECONDS, tmp_path / "owner", config)
        agent = _run(server, agent_key, AGENT_SECONDS, tmp_path / "agent", config)
    finally:
        server.stop()
    log = server.log_path.read_text(errors="replace")
    for who, figures in (("owner", owner), ("agent token", agent)):
        print(
            f"\nschemathesis as {who}: {figures['cases']} cases in {figures['seconds']} s; "
            f"statuses {figures['statuses']}; exit {figures['exit']}"
        )
    for figures in (owner, agent):
        assert figures["server_errors"] == [], figures["server_errors"][:20]
        assert figures["cases"] > 500, figures["output"]
        # Exit 0: no check failed and schemathesis itself had no error.
        assert figures["exit"] == 0, figures["output"]
    assert "Traceback" not in log and "Internal Server Error" not in log, log[-4000:]
