"""django-q2 tasks: plain functions that take ids and call the operations. Tests call them
directly.

django-q2 may deliver a task twice. Every task here is idempotent:
- `consolidate_task(run_id)` works only on a run it claims (memory.jobs.runs.claim_run: a
  conditional update), so a second delivery finds the run already claimed or finished
  and does nothing — no second run, no second proposal;
- `scheduled_consolidate(agent_id, intended_date=…)` keys its run by the schedule's
  intended time (`schedule:<agent>:<time>`), so two deliveries of one firing share one run.
"""

from __future__ import annotations

import hashlib
import logging

from memory.jobs import runs
from memory.jobs.nightly import consolidate_agent, run_consolidation
from memory.models import Agent, Run

log = logging.getLogger(__name__)


def consolidate_task(run_id: int) -> str:
    """Do the work of the consolidation run the API created. Returns its final status (or
    why nothing was done)."""
    run = Run.objects.select_related("agent").filter(pk=run_id).first()
    if run is None:
        log.warning("consolidate_task: no run %s", run_id)
        return "no such run"
    if not runs.claim_run(run):
        log.info(
            "consolidate_task: run %s already taken (%s); duplicate delivery", run_id, run.status
        )
        return "already taken"
    return run_consolidation(run).status


def scheduled_consolidate(agent_id: str, intended_date: str | None = None) -> str:
    """What an agent's `memory-consolidate:<id>` schedule runs: the same code as the API."""
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        log.warning("scheduled_consolidate: no agent %s", agent_id)
        return "no such agent"
    task_key = f"schedule:{agent_id}:{intended_date}" if intended_date else None
    if task_key and len(task_key) > 100:  # Run.task_key's column width
        task_key = "schedule:" + hashlib.sha256(task_key.encode()).hexdigest()
    return consolidate_agent(agent, trigger="schedule", task_key=task_key).status


def reap_runs_task() -> int:
    """The periodic reaper of runs whose worker was lost."""
    return runs.reap_stale_runs()
