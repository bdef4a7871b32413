"""The review queue's jobs (SPEC §7), django-q2 tasks and schedules calling operations:

- `apply_rules_task(proposal_id)`: a new proposal that a standing rule covers applies at
  once (proposals.rules → proposals.actions.apply_now). Enqueued after each proposal is
  committed (proposals.actions.on_proposed, connected in MemoryConfig.ready()).
- `review_tick()`: every REVIEW_TICK_MINUTES — expire proposals that waited longer than
  MEMORY_PROPOSAL_EXPIRE_DAYS (`expired`, nothing written), then `notify_pending()`.
- `notify_pending(now=None)`: tell the owner that proposals wait, by email (Django's email
  framework: console backend unless EMAIL_* says SMTP) and/or a webhook (a JSON POST with an
  HMAC-SHA256 signature header, retried), when it is past the owner's time of day
  (MEMORY_NOTIFY_AT, in MEMORY_TIME_ZONE) or past MEMORY_NOTIFY_PENDING waiting — and never
  twice for one batch: a notice needs a proposal newer than the last notice told of.
- `prune_history_task()`: daily, file versions past MEMORY_HISTORY_DAYS (memory.history).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import time

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone
from django_q.models import Schedule

from memory import clock, history
from proposals import actions, rules
from proposals.diff import kind_label
from proposals.models import Notice, Proposal

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
    from django_q.tasks import async_task

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


# --- notices -------------------------------------------------------------------------------------


def _due_by_time(now: dt.datetime, last: Notice | None) -> bool:
    """Past today's MEMORY_NOTIFY_AT in the owner's zone, with no notice since then."""
    at = settings.MEMORY_NOTIFY_AT
    if not at:
        return False
    hour, minute = (int(part) for part in at.split(":"))
    local = clock.local_now(now)
    moment = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if local < moment:
        return False
    return last is None or last.sent_at < moment


def notice_payload(pending: list[Proposal], *, new: int, now: dt.datetime) -> dict:
    base = settings.MEMORY_PUBLIC_URL.rstrip("/")
    return {
        "pending": len(pending),
        "new": new,
        "url": f"{base}/manage/memory/proposals/",
        "proposals": [
            {
                "id": p.pk,
                "kind": p.kind,
                "label": kind_label(p.kind),
                "agent": p.agent_id,
                "target": p.target,
                "source": p.source,
                "waiting_seconds": int((now - p.created_at).total_seconds()),
                "url": f"{base}/manage/memory/proposals/{p.pk}/",
            }
            for p in pending[:50]
        ],
    }


def _digest_text(payload: dict) -> str:
    lines = [f"{payload['pending']} proposal(s) wait for you ({payload['new']} new).", ""]
    for item in payload["proposals"]:
        hours = item["waiting_seconds"] // 3600
        lines.append(f"#{item['id']} {item['label']} — {item['target']} (waiting {hours} h)")
    lines += ["", f"Review them: {payload['url']}"]
    return "\n".join(lines) + "\n"


def sign(body: bytes, secret: str) -> str:
    """The signature header's value: `sha256=<hex HMAC of the body>`."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def post_webhook(url: str, payload: dict, *, secret: str, attempts: int | None = None) -> str:
    """POST the payload as JSON, signed; retried with a growing pause on a connection error,
    a timeout or a 5xx/429. Returns "sent" or why it failed."""
    attempts = attempts or settings.MEMORY_NOTIFY_WEBHOOK_ATTEMPTS
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    headers = {"Content-Type": "application/json", "User-Agent": "agent-memory/notify"}
    if secret:
        headers[SIGNATURE_HEADER] = sign(body, secret)
    why = ""
    for attempt in range(attempts):
        if attempt:
            time.sleep(settings.MEMORY_NOTIFY_WEBHOOK_RETRY_DELAY * (2 ** (attempt - 1)))
        try:
            response = httpx.post(url, content=body, headers=headers, timeout=WEBHOOK_TIMEOUT)
        except httpx.HTTPError as exc:
            why = f"{exc.__class__.__name__}: {exc}"
            continue
        if response.status_code < 300:
            return "sent"
        why = f"HTTP {response.status_code}"
        if response.status_code < 500 and response.status_code != 429:
            break  # the receiver refused it; asking again would not help
    return f"failed after {attempt + 1} attempt(s): {why}"


def notify_pending(now: dt.datetime | None = None) -> Notice | None:
    """Send a notice when proposals wait and it is due; None when nothing was sent."""
    now = now or timezone.now()
    pending = list(
        Proposal.objects.filter(status=Proposal.Status.PENDING).order_by("created_at", "id")
    )
    if not pending:
        return None
    last = Notice.objects.order_by("-sent_at", "-id").first()
    told = last.newest_proposal if last else 0
    newest = max(p.pk for p in pending)
    if newest <= told:
        return None  # this batch was told of already
    threshold = settings.MEMORY_NOTIFY_PENDING
    reason = ""
    if threshold and len(pending) >= threshold:
        reason = "pending count"
    elif _due_by_time(now, last):
        reason = "time of day"
    if not reason:
        return None
    email = settings.MEMORY_NOTIFY_EMAIL
    webhook = settings.MEMORY_NOTIFY_WEBHOOK_URL
    if not email and not webhook:
        return None
    new = sum(1 for p in pending if p.pk > told)
    payload = notice_payload(pending, new=new, now=now)
    channels: dict[str, str] = {}
    if email:
        try:
            send_mail(
                f"{len(pending)} memory proposal(s) wait for you",
                _digest_text(payload),
                None,
                [email],
            )
            channels["email"] = "sent"
        except Exception as exc:  # SMTP down: say so in the notice, try the webhook still
            log.warning("notice email failed: %s", exc)
            channels["email"] = f"failed: {exc}"
    if webhook:
        channels["webhook"] = post_webhook(
            webhook, payload, secret=settings.MEMORY_NOTIFY_WEBHOOK_SECRET
        )
    return Notice.objects.create(
        reason=reason, pending=len(pending), newest_proposal=newest, channels=channels
    )


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
