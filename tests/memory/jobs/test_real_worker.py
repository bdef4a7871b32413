"""End to end with a real django-q2 worker: the API enqueues a consolidation on the ORM
broker, a `manage.py qcluster` process (another OS process, on the same test database)
picks it up, calls a model over real HTTP, and leaves a proposal — MEMORY.md untouched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

from memory import notes, workspace
from memory.models import Run
from proposals.models import Proposal
from tests.fakellm import FakeLLM
from tests.processes import test_database_url

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def model_server():
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def worker(workspace, model_server, tmp_path):
    env = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        # The worker verifies the signature of what this process enqueued: the same key
        # (without it, a checkout with no var/secret_key gives each process its own).
        "SECRET_KEY": settings.SECRET_KEY,
        "MY_AGENT_HOME": str(workspace),
        "MEMORY_LLM_PROVIDER": "openai",
        "MEMORY_LLM_BASE_URL": model_server.base_url,
        "MEMORY_LLM_MODEL": "gpt-4o-mini",
        "MEMORY_LLM_API_KEY": "sk-test",
        "MEMORY_LLM_TIMEOUT": "10",
        "Q_SYNC": "0",
        "Q_WORKERS": "1",
    }
    log = (tmp_path / "qcluster.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    yield proc
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()


def wait_for_run(run_id: int, log: Path, *, seconds: float = 90) -> Run:
    """The run once it has ended; if it has not within `seconds`, fails with the worker's
    log (what it did, or why it never started)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if run.status != Run.Status.RUNNING:
            return run
        time.sleep(0.3)
    raise AssertionError(
        f"run {run_id} still running after {seconds}s; the worker's log:\n{log.read_text()}"
    )


@pytest.mark.django_db(transaction=True)
def test_it_consolidates_through_a_real_worker_and_proposes(
    owner_client, master, model_server, worker, tmp_path
):
    old = "# Memory\n\n- Chạy bộ thứ Ba (2026-01-05)\n"
    workspace.write("MEMORY.md", old)
    past = time.time() - 3600
    os.utime(workspace.resolve("MEMORY.md"), (past, past))
    notes.memory_save(master, "chạy 5 km quanh hồ")
    new = "# Memory\n\n- Chạy bộ thứ Ba và thứ Năm (2026-01-05)\n"
    model_server.replies.append(
        {"memory": new, "reasons": [{"line": "- Chạy bộ", "action": "fix", "why": "note"}]}
    )

    response = owner_client.post("/api/agents/master/memory/consolidate")
    assert response.status_code == 202
    run = wait_for_run(response.json()["run"]["id"], tmp_path / "qcluster.log")

    log = (tmp_path / "qcluster.log").read_text()
    assert run.status == Run.Status.SUCCEEDED, (run.summary, log)
    assert run.tokens_in > 0 and run.model == "gpt-4o-mini"
    proposal = Proposal.objects.get(run=run, kind="memory_rewrite")
    assert proposal.status == Proposal.Status.PENDING
    assert proposal.previous_body == old
    assert workspace.read("MEMORY.md") == old  # nothing applied without a person
    assert any(req.path.endswith("/chat/completions") for req in model_server.requests)
    assert "memory.jobs.tasks.consolidate_task" in log  # the worker process ran it, not this one
