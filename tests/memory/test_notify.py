"""The queue comes to the owner (SPEC §7): an email digest through a real SMTP
conversation with a local sink (aiosmtpd on loopback), and a signed webhook POST to a local
receiver, retried; at the owner's time of day or past N pending; once per new batch."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller

from memory.jobs import review
from memory.writes import add_memory_lines_or_propose
from proposals.models import Notice

SECRET = "s3cret"


class Sink:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], str]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's API
        self.messages.append((list(envelope.rcpt_tos), envelope.content.decode("utf-8")))
        return "250 OK"


@pytest.fixture
def smtp(settings):
    sink = Sink()
    with socket.socket() as probe:  # a free loopback port (the controller checks it by connecting)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = port
    settings.MEMORY_NOTIFY_EMAIL = "owner@example.com"
    yield sink
    controller.stop()


class Receiver:
    """A webhook receiver on loopback that fails the first `failures` requests with 503."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.requests: list[tuple[dict, bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's API
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                code = 503 if receiver.failures > 0 else 200
                receiver.failures -= 1
                self.send_response(code)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()


@pytest.fixture
def hook(settings):
    receiver = Receiver(failures=2)
    settings.MEMORY_NOTIFY_WEBHOOK_URL = receiver.url
    settings.MEMORY_NOTIFY_WEBHOOK_SECRET = SECRET
    settings.MEMORY_NOTIFY_WEBHOOK_RETRY_DELAY = 0.01
    yield receiver
    receiver.stop()


def _at(hour: int, minute: int = 0) -> dt.datetime:
    from memory import clock

    today = clock.local_now().date()
    return dt.datetime(today.year, today.month, today.day, hour, minute, tzinfo=clock.local_tz())


def test_a_digest_and_a_signed_webhook_at_the_owners_time_once_per_batch(
    helper_agent, smtp, hook, settings
):
    settings.MEMORY_NOTIFY_AT = "08:00"
    settings.MEMORY_NOTIFY_PENDING = 0
    _, proposal = add_memory_lines_or_propose(helper_agent, ["Lan runs"], source="job:brief")

    assert review.notify_pending(now=_at(7, 59)) is None  # not yet the owner's time
    notice = review.notify_pending(now=_at(8, 1))

    assert notice is not None and notice.reason == "time of day"
    assert notice.channels == {"email": "sent", "webhook": "sent"}
    ((rcpt, message),) = smtp.messages
    assert rcpt == ["owner@example.com"]
    assert "Subject: 1 memory proposal(s) wait for you" in message
    assert f"#{proposal.pk} Add lines to MEMORY.md" in message
    assert len(hook.requests) == 3  # two 503s, then accepted
    headers, body = hook.requests[-1]
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-Memory-Signature"] == expected
    data = json.loads(body)
    assert data["pending"] == 1 and data["proposals"][0]["id"] == proposal.pk

    # The same batch is never told twice, even on later days.
    assert review.notify_pending(now=_at(8, 30)) is None
    assert review.notify_pending(now=_at(8, 1) + dt.timedelta(days=1)) is None
    assert len(smtp.messages) == 1

    # A new proposal is a new batch: told at the next due moment.
    add_memory_lines_or_propose(helper_agent, ["Lan swims"], source="job:brief")
    assert review.notify_pending(now=_at(9)) is None  # today's notice was sent already
    assert review.notify_pending(now=_at(8, 1) + dt.timedelta(days=1)) is not None
    assert len(smtp.messages) == 2
    assert Notice.objects.count() == 2


def test_past_n_pending_it_tells_at_once(helper_agent, smtp, settings):
    settings.MEMORY_NOTIFY_AT = ""
    settings.MEMORY_NOTIFY_PENDING = 2
    add_memory_lines_or_propose(helper_agent, ["one"], source="job:a")
    assert review.notify_pending() is None
    add_memory_lines_or_propose(helper_agent, ["two"], source="job:b")
    notice = review.notify_pending()
    assert notice.reason == "pending count" and notice.pending == 2
    assert len(smtp.messages) == 1


def test_a_webhook_that_keeps_failing_is_recorded_as_failed(helper_agent, settings):
    receiver = Receiver(failures=10)
    try:
        settings.MEMORY_NOTIFY_AT = ""
        settings.MEMORY_NOTIFY_PENDING = 1
        settings.MEMORY_NOTIFY_EMAIL = ""
        settings.MEMORY_NOTIFY_WEBHOOK_URL = receiver.url
        settings.MEMORY_NOTIFY_WEBHOOK_RETRY_DELAY = 0.01
        add_memory_lines_or_propose(helper_agent, ["one"], source="job:a")
        notice = review.notify_pending()
    finally:
        receiver.stop()
    assert notice.channels["webhook"].startswith("failed after 3 attempt(s): HTTP 503")
    assert len(receiver.requests) == 3


def test_nothing_is_sent_without_a_channel_or_a_proposal(helper_agent, settings):
    settings.MEMORY_NOTIFY_PENDING = 1
    assert review.notify_pending() is None
    add_memory_lines_or_propose(helper_agent, ["one"], source="job:a")
    assert review.notify_pending() is None  # no email address, no webhook configured
