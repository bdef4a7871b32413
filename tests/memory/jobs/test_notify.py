"""The queue comes to the owner (SPEC §7): an email digest through a real SMTP
conversation with a local sink (aiosmtpd on loopback), and a signed webhook POST to a local
receiver, retried; at the owner's time of day or past N pending; once per new batch; every
delivery a row; the digest in the owner's language, counting what was remembered; a plain
text webhook for chat services; a test sent from Settings."""

from __future__ import annotations

import datetime as dt
import email
import email.header
import hashlib
import hmac
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller

from memory.errors import InvalidInput
from memory.jobs import notify
from memory.models import Delivery
from memory.tools import call_tool_result
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

    assert notify.notify_pending(now=_at(7, 59)) is None  # not yet the owner's time
    notice = notify.notify_pending(now=_at(8, 1))

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
    assert notify.notify_pending(now=_at(8, 30)) is None
    assert notify.notify_pending(now=_at(8, 1) + dt.timedelta(days=1)) is None
    assert len(smtp.messages) == 1

    # A new proposal is a new batch: told at the next due moment.
    add_memory_lines_or_propose(helper_agent, ["Lan swims"], source="job:brief")
    assert notify.notify_pending(now=_at(9)) is None  # today's notice was sent already
    assert notify.notify_pending(now=_at(8, 1) + dt.timedelta(days=1)) is not None
    assert len(smtp.messages) == 2
    assert Notice.objects.count() == 2


def test_past_n_pending_it_tells_at_once(helper_agent, smtp, settings):
    settings.MEMORY_NOTIFY_AT = ""
    settings.MEMORY_NOTIFY_PENDING = 2
    add_memory_lines_or_propose(helper_agent, ["one"], source="job:a")
    assert notify.notify_pending() is None
    add_memory_lines_or_propose(helper_agent, ["two"], source="job:b")
    notice = notify.notify_pending()
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
        notice = notify.notify_pending()
    finally:
        receiver.stop()
    assert notice.channels["webhook"].startswith("failed after 3 attempt(s): HTTP 503")
    assert len(receiver.requests) == 3


def test_nothing_is_sent_without_a_channel_or_a_proposal(helper_agent, settings):
    settings.MEMORY_NOTIFY_PENDING = 1
    assert notify.notify_pending() is None
    add_memory_lines_or_propose(helper_agent, ["one"], source="job:a")
    assert notify.notify_pending() is None  # no email address, no webhook configured


def test_every_delivery_is_a_row_and_a_webhook_url_keeps_only_its_host(
    helper_agent, smtp, hook, settings
):
    settings.MEMORY_NOTIFY_PENDING = 1
    settings.MEMORY_NOTIFY_WEBHOOK_URL = hook.url.replace("/hook", "/bot123:SECRET/send")
    add_memory_lines_or_propose(helper_agent, ["one"], source="job:a")
    notify.notify_pending()
    email, webhook = Delivery.objects.order_by("id")
    assert (email.channel, email.what, email.target, email.ok, email.result) == (
        "email",
        "digest",
        "owner@example.com",
        True,
        "sent",
    )
    host = hook.url.removesuffix("/hook")
    assert (webhook.channel, webhook.target, webhook.payload_format) == ("webhook", host, "json")
    assert (webhook.ok, webhook.result, webhook.attempts) == (True, "sent", 3)
    assert "SECRET" not in webhook.target


def test_the_digest_counts_what_was_remembered_this_week(helper_agent, master, smtp, settings):
    settings.MEMORY_NOTIFY_PENDING = 1
    for text in ("a", "b"):
        call_tool_result(master, "memory_save", {"text": text}, source="telegram")
    add_memory_lines_or_propose(helper_agent, ["one"], source="job:a")
    notify.notify_pending()
    ((_rcpt, message),) = smtp.messages
    assert (
        "This week your assistants wrote 2 things: "
        "http://127.0.0.1:8000/manage/memory/activity/writes/" in message
    )


def test_a_plain_text_webhook_for_a_chat_service(helper_agent, settings):
    receiver = Receiver()
    try:
        settings.MEMORY_NOTIFY_PENDING = 1
        settings.MEMORY_NOTIFY_WEBHOOK_URL = receiver.url
        settings.MEMORY_NOTIFY_WEBHOOK_FORMAT = "text"
        settings.MEMORY_NOTIFY_WEBHOOK_SECRET = SECRET
        _, proposal = add_memory_lines_or_propose(helper_agent, ["Lan bơi"], source="job:a")
        notice = notify.notify_pending()
    finally:
        receiver.stop()
    assert notice.channels == {"webhook": "sent"}
    ((headers, body),) = receiver.requests
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    text = body.decode("utf-8")
    assert text.startswith("1 proposal(s) wait for you (1 new).\n\n")
    assert f"#{proposal.pk} Add lines to MEMORY.md — agents/helper/MEMORY.md (waiting 0 h)" in text
    assert headers["Title"] == "1 memory proposal(s) wait for you"
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-Memory-Signature"] == expected
    assert Delivery.objects.get().payload_format == "text"


def test_the_digest_is_in_the_owners_language(helper_agent, smtp, settings):
    settings.LANGUAGE_CODE = "vi"
    settings.MEMORY_NOTIFY_PENDING = 1
    _, proposal = add_memory_lines_or_propose(helper_agent, ["Lan bơi"], source="job:a")
    notify.notify_pending()
    ((_rcpt, message),) = smtp.messages
    parsed = email.message_from_bytes(message.encode("utf-8"))
    subject = str(email.header.make_header(email.header.decode_header(parsed["Subject"])))
    body = parsed.get_payload(decode=True).decode("utf-8")
    assert subject == "1 đề xuất bộ nhớ đang chờ bạn"
    assert "1 đề xuất đang chờ bạn (1 mới)." in body
    assert f"#{proposal.pk} Thêm dòng vào MEMORY.md" in body
    assert "Tuần này các trợ lý của bạn đã ghi 0 điều:" in body


def test_a_test_goes_to_every_channel_and_is_no_notice(helper_agent, smtp, hook, settings):
    add_memory_lines_or_propose(helper_agent, ["one"], source="job:a")
    done = notify.send_test(by="alice")
    assert [(row.channel, row.what, row.ok, row.by) for row in done] == [
        ("email", "test", True, "alice"),
        ("webhook", "test", True, "alice"),
    ]
    ((_rcpt, message),) = smtp.messages
    assert "Subject: Test: 1 memory proposal(s) wait for you" in message
    assert "A test from the Settings page: this is what a notice looks like." in message
    assert json.loads(hook.requests[-1][1])["test"] is True
    assert Notice.objects.count() == 0


def test_a_test_without_a_channel_says_what_to_set(settings, db):
    settings.MEMORY_NOTIFY_EMAIL = ""
    settings.MEMORY_NOTIFY_WEBHOOK_URL = ""
    with pytest.raises(InvalidInput) as caught:
        notify.send_test(by="alice")
    assert caught.value.message == (
        "No channel to send to: set MEMORY_NOTIFY_EMAIL and/or MEMORY_NOTIFY_WEBHOOK_URL "
        "(docs/configuration.md) and restart."
    )
    assert Delivery.objects.count() == 0
