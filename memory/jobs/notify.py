"""The queue comes to the owner (SPEC §7): notices that proposals wait, by email and/or a
webhook, in the owner's language, each delivery kept as a row the Settings page lists.

- `notify_pending(now=None)`: when proposals wait and it is due — past the owner's time of
  day (MEMORY_NOTIFY_AT, in MEMORY_TIME_ZONE) or MEMORY_NOTIFY_PENDING waiting — and never
  twice for one batch (a notice needs a proposal newer than the last one told of). Called
  by the review tick (memory.jobs.review).
- The digest counts what the assistants remembered this week (memory.feed).
- Email through Django's email framework (the console backend unless EMAIL_HOST says
  SMTP). The webhook is a POST, retried with a growing pause on a connection error, a
  timeout, a 5xx or a 429: signed JSON by default, or the digest as plain text
  (MEMORY_NOTIFY_WEBHOOK_FORMAT=text: for ntfy, a Telegram bot relay) — signed too when
  MEMORY_NOTIFY_WEBHOOK_SECRET is set.
- `send_test(by=…)`: the same digest, marked as a test, to every configured channel (the
  Settings page's button, `POST /api/memory/notifications/test`).
- Every attempt is a `Delivery` row (channel, what, target — an address, or a webhook's
  scheme and host only: a URL can hold a token —, format, result).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import time
from dataclasses import dataclass
from email.header import Header
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from memory import clock, feed
from memory.errors import InvalidInput
from memory.models import Delivery
from proposals.diff import kind_label
from proposals.models import Notice, Proposal

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Memory-Signature"
WEBHOOK_TIMEOUT = 10
FORMATS = ("json", "text")
LISTED = 50  # proposals named in one digest


# --- what a digest says ----------------------------------------------------------------------


def language() -> str:
    """The owner's language: the digest's, and the pages' when a browser states none
    (LANGUAGE_CODE, from MEMORY_LANGUAGE)."""
    return settings.LANGUAGE_CODE


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
    """The webhook's JSON: counts, links, and the oldest LISTED proposals."""
    base = settings.MEMORY_PUBLIC_URL.rstrip("/")
    return {
        "pending": len(pending),
        "new": new,
        "url": f"{base}/manage/memory/proposals/",
        "remembered_this_week": feed.count_this_week(now),
        "remembered_url": f"{base}/manage/memory/activity/writes/",
        "language": language(),
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
            for p in pending[:LISTED]
        ],
    }


@dataclass(frozen=True)
class Digest:
    subject: str
    text: str
    payload: dict


def digest(pending: list[Proposal], *, new: int, now: dt.datetime, test: bool = False) -> Digest:
    """The notice in the owner's language: a subject, the plain text (the email, the text
    webhook) and the JSON payload (its labels in that language too). A test says so first."""
    with translation.override(language()):
        payload = notice_payload(pending, new=new, now=now)
        count = len(pending)
        subject = _("%(count)s memory proposal(s) wait for you") % {"count": count}
        lines = [
            _("%(pending)s proposal(s) wait for you (%(new)s new).")
            % {"pending": count, "new": new},
            "",
        ]
        for item in payload["proposals"]:
            lines.append(
                _("#%(id)s %(label)s — %(target)s (waiting %(hours)s h)")
                % {
                    "id": item["id"],
                    "label": item["label"],
                    "target": item["target"],
                    "hours": item["waiting_seconds"] // 3600,
                }
            )
        written = payload["remembered_this_week"]
        lines += [
            "",
            _("Review them: %(url)s") % {"url": payload["url"]},
            ngettext(
                "This week your assistants wrote %(count)s thing: %(url)s",
                "This week your assistants wrote %(count)s things: %(url)s",
                written,
            )
            % {"count": written, "url": payload["remembered_url"]},
        ]
        if test:
            subject = _("Test: %(subject)s") % {"subject": subject}
            first = _("A test from the Settings page: this is what a notice looks like.")
            lines = [first, "", *lines]
    return Digest(subject, "\n".join(lines) + "\n", {**payload, "test": test})


# --- delivering -----------------------------------------------------------------------------


def sign(body: bytes, secret: str) -> str:
    """The signature header's value: `sha256=<hex HMAC of the body>`."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def webhook_format() -> str:
    return settings.MEMORY_NOTIFY_WEBHOOK_FORMAT


def webhook_target(url: str) -> str:
    """What a delivery row keeps of a webhook URL: its scheme and host (a path or query
    may hold a token, as a Telegram bot's does)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}" if parts.netloc else "?"


def post_webhook(
    url: str, body: bytes, *, content_type: str, secret: str, title: str = "", attempts: int = 0
) -> tuple[bool, str, int]:
    """POST `body`, signed when `secret` is set; retried with a growing pause on a
    connection error, a timeout or a 5xx/429. Returns (ok, "sent" or why not, attempts)."""
    attempts = attempts or settings.MEMORY_NOTIFY_WEBHOOK_ATTEMPTS
    headers = {"Content-Type": content_type, "User-Agent": "agent-memory/notify"}
    if title:  # ntfy's title; RFC 2047 for what is not ASCII
        headers["Title"] = title if title.isascii() else Header(title, "utf-8").encode()
    if secret:
        headers[SIGNATURE_HEADER] = sign(body, secret)
    why = ""
    attempt = 0
    for attempt in range(attempts):
        if attempt:
            time.sleep(settings.MEMORY_NOTIFY_WEBHOOK_RETRY_DELAY * (2 ** (attempt - 1)))
        try:
            response = httpx.post(url, content=body, headers=headers, timeout=WEBHOOK_TIMEOUT)
        except httpx.HTTPError as exc:
            why = f"{exc.__class__.__name__}: {exc}"
            continue
        if response.status_code < 300:
            return True, "sent", attempt + 1
        why = f"HTTP {response.status_code}"
        if response.status_code < 500 and response.status_code != 429:
            break  # the receiver refused it; asking again would not help
    return False, f"failed after {attempt + 1} attempt(s): {why}", attempt + 1


def deliver_webhook(message: Digest, *, what: str, by: str = "") -> Delivery:
    """The digest to MEMORY_NOTIFY_WEBHOOK_URL as signed JSON or plain text; a row."""
    url = settings.MEMORY_NOTIFY_WEBHOOK_URL
    form = webhook_format()
    if form == "text":
        body, content_type = message.text.encode("utf-8"), "text/plain; charset=utf-8"
    else:
        body = json.dumps(message.payload, ensure_ascii=False).encode("utf-8")
        content_type = "application/json"
    ok, result, attempts = post_webhook(
        url,
        body,
        content_type=content_type,
        secret=settings.MEMORY_NOTIFY_WEBHOOK_SECRET,
        title=message.subject if form == "text" else "",
    )
    return Delivery.objects.create(
        channel=Delivery.Channel.WEBHOOK,
        what=what,
        target=webhook_target(url),
        payload_format=form,
        ok=ok,
        result=result[:500],
        attempts=attempts,
        by=by,
    )


def deliver_email(message: Digest, *, what: str, by: str = "") -> Delivery:
    """The digest to MEMORY_NOTIFY_EMAIL; a row (an SMTP error is its result, not a raise)."""
    address = settings.MEMORY_NOTIFY_EMAIL
    try:
        send_mail(message.subject, message.text, None, [address])
        ok, result = True, "sent"
    except Exception as exc:  # SMTP down: say so in the row, try the webhook still
        log.warning("notice email failed: %s", exc)
        ok, result = False, f"failed: {exc}"
    return Delivery.objects.create(
        channel=Delivery.Channel.EMAIL,
        what=what,
        target=address,
        payload_format="text",
        ok=ok,
        result=result[:500],
        by=by,
    )


def _deliver(message: Digest, *, what: str, by: str = "") -> list[Delivery]:
    done = []
    if settings.MEMORY_NOTIFY_EMAIL:
        done.append(deliver_email(message, what=what, by=by))
    if settings.MEMORY_NOTIFY_WEBHOOK_URL:
        done.append(deliver_webhook(message, what=what, by=by))
    return done


def _channels(done: list[Delivery]) -> dict[str, str]:
    return {row.channel: row.result for row in done}


# --- when ---------------------------------------------------------------------------------------


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
    if not settings.MEMORY_NOTIFY_EMAIL and not settings.MEMORY_NOTIFY_WEBHOOK_URL:
        return None
    new = sum(1 for p in pending if p.pk > told)
    done = _deliver(digest(pending, new=new, now=now), what="digest")
    return Notice.objects.create(
        sent_at=now,
        reason=reason,
        pending=len(pending),
        newest_proposal=newest,
        channels=_channels(done),
    )


def send_test(*, by: str, now: dt.datetime | None = None) -> list[Delivery]:
    """The digest of what waits now, marked as a test, to every configured channel (never
    a Notice: the next real one is not held back). InvalidInput (422) when no channel is
    configured. Returns the delivery rows."""
    if not settings.MEMORY_NOTIFY_EMAIL and not settings.MEMORY_NOTIFY_WEBHOOK_URL:
        raise InvalidInput(
            "No channel to send to: set MEMORY_NOTIFY_EMAIL and/or MEMORY_NOTIFY_WEBHOOK_URL "
            "(docs/configuration.md) and restart."
        )
    now = now or timezone.now()
    pending = list(
        Proposal.objects.filter(status=Proposal.Status.PENDING).order_by("created_at", "id")
    )
    return _deliver(digest(pending, new=0, now=now, test=True), what="test", by=by)


# --- what the Settings page shows ----------------------------------------------------------


def status() -> dict:
    """Whether each channel is configured (from the environment), and how."""
    email_host = settings.EMAIL_HOST
    url = settings.MEMORY_NOTIFY_WEBHOOK_URL
    return {
        "email": {
            "configured": bool(settings.MEMORY_NOTIFY_EMAIL),
            "to": settings.MEMORY_NOTIFY_EMAIL,
            "smtp": f"{email_host}:{settings.EMAIL_PORT}" if email_host else "",
        },
        "webhook": {
            "configured": bool(url),
            "target": webhook_target(url) if url else "",
            "signed": bool(settings.MEMORY_NOTIFY_WEBHOOK_SECRET),
            "format": webhook_format(),
        },
        "at": settings.MEMORY_NOTIFY_AT,
        "pending": settings.MEMORY_NOTIFY_PENDING,
        "language": language(),
    }


def last_deliveries(limit: int = 10) -> list[Delivery]:
    return list(Delivery.objects.order_by("-sent_at", "-id")[:limit])
