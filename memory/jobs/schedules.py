"""An agent's `memory_consolidate` cron as a django-q2 Schedule (SPEC §8, §12).

One schedule per agent, named `memory-consolidate:<agent id>`, kept in sync with the
agent row by `sync_agent_schedule` (post_save) and `remove_agent_schedule` (post_delete),
with update_or_create so there is never a duplicate. `sync_all_schedules` (post_migrate)
repairs the set, e.g. for the master agent a migration created, and installs the
periodic reaper of lost runs.

No catch-up storms: Q_CLUSTER has catch_up off, and `next_run` is always set to the
cron's next time from now, so a changed or re-enabled schedule never fires for the
past.
"""

from __future__ import annotations

import datetime as dt
import logging

from croniter import CroniterBadDateError, croniter
from django.utils import timezone
from django_q.models import Schedule

from memory.errors import InvalidInput
from memory.jobs.review import ensure_review_schedules
from memory.models import Agent

log = logging.getLogger(__name__)

PREFIX = "memory-consolidate:"
CONSOLIDATE_FUNC = "memory.jobs.tasks.scheduled_consolidate"
REAPER_NAME = "memory-reap-runs"
REAPER_FUNC = "memory.jobs.tasks.reap_runs_task"
REAPER_MINUTES = 5


def validate_cron(expr: str) -> str:
    """The cron expression, stripped; "" means "no schedule". Five fields (minute hour
    day month weekday), as croniter reads them, that fire at some time: `0 0 31 2 *`
    (31 February) parses but never comes. Raises InvalidInput (422) otherwise."""
    if expr is None:
        return ""
    if not isinstance(expr, str):
        raise InvalidInput("memory_consolidate must be a cron expression or empty.")
    expr = " ".join(expr.split())
    if not expr:
        return ""
    if len(expr.split(" ")) != 5 or not croniter.is_valid(expr):
        raise InvalidInput(
            f"Invalid cron expression {expr!r}: expected five fields, e.g. '0 3 * * *'.",
            field="memory_consolidate",
        )
    try:
        next_run_of(expr)
    except (CroniterBadDateError, ValueError, OverflowError):
        raise InvalidInput(
            f"The cron expression {expr!r} never fires (no such date comes).",
            field="memory_consolidate",
        ) from None
    return expr


def schedule_name(agent_id: str) -> str:
    return f"{PREFIX}{agent_id}"


def next_run_of(expr: str, now: dt.datetime | None = None) -> dt.datetime:
    """The cron's next time after now, in the project's time zone (as django-q2 computes
    it), aware."""
    base = timezone.localtime(now or timezone.now())
    return croniter(expr, base).get_next(dt.datetime)


def sync_agent_schedule(agent: Agent) -> Schedule | None:
    """Create, update or remove the agent's consolidation schedule to match
    `agent.memory_consolidate`. An invalid expression (saved around the API's
    validation, e.g. in the admin) removes the schedule and is logged, never raised:
    saving an agent must not fail here."""
    name = schedule_name(agent.id)
    try:
        expr = validate_cron(agent.memory_consolidate or "")
    except InvalidInput:
        log.warning(
            "agent %s has an invalid cron %r; no schedule", agent.id, agent.memory_consolidate
        )
        expr = ""
    if not expr:
        Schedule.objects.filter(name=name).delete()
        return None
    existing = Schedule.objects.filter(name=name).first()
    if existing is not None and existing.cron == expr and existing.func == CONSOLIDATE_FUNC:
        return existing  # unchanged: keep its next_run
    schedule, _ = Schedule.objects.update_or_create(
        name=name,
        defaults={
            "func": CONSOLIDATE_FUNC,
            "args": repr(agent.id),
            "kwargs": "",
            "schedule_type": Schedule.CRON,
            "cron": expr,
            "repeats": -1,
            "next_run": next_run_of(expr),
            "intended_date_kwarg": "intended_date",
        },
    )
    return schedule


def remove_agent_schedule(agent_id: str) -> None:
    Schedule.objects.filter(name=schedule_name(agent_id)).delete()


def ensure_reaper_schedule() -> Schedule:
    """The periodic task that fails runs whose worker was lost (memory.jobs.runs)."""
    schedule, _ = Schedule.objects.update_or_create(
        name=REAPER_NAME,
        defaults={
            "func": REAPER_FUNC,
            "schedule_type": Schedule.MINUTES,
            "minutes": REAPER_MINUTES,
            "repeats": -1,
        },
    )
    return schedule


def sync_all_schedules() -> None:
    """Every agent's schedule as its row says; schedules of deleted agents removed; the
    reaper installed."""
    ids = set()
    for agent in Agent.objects.all():
        ids.add(agent.id)
        sync_agent_schedule(agent)
    for schedule in Schedule.objects.filter(name__startswith=PREFIX):
        if schedule.name[len(PREFIX) :] not in ids:
            schedule.delete()
    ensure_reaper_schedule()

    ensure_review_schedules()


# --- signal receivers (connected in memory.apps.MemoryConfig.ready) -------------------


def on_agent_saved(sender, instance: Agent, raw: bool = False, **kwargs) -> None:
    if raw:  # loaddata: rows only
        return
    sync_agent_schedule(instance)


def on_agent_deleted(sender, instance: Agent, **kwargs) -> None:
    remove_agent_schedule(instance.id)


def on_post_migrate(sender, **kwargs) -> None:
    if getattr(sender, "name", "") != "memory":
        return
    try:
        sync_all_schedules()
    except Exception:  # tables of another app not there yet (partial migrate)
        log.exception("could not sync consolidation schedules after migrate")
