"""The nightly chain (SPEC §8, §9, §10.5): what one consolidation run does, in order.

1. The rewrite step (memory.jobs.consolidate): MEMORY.md from the recent notes, proposed.
2. Master only, when the model answered: fact hygiene (memory.jobs.hygiene), its own
   `fact_review` run reading the same notes block; its summary is added to this run's.
3. The consolidation run is finished (one rewrite-or-compile runs per agent at a time),
   then every follow-up registered with `register_follow_up` runs, in registration order:
   the wiki registers its compile from WikiConfig.ready(), so memory never imports wiki.
   A failing follow-up is logged and never harms the consolidation.

The API's "consolidate now", the pages' button and the agent's schedule all start this
same chain (`start_consolidation` queues it; `consolidate_agent` runs it in this process).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from memory.errors import Conflict
from memory.jobs import consolidate, hygiene, runs
from memory.models import Agent, Run

log = logging.getLogger(__name__)

FollowUp = Callable[[str], object]  # takes the agent id
_follow_ups: dict[str, FollowUp] = {}


def register_follow_up(name: str, func: FollowUp) -> None:
    """Run `func(agent_id)` after every consolidation (registering a name again replaces
    it, so an AppConfig.ready() that runs twice registers once)."""
    _follow_ups[name] = func


def _rewrite_then_review(run: Run) -> consolidate.Outcome:
    outcome = consolidate.rewrite_step(run)
    agent = run.agent
    if agent.is_default and outcome.answered and outcome.block is not None:
        try:
            review = hygiene.review_facts(agent, outcome.block, parent=run)
            outcome.summary += f" · fact review (run #{review.pk}): {review.summary}"
        except Exception:
            log.exception("fact hygiene after run %s failed", run.pk)
            outcome.summary += " · fact review failed"
    return outcome


def run_consolidation(run: Run) -> Run:
    """Do the chain for a claimed `running` consolidate run. Never raises."""
    run, _outcome = runs.run_step(run, _rewrite_then_review)
    for name, follow_up in list(_follow_ups.items()):
        try:
            follow_up(run.agent_id)
        except Exception:
            log.exception("the %s after consolidating %s failed", name, run.agent_id)
    return run


def start_consolidation(agent: Agent, *, trigger: str = "api") -> Run:
    """Create the `running` run now (Conflict/409 while a consolidation or compile runs for
    the agent) and hand the chain to a django-q2 worker (`memory.jobs.tasks.consolidate_task`).
    Returns the run as it is after enqueueing (with Q_SYNC the work is already done)."""
    return runs.start_queued(
        agent, Run.Kind.CONSOLIDATE, trigger=trigger, task="memory.jobs.tasks.consolidate_task"
    )


def consolidate_agent(agent: Agent, *, trigger: str, task_key: str | None = None) -> Run:
    """Start, claim and run the chain in this process (the scheduled path), the same code
    the API's task runs. A duplicate delivery (same task_key) returns the existing run and
    does nothing. While another consolidation or compile runs for the agent, the returned
    run is a finished `skipped` one saying so (Activity shows the missed turn)."""
    try:
        run = runs.start_run(agent, Run.Kind.CONSOLIDATE, trigger=trigger, task_key=task_key)
    except Conflict as exc:
        return runs.record_run(
            agent, Run.Kind.CONSOLIDATE, Run.Status.SKIPPED, trigger=trigger, summary=exc.message
        )
    if not runs.claim_run(run):
        return run
    return run_consolidation(run)
