"""Runs (SPEC §12): one row per consolidation, fact review or compile, shown in Activity.

At most one consolidation-or-compile runs per agent. The database decides, with the
partial unique constraint `one_running_rewrite_per_agent`, so the rule holds across
django-q2 workers and machines; `start_run` turns the IntegrityError into a Conflict (409).

A worker that dies leaves its row `running`. Runs carry a lease:

- a claimed run's `heartbeat_at` is renewed every quarter lease by a thread of the process
  that claimed it (`claim_run` starts it, `finish_run` stops it); older than
  MEMORY_RUN_LEASE_SECONDS means that process is gone;
- a run not yet claimed (its task waits in the broker or in a cluster's memory) is lost
  when its `started_at` is older than MEMORY_RUN_QUEUED_LEASE_SECONDS (longer: a full queue
  is not a crash; the ORM broker redelivers a lost task after Q_RETRY anyway).

`reap_stale_runs` fails lost runs ("worker lost") and starts each one again once (a run
whose kind registered a task with `register_redo`, and that is not itself a redo). It is
called by every worker supervisor (memory.jobs.cluster) every few seconds, by a periodic
django-q2 schedule, and before every start (there without a redo: the caller starts one),
so a crash blocks an agent for no longer than the lease.

`heartbeat_at` is NULL until a worker claims the run (`claim_run`), which makes a task
delivered twice harmless: only one delivery claims it.

One lifecycle for every kind of run: `start_run` (or `start_queued`) → `claim_run` →
`run_step(run, step)`, which runs the step, finishes the run with the step's `Outcome`
and never raises. A step asks the model through `ask_for_run`.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone
from django_q.tasks import async_task

from memory.attribution import attributed
from memory.errors import Conflict, NotFound
from memory.jobs.answers import check_answer
from memory.jobs.llm import BadAnswer, LLMError, Provider
from memory.models import Agent, Run
from memory.text import note_day

log = logging.getLogger(__name__)

REWRITE_KINDS = (Run.Kind.CONSOLIDATE, Run.Kind.COMPILE)
T = TypeVar("T")


REDO_PREFIX = "redo of #"


def lease_seconds() -> int:
    """How long a claimed run lives without a heartbeat."""
    return int(settings.MEMORY_RUN_LEASE_SECONDS)


def queued_lease_seconds() -> int:
    """How long a run may wait for a worker to claim it."""
    return max(int(settings.MEMORY_RUN_QUEUED_LEASE_SECONDS), lease_seconds())


_REDO_TASKS: dict[str, str] = {}


def register_redo(kind: str, task: str) -> None:
    """Runs of `kind` lost with their worker are started again once, by queueing
    `task(run id)` (a dotted path, as `start_queued` takes) for a new run."""
    _REDO_TASKS[kind] = task


def get_run_or_404(run_id: int) -> Run:
    run = Run.objects.select_related("agent").filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"No run {run_id}.")
    return run


def start_run(agent: Agent, kind: str, *, trigger: str, task_key: str | None = None) -> Run:
    """Create a `running` run.

    - `task_key` given and a run with that key exists → that run is returned unchanged
      (a duplicate delivery of the same task starts nothing).
    - A consolidation or compile already running for the agent → `Conflict` ("a
      consolidation or compile is already running for <agent>"), decided by the
      database constraint. Lost runs past their lease are reaped first.
    """
    if task_key:
        existing = Run.objects.filter(task_key=task_key).first()
        if existing is not None:
            return existing
    reap_stale_runs(agent=agent, redo=False)  # the run started here replaces a lost one
    try:
        with transaction.atomic():
            return Run.objects.create(
                agent=agent,
                kind=kind,
                status=Run.Status.RUNNING,
                trigger=trigger,
                task_key=task_key or None,
            )
    except IntegrityError:
        if task_key:
            existing = Run.objects.filter(task_key=task_key).first()
            if existing is not None:
                return existing
        raise Conflict(
            f"a consolidation or compile is already running for {agent.id}", agent=agent.id
        ) from None


def start_queued(agent: Agent, kind: str, *, trigger: str, task: str) -> Run:
    """Create the `running` run now (Conflict as `start_run`) and hand it to a django-q2
    worker running `task(run.pk)` (a dotted path). A run that cannot be queued is finished
    as `failed` ("could not be queued: …"). Returns the run as it is after enqueueing
    (with Q_SYNC the work is already done)."""
    run = start_run(agent, kind, trigger=trigger)
    try:
        async_task(task, run.pk, task_name=f"{kind}-{agent.id}-{run.pk}")
    except Exception as exc:
        log.exception("could not enqueue %s run %s", kind, run.pk)
        finish_run(run, Run.Status.FAILED, summary=f"could not be queued: {exc}")
    run.refresh_from_db()
    return run


def claim_run(run: Run) -> bool:
    """Mark a run as picked up by this worker. True exactly once per run: a conditional
    update on (status running, heartbeat_at NULL), so two deliveries of one task cannot
    both do its work."""
    claimed = Run.objects.filter(
        pk=run.pk, status=Run.Status.RUNNING, heartbeat_at__isnull=True
    ).update(heartbeat_at=timezone.now())
    if claimed:
        run.refresh_from_db()
        _keeper.keep(run.pk)
    return bool(claimed)


class _LeaseKeeper:
    """One daemon thread per process renewing the heartbeat of every run this process
    claimed and has not finished, every quarter lease — so a long model call or a slow
    step never loses its lease, and a dead process loses it within one lease. The thread
    touches the database only while it holds runs."""

    def __init__(self) -> None:
        self._ids: set[int] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def keep(self, run_id: int) -> None:
        with self._lock:
            self._ids.add(run_id)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="memory-run-lease", daemon=True
                )
                self._thread.start()

    def drop(self, run_id: int) -> None:
        with self._lock:
            self._ids.discard(run_id)

    def held(self) -> set[int]:
        with self._lock:
            return set(self._ids)

    def _loop(self) -> None:
        last = time.monotonic()
        while True:
            time.sleep(0.5)
            ids = self.held()
            if not ids or time.monotonic() - last < lease_seconds() / 4:
                continue
            last = time.monotonic()
            try:
                running = Run.objects.filter(pk__in=ids, status=Run.Status.RUNNING)
                running.update(heartbeat_at=timezone.now())
                still = set(running.values_list("pk", flat=True))
                with self._lock:
                    self._ids &= still | (self._ids - ids)
            except Exception:  # the next beat tries again; the lease is four beats long
                log.warning("could not renew the lease of runs %s", sorted(ids), exc_info=True)
            finally:
                connection.close()


_keeper = _LeaseKeeper()


def heartbeat(run: Run) -> None:
    """Renew the run's lease (call during long steps)."""
    now = timezone.now()
    Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(heartbeat_at=now)
    run.heartbeat_at = now


def record_usage(run: Run, answer: object | None) -> None:
    """Add an Answer's (or an LLMError's) model, tokens and cost to the run, in memory;
    `finish_run` saves them. Several model calls in one run add up."""
    if answer is None:
        return
    run.model = getattr(answer, "model", "") or run.model
    run.tokens_in += int(getattr(answer, "tokens_in", 0) or 0)
    run.tokens_out += int(getattr(answer, "tokens_out", 0) or 0)
    run.cost += getattr(answer, "cost", 0) or 0


def finish_run(
    run: Run,
    status: str,
    *,
    summary: str = "",
    reasons: Iterable[str] = (),
    answer: object | None = None,
) -> Run:
    """Record the outcome of a run: status, summary, reasons, finish time, and the usage of
    `answer` (an llm.Answer or llm.LLMError) added to what the run already recorded.

    Conditional on the row still being `running`: a run the reaper already declared lost
    keeps that verdict (logged), so two writers never fight over one row.
    """
    record_usage(run, answer)
    _keeper.drop(run.pk)
    now = timezone.now()
    updated = Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(
        status=status,
        summary=summary,
        reasons=list(reasons),
        finished_at=now,
        heartbeat_at=now,
        model=run.model,
        tokens_in=run.tokens_in,
        tokens_out=run.tokens_out,
        cost=run.cost,
    )
    if not updated:
        log.warning(
            "run %s was no longer running when it finished (%s: %s)", run.pk, status, summary
        )
    run.refresh_from_db()
    return run


def record_run(
    agent: Agent, kind: str, status: str, *, trigger: str, summary: str, reasons: Iterable[str] = ()
) -> Run:
    """A run that never ran (e.g. a scheduled consolidation while another one runs),
    recorded as finished so Activity shows it."""
    now = timezone.now()
    run = Run.objects.create(
        agent=agent,
        kind=kind,
        status=status,
        trigger=trigger,
        summary=summary,
        reasons=list(reasons),
    )
    Run.objects.filter(pk=run.pk).update(finished_at=now)
    run.finished_at = now
    return run


def _duration(seconds: int) -> str:
    if seconds % 60 == 0:
        minutes = seconds // 60
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds} seconds"


def reap_stale_runs(
    *, agent: Agent | None = None, now: dt.datetime | None = None, redo: bool = True
) -> int:
    """Mark `running` runs whose lease expired as failed ("worker lost"). Returns how many.
    A conditional update: a run that finishes or heartbeats meanwhile is left alone, and
    of several reapers only one fails (and redoes) a run.

    With `redo`, a lost run whose kind registered a task (`register_redo`) is started
    again once as a new queued run triggered "redo of #<id>" (a redo is never redone;
    while another rewrite runs for the agent, none is started), and the lost run's summary
    names it."""
    now = now or timezone.now()
    claimed_cutoff = now - dt.timedelta(seconds=lease_seconds())
    queued_cutoff = now - dt.timedelta(seconds=queued_lease_seconds())
    lost_claimed = Q(heartbeat_at__lt=claimed_cutoff)
    lost_queued = Q(heartbeat_at__isnull=True, started_at__lt=queued_cutoff)
    stale = Run.objects.filter(lost_claimed | lost_queued, status=Run.Status.RUNNING)
    if agent is not None:
        stale = stale.filter(agent=agent)
    reaped = 0
    for run_id, beat in list(stale.values_list("pk", "heartbeat_at")):
        if beat is None:
            lost, summary = (
                lost_queued,
                (f"worker lost: not picked up within {_duration(queued_lease_seconds())}"),
            )
        else:
            lost, summary = (
                lost_claimed,
                (f"worker lost: no heartbeat for more than {_duration(lease_seconds())}"),
            )
        # Conditional on the same test, so a run that heartbeats meanwhile is left alone.
        if not Run.objects.filter(lost, pk=run_id, status=Run.Status.RUNNING).update(
            status=Run.Status.FAILED, finished_at=now, summary=summary
        ):
            continue
        reaped += 1
        if redo:
            _redo(Run.objects.select_related("agent").get(pk=run_id), summary)
    if reaped:
        log.warning("reaped %d lost run(s)", reaped)
    return reaped


def _redo(lost: Run, summary: str) -> None:
    task = _REDO_TASKS.get(lost.kind)
    if task is None or lost.trigger.startswith(REDO_PREFIX):
        return
    try:
        again = start_queued(lost.agent, lost.kind, trigger=f"{REDO_PREFIX}{lost.pk}", task=task)
    except Conflict:
        note = "not redone: another consolidation or compile is running"
    except Exception:
        log.exception("could not redo lost run %s", lost.pk)
        note = "could not be redone"
    else:
        note = f"redone as run #{again.pk}"
    Run.objects.filter(pk=lost.pk).update(summary=f"{summary}; {note}")


# --- what a run read: "nothing new" judged by content ----------------------------------------

# A run whose model answered: what it read was taken in, so reading it again is waste.
ANSWERED = (Run.Status.SUCCEEDED, Run.Status.HELD)


def record_notes_read(run: Run, hashes: dict[str, str]) -> None:
    """Keep on the run which notes it read and the hash of each ({name: sha256})."""
    Run.objects.filter(pk=run.pk).update(notes_read=dict(hashes))
    run.notes_read = dict(hashes)


def last_read_hashes(agent: Agent, kind: str, names: Iterable[str], *, exclude: int | None = None):
    """{name: hash} of each of `names` as the newest answered run of `kind` for `agent`
    that read it recorded it (names no such run read are absent)."""
    wanted = set(names)
    found: dict[str, str] = {}
    runs = (
        Run.objects.filter(agent=agent, kind=kind, status__in=ANSWERED)
        .exclude(notes_read={})
        .order_by("-started_at", "-id")
    )
    if exclude is not None:
        runs = runs.exclude(pk=exclude)
    for read in runs.values_list("notes_read", flat=True).iterator():
        if not isinstance(read, dict):
            continue
        for name in wanted & set(read):
            found[name] = read[name]
        wanted -= set(read)
        if not wanted:
            break
    return found


def first_read_day(agent: Agent, kind: str, *, exclude: int | None = None) -> dt.date | None:
    """The earliest day of a note read by the first answered run of `kind` for `agent`
    that read notes (other than `exclude`), or None when no such run read one."""
    answered = Run.objects.filter(agent=agent, kind=kind, status__in=ANSWERED).exclude(
        notes_read={}
    )
    if exclude is not None:
        answered = answered.exclude(pk=exclude)
    first = answered.order_by("started_at", "id").values_list("notes_read", flat=True).first()
    days = [parsed[0] for name in first or () if (parsed := note_day(name)) is not None]
    return min(days) if days else None


def new_or_changed(
    agent: Agent, kind: str, hashes: dict[str, str], *, exclude: int | None = None
) -> list[str]:
    """The notes of `hashes` ({name: sha256 as read now}) that are new or changed since
    the last answered run of `kind` that read them, in the given order. Empty means
    nothing new: the run can be skipped without asking the model."""
    before = last_read_hashes(agent, kind, hashes, exclude=exclude)
    return [name for name, digest in hashes.items() if before.get(name) != digest]


# --- one step of a run ---------------------------------------------------------------------


@dataclass
class Outcome:
    """How a step ended: the run's final status, summary and reasons."""

    status: str
    summary: str
    reasons: list[str] = field(default_factory=list)


def run_step(run: Run, step: Callable[[Run], Outcome]) -> tuple[Run, Outcome]:
    """Do `step` for a claimed `running` run and finish the run with its outcome. Never
    raises: an unexpected error fails the run ("internal error: …", files as the step left
    them — steps write only through proposals) and is logged, so no run stays `running`."""
    try:
        # Whatever the step changes (an autonomous agent's proposal applied at once) is
        # attributed to this run in the files' history.
        with attributed(
            actor=f"job:{run.kind}-{run.pk}",
            source=f"job:{run.kind}-{run.pk}",
            via="task",
            run=run.pk,
        ):
            outcome = step(run)
    except Exception as exc:
        log.exception("%s run %s failed", run.kind, run.pk)
        outcome = Outcome(Run.Status.FAILED, f"internal error: {exc.__class__.__name__}: {exc}")
    run = finish_run(run, outcome.status, summary=outcome.summary, reasons=outcome.reasons)
    return run, outcome


def ask_for_run(
    run: Run,
    provider: Provider,
    system: str,
    user: str,
    parse: Callable[[dict], T],
    *,
    schema: dict,
    keep_alive: Iterable[Run] = (),
    max_tokens: int | None = None,
) -> tuple[T | None, str]:
    """Ask the model on behalf of the running `run`: heartbeat it (and the runs in
    `keep_alive`, e.g. a consolidation waiting on its fact review) before and after the
    call, which may take minutes; record the usage — of a failed call too — on the run.
    `schema` (the step's §13.1 JSON schema file) and `max_tokens` go to
    `Provider.complete_json`; the answer is checked against that same schema
    (memory.jobs.answers), then read by `parse`, which raises BadAnswer for what a schema
    cannot say.
    Returns (parsed answer, "") or (None, why the run fails) — never raises LLMError or
    BadAnswer. An answer that is not one JSON object is "answered badly", like a wrong
    shape; an HTTP error or a timeout is "the model call failed"."""
    alive = [run, *keep_alive]
    for each in alive:
        heartbeat(each)
    try:
        answer = provider.complete_json(system, user, schema=schema, max_tokens=max_tokens)
    except LLMError as exc:
        record_usage(run, exc)
        if exc.raw:
            return None, f"the model answered badly: {exc.message}"
        return None, f"the model call failed: {exc.message}"
    record_usage(run, answer)
    for each in alive:
        heartbeat(each)
    try:
        check_answer(answer.data, schema)
        return parse(answer.data), ""
    except BadAnswer as exc:
        return None, f"the model answered badly: {exc}"
