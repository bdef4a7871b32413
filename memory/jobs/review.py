"""The review queue's jobs (SPEC §7), django-q2 tasks and schedules calling operations:

- `apply_rules_task(proposal_id)`: a new proposal that a standing rule covers applies at
  once (proposals.rules → proposals.actions.apply_now). Enqueued after each proposal is
  committed (proposals.actions.on_proposed, connected in MemoryConfig.ready()).
- `review_tick()`: every REVIEW_TICK_MINUTES — expire proposals that waited longer than
  MEMORY_PROPOSAL_EXPIRE_DAYS (`expired`, nothing written), then `notify_pending()`.
  The notices themselves are memory.jobs.notify (email, webhook, deliveries, the test).
- `prune_history_task()`: daily, file versions past MEMORY_HISTORY_DAYS (memory.history).
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task

from memory import history
from memory.jobs.notify import notify_pending
from proposals import actions, rules
from proposals.models import Proposal

log = logging.getLogger(__name__)

TICK_NAME = "memory-review-tick"
PRUNE_NAME = "memory-history-prune"
REVIEW_TICK_MINUTES = 5
SIGNATURE_HEADER = "X-Memory-Signature"
WEBHOOK_TIMEOUT = 10


# --- standing rules --------------------------------------------------------------------------


def enqueue_rules(proposal: Proposal) -> None:
    """on_proposed hook: hand a new proposal that a rule may cover to a worker (inline with
    Q_SYNC). Cheap when no rule matches: nothing is enqueued."""
    if rules.matching_rule(proposal) is None:
        return
    # Read per call (django-q2 reads its own SYNC once, at import). Inline, the task is
    # called here: django-q2's own sync mode closes the caller's database connection.
    if settings.Q_CLUSTER.get("sync", False):
        apply_rules_task(proposal.pk)
        return

    async_task("memory.jobs.review.apply_rules_task", proposal.pk)


def apply_rules_task(proposal_id: int) -> str:
    """Apply proposal `proposal_id` if a standing rule covers it. Idempotent: a decided
    proposal is left alone."""
    proposal = Proposal.objects.filter(pk=proposal_id).first()
    if proposal is None:
        return "no such proposal"
    applied = rules.apply_rule(proposal)
    return "applied" if applied is not None else "left for review"


# --- expiry ------------------------------------------------------------------------------------


def expire_old(now: dt.datetime | None = None) -> list[int]:
    """Expire every pending proposal older than MEMORY_PROPOSAL_EXPIRE_DAYS (0: never).
    Returns their ids."""
    days = settings.MEMORY_PROPOSAL_EXPIRE_DAYS
    if days <= 0:
        return []
    cutoff = (now or timezone.now()) - dt.timedelta(days=days)
    expired = []
    for proposal in Proposal.objects.filter(status=Proposal.Status.PENDING, created_at__lt=cutoff):
        try:
            actions.expire(proposal)
        except Exception:  # decided meanwhile: nothing to expire
            continue
        expired.append(proposal.pk)
    return expired


def review_tick() -> str:
    """The periodic task: expiry; standing rules for any pending proposal they cover (a
    task lost with its worker); then a notice if one is due."""
    expired = expire_old()
    applied = 0
    for proposal in Proposal.objects.filter(status=Proposal.Status.PENDING):
        if rules.apply_rule(proposal) is not None:
            applied += 1
    notice = notify_pending()
    return (
        f"expired {len(expired)}; {applied} applied by rules; "
        f"notice {'sent' if notice else 'not due'}"
    )


def prune_history_task() -> str:
    return f"pruned {history.prune()} version(s)"


def ensure_review_schedules() -> None:
    """The review tick every few minutes and the nightly history prune (django-q2 rows)."""
    Schedule.objects.update_or_create(
        name=TICK_NAME,
        defaults={
            "func": "memory.jobs.review.review_tick",
            "schedule_type": Schedule.MINUTES,
            "minutes": REVIEW_TICK_MINUTES,
            "repeats": -1,
        },
    )
    Schedule.objects.update_or_create(
        name=PRUNE_NAME,
        defaults={
            "func": "memory.jobs.review.prune_history_task",
            "schedule_type": Schedule.DAILY,
            "repeats": -1,
        },
    )
