"""The Redis broker (Q_REDIS_URL) for real: a `memory_worker` cluster takes tasks queued in
a real redis-server, its results land in the database, and a killed worker does not stop
it (SPEC §18)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django_q.models import Task

from tests.ops.procs import RedisServer, Worker, wait_for
from tests.processes import test_database_url

pytestmark = pytest.mark.django_db(transaction=True)
ENQUEUE = Path(__file__).with_name("enqueue.py")


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path / "redis")
    yield server
    server.stop()


def enqueue(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, str(ENQUEUE), test_database_url(), "math.floor", "3.5"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout.strip().splitlines()[-1]


def test_a_cluster_on_the_redis_broker_processes_and_survives_a_kill(
    redis_server, workspace, tmp_path
):
    env = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "MY_AGENT_HOME": str(workspace),
        "Q_REDIS_URL": redis_server.url,
        "Q_WORKERS": "2",
        "Q_SYNC": "0",
    }
    worker = Worker(env, tmp_path / "worker.log")
    try:
        wait_for(lambda: worker.ready(2), seconds=60, what="cluster up")
        assert "redis broker" in worker.log()

        task_id = enqueue(env)
        wait_for(lambda: Task.objects.filter(id=task_id).exists(), seconds=30, what="processed")
        assert Task.objects.get(id=task_id).result == 3
        # It went through Redis: django-q2's queue there is empty again, the ORM's unused.
        client = redis.Redis.from_url(redis_server.url)
        assert client.llen("django_q:memory:q") == 0
        from django_q.models import OrmQ

        assert OrmQ.objects.count() == 0

        old_sentinel = worker.sentinel()
        os.kill(worker.members()["worker"][0], signal.SIGKILL)
        killed = time.monotonic()
        # The supervisor starts a new cluster. A task the old one had already taken from
        # Redis is gone with it (the Redis broker has no acknowledgement: see
        # memory/jobs/cluster.py; runs are reaped and redone), so the task is enqueued
        # once the new cluster is up.
        wait_for(
            lambda: worker.sentinel() not in (None, old_sentinel) and worker.ready(2),
            seconds=60,
            what="a new cluster after the kill",
        )
        task_id = enqueue(env)
        wait_for(lambda: Task.objects.filter(id=task_id).exists(), seconds=30, what="after kill")
        print(f"\nredis broker: processing again {time.monotonic() - killed:.1f} s after a kill")
    finally:
        worker.stop()
