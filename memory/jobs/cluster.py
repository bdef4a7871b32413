"""The django-q2 cluster, supervised so that the death of any of its processes never wedges it
(docs/decisions.md, "Jobs and models"; `python manage.py memory_worker`, which `make run` starts).

Why: a django-q2 cluster is one guard process (the *sentinel*) with worker, monitor and
pusher processes that share two `multiprocessing` queues. An idle worker waits in
`task_queue.get()` holding the queue's reader lock (a semaphore); killed there — `kill -9`,
the OOM killer — it never releases it, and the worker the guard starts in its place, like
every other worker, waits for that lock for ever. The monitor holds the result queue's
lock the same way. The guard only sees live processes, so nothing notices (django-q2
issue #23, still open after 1.8.0). Releasing a semaphore someone else holds is unsafe;
the only sound recovery is new queues, that is a new cluster.

What runs:

- `GuardedSentinel` (django-q2's Sentinel): a member that dies *suddenly* — exit code other
  than 0, and not the worker the guard itself ended for a timeout — may have died holding a
  queue lock, so the sentinel kills the other members and exits with EXIT_RESTART. A
  recycled worker (exit 0) or a timed-out one is replaced as django-q2 does. Every guard
  cycle it stamps a heartbeat into shared memory, and it exits (members killed) when its
  supervisor is gone, so an orphaned cluster never keeps taking tasks.
- `Supervisor` (the `memory_worker` process): starts the sentinel in its own process group
  and starts a new cluster when the sentinel exits or its heartbeat is older than
  MEMORY_WORKER_STALE_SECONDS (a guard stuck on a dead member's lock); the whole old group
  is SIGKILLed first. It writes the cluster's `WorkerBeat` row (what `/healthz` reports)
  and reaps lost runs (memory.jobs.runs) every MEMORY_WORKER_REAP_SECONDS, so a lost run is
  failed and redone even when no cluster anywhere processes tasks; every five minutes it
  removes what killed writes left (memory.maintenance: temp files, an INDEX.md behind its
  facts). A cluster that fails to
  come up MEMORY_WORKER_GIVE_UP times in a row makes it exit 1, for systemd or `bin/serve`
  to see; SIGTERM/SIGINT stop the cluster (busy workers get MEMORY_WORKER_STOP_SECONDS to
  finish) and exit 0.

Tasks of a killed cluster: those its workers were running are lost with them (their runs
are reaped after the lease and redone); those it had fetched but not started are
delivered again by the ORM broker after Q_RETRY, and with Redis are gone (their runs are
reaped after MEMORY_RUN_QUEUED_LEASE_SECONDS and redone). Every task here is idempotent.
"""

from __future__ import annotations

import datetime as dt
import logging
import multiprocessing
import os
import signal
import socket
import time
import uuid
from typing import Any

from django import db
from django.conf import settings
from django.utils import timezone
from django_q.cluster import Sentinel

from memory import facts, maintenance
from memory.errors import DomainError
from memory.jobs import runs
from memory.maintenance import UPKEEP_SECONDS
from memory.models import WorkerBeat

log = logging.getLogger(__name__)

EXIT_RESTART = 75  # EX_TEMPFAIL: "start me again"
STARTUP_SECONDS = 60  # a cluster not beating by then never came up


def broker_name() -> str:
    return "redis" if settings.Q_CLUSTER.get("redis") else "orm"


# --- inside the cluster ---------------------------------------------------------------------


def _sudden(process: Any, *, worker: bool) -> bool:
    """Did `process` die in a way that may have left a shared queue's lock held? A
    worker the guard ends for its timeout (timer 0, still alive) or one that recycled
    itself (exit 0) did not."""
    if worker and process.timer.value == 0:
        return False
    return process.exitcode not in (0, None)


class GuardedSentinel(Sentinel):
    """django-q2's Sentinel, restarting the whole cluster instead of reincarnating a
    member that died suddenly (see the module docstring)."""

    def __init__(self, *args: Any, beat: Any, supervisor_pid: int, **kwargs: Any) -> None:
        self._beat = beat
        self._supervisor_pid = supervisor_pid
        super().__init__(*args, **kwargs)  # runs the guard loop until the cluster stops

    def reincarnate(self, process: Any) -> None:
        worker = process in self.pool
        if _sudden(process, worker=worker):
            role = "worker" if worker else "monitor" if process == self.monitor else "pusher"
            self._abandon(
                f"{role} {process.name} (pid {process.pid}) died with exit code "
                f"{process.exitcode}; it may have held a lock of the cluster's shared queues"
            )
        super().reincarnate(process)

    def status(self) -> str:
        # django-q2 asks for the status once per guard cycle (Stat): the heartbeat.
        if os.getppid() != self._supervisor_pid:
            self._abandon("its supervisor is gone")
        self._beat.value = time.time()
        return super().status()

    def _abandon(self, why: str) -> None:
        log.critical("cluster %s: %s; stopping every process to start anew", self.pid, why)
        members = [*self.pool, self.monitor, self.pusher]
        for member in members:
            if member is not None and member.pid and member.is_alive():
                try:
                    os.kill(member.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        os._exit(EXIT_RESTART)


def _sentinel_main(stop_event: Any, start_event: Any, cluster_id: Any, beat: Any, parent: int):
    os.setpgid(0, 0)  # its own process group, so the supervisor can end every member
    GuardedSentinel(stop_event, start_event, cluster_id, beat=beat, supervisor_pid=parent)


# --- the supervisor ---------------------------------------------------------------------------


class Supervisor:
    """Runs one cluster at a time and starts a new one whenever the old one dies or
    stops beating (see the module docstring). `run()` returns the exit code."""

    def __init__(self) -> None:
        self.stale = float(settings.MEMORY_WORKER_STALE_SECONDS)
        self.startup = STARTUP_SECONDS
        self.stop_grace = float(settings.MEMORY_WORKER_STOP_SECONDS)
        self.reap_every = float(settings.MEMORY_WORKER_REAP_SECONDS)
        self.upkeep_every = UPKEEP_SECONDS
        self.reconcile_every = float(settings.MEMORY_RECONCILE_SECONDS) / 2
        self.give_up = int(settings.MEMORY_WORKER_GIVE_UP)
        self.beat_every = 5.0
        self.host = socket.gethostname()
        self.name = f"{self.host}:{os.getpid()}"
        self.restarts = 0
        self.stopping = False
        self.started_at = timezone.now()
        self._ctx = multiprocessing.get_context("fork")
        self._sentinel: Any = None
        self._stop_event: Any = None
        self._beat: Any = None
        self._cleaned = False
        self._started = 0.0

    # -- lifecycle --

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        failures = 0
        log.info("worker supervisor %s: %s broker", self.name, broker_name())
        try:
            while not self.stopping:
                self._start()
                healthy, why = self._watch()
                if self.stopping:
                    break
                self._kill_group()
                self.restarts += 1
                failures = 0 if healthy else failures + 1
                log.critical("cluster restarted (%s); %d restart(s) so far", why, self.restarts)
                if failures >= self.give_up:
                    log.critical("the cluster failed to come up %d times in a row", failures)
                    return 1
                self._sleep(min(2.0**failures, 30.0) if failures else 0.2)
            self._stop_cluster()
            return 0
        finally:
            self._forget()

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.stopping = True

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(0.05)

    def _start(self) -> None:
        db.connections.close_all()  # never share a database connection with a fork
        self._stop_event = self._ctx.Event()
        start_event = self._ctx.Event()
        self._beat = self._ctx.RawValue("d", 0.0)
        self._sentinel = self._ctx.Process(
            target=_sentinel_main,
            args=(self._stop_event, start_event, uuid.uuid4(), self._beat, os.getpid()),
            name=f"Sentinel-{uuid.uuid4().hex[:8]}",
        )
        self._sentinel.start()
        self._started = time.monotonic()

    def _watch(self) -> tuple[bool, str]:
        """Until the cluster ends or must be ended: (it came up, why it ended)."""
        healthy = False
        next_beat = next_reap = 0.0
        next_upkeep = time.monotonic() + self.upkeep_every  # start-up did the first round
        next_reconcile = 0.0
        while not self.stopping:
            now = time.monotonic()
            if not self._sentinel.is_alive():
                return healthy, f"the sentinel exited with code {self._sentinel.exitcode}"
            beat = self._beat.value
            if beat:
                healthy = True
                age = time.time() - beat
                if age > self.stale:
                    return healthy, f"no heartbeat from the guard for {age:.0f} s"
            elif now - self._started > self.startup:
                return healthy, f"the cluster did not come up within {self.startup:.0f} s"
            if healthy and now >= next_beat:
                next_beat = now + self.beat_every
                self._record_beat()
            if now >= next_reap:
                next_reap = now + self.reap_every
                self._reap()
            if now >= next_upkeep:
                next_upkeep = now + self.upkeep_every
                self._upkeep()
            if now >= next_reconcile:
                next_reconcile = now + self.reconcile_every
                self._reconcile_facts()
            time.sleep(0.1)
        return healthy, "stopping"

    def _stop_cluster(self) -> None:
        if self._sentinel is None or not self._sentinel.is_alive():
            self._kill_group()
            return
        log.info("stopping the cluster (up to %.0f s for busy workers)", self.stop_grace)
        self._stop_event.set()
        self._sentinel.join(self.stop_grace)
        self._kill_group()

    def _kill_group(self) -> None:
        if self._sentinel is None or not self._sentinel.pid:
            return
        try:
            os.killpg(self._sentinel.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._sentinel.join(5)

    # -- what the database sees --

    def _record_beat(self) -> None:
        try:
            if not self._cleaned:  # rows of supervisors killed long ago
                WorkerBeat.objects.filter(
                    beat_at__lt=timezone.now() - dt.timedelta(days=1)
                ).delete()
                self._cleaned = True
            WorkerBeat.objects.update_or_create(
                name=self.name,
                defaults={
                    "host": self.host,
                    "pid": os.getpid(),
                    "broker": broker_name(),
                    "started_at": self.started_at,
                    "beat_at": timezone.now(),
                    "restarts": self.restarts,
                },
            )
        except Exception:
            log.warning("could not record the worker heartbeat", exc_info=True)
        finally:
            db.connections.close_all()

    def _reap(self) -> None:
        try:
            runs.reap_stale_runs()
        except Exception:
            log.warning("could not reap lost runs", exc_info=True)
        finally:
            db.connections.close_all()

    def _upkeep(self) -> None:
        """Temp files of killed writes, INDEX.md behind its facts (memory.maintenance)."""
        try:
            maintenance.upkeep()
        except Exception:
            log.warning("could not clean up after killed writes", exc_info=True)
        finally:
            db.connections.close_all()

    def _reconcile_facts(self) -> None:
        """Hand edits of facts into INDEX.md ahead of the fact writes (facts.reconcile_index)."""
        try:
            facts.reconcile_index()
        except DomainError as exc:  # read-only or full: the next write says so
            log.debug("could not look for hand edits of facts: %s", exc.message)
        except Exception:
            log.warning("could not look for hand edits of facts", exc_info=True)
        finally:
            db.connections.close_all()

    def _forget(self) -> None:
        try:
            WorkerBeat.objects.filter(name=self.name).delete()
        except Exception:
            log.warning("could not remove the worker heartbeat", exc_info=True)
        finally:
            db.connections.close_all()
