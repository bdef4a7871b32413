"""Settings → Notifications (SPEC §7, §15; memory/manage/notifications.py): each channel's
status from the environment, the last deliveries with their result, and a test the owner
sends (POST, CSRF) — to a local SMTP sink and webhook receiver."""

from __future__ import annotations

import re

from django.test import Client

from memory.models import Delivery
from tests.memory.jobs.test_notify import Receiver

SETTINGS = "/manage/memory/settings/master/"
TEST = "/manage/memory/settings/notifications/test/"


def _text(response) -> str:
    assert response.status_code == 200, response.status_code
    html = response.content.decode()
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def test_nothing_configured_says_what_to_set(pages, master, settings):
    settings.MEMORY_NOTIFY_EMAIL = ""
    settings.MEMORY_NOTIFY_WEBHOOK_URL = ""
    html = pages.get(SETTINGS).content.decode()
    text = _text(pages.get(SETTINGS))
    assert "Email not configured set MEMORY_NOTIFY_EMAIL" in text
    assert "Webhook not configured set MEMORY_NOTIFY_WEBHOOK_URL" in text
    assert "No channel is configured yet." in text and "Nothing sent yet." in text
    assert re.search(r'<button type="submit" disabled[^>]*>Send a test</button>', html)
    refused = pages.post(TEST, follow=True)
    assert (
        "Not saved: No channel to send to: set MEMORY_NOTIFY_EMAIL and/or "
        "MEMORY_NOTIFY_WEBHOOK_URL (docs/configuration.md) and restart." in _text(refused)
    )


def test_a_test_reaches_the_sink_and_the_receiver_and_is_listed(
    pages, master, smtp, hook, settings
):
    settings.MEMORY_NOTIFY_WEBHOOK_FORMAT = "text"
    text = _text(pages.get(SETTINGS))
    host = hook.url.removesuffix("/hook")
    assert "Email configured owner@example.com SMTP 127.0.0.1:" in text
    assert f"Webhook configured {host} plain text (for a chat service) · signed" in text

    response = pages.post(TEST, follow=True)
    text = _text(response)
    assert "Test sent by email to owner@example.com." in text
    assert f"Test sent by webhook to {host}." in text
    assert len(smtp.messages) == 1 and len(hook.requests) == 3  # two 503s, then sent
    assert hook.requests[-1][1].decode().startswith("A test from the Settings page")
    rows = re.findall(r'<tr class="delivery-(ok|failed)">', response.content.decode())
    assert rows == ["ok", "ok"]
    assert "test (alice)" in text and "after 3 attempts" in text
    assert Delivery.objects.filter(what="test", by="alice").count() == 2


def test_a_failed_delivery_shows_why(pages, master, settings):
    receiver = Receiver(failures=10)
    try:
        settings.MEMORY_NOTIFY_EMAIL = ""
        settings.MEMORY_NOTIFY_WEBHOOK_URL = receiver.url
        settings.MEMORY_NOTIFY_WEBHOOK_RETRY_DELAY = 0.01
        text = _text(pages.post(TEST, follow=True))
    finally:
        receiver.stop()
    host = receiver.url.removesuffix("/hook")
    assert f"Test by webhook to {host} not delivered: failed after 3 attempt(s): HTTP 503" in text
    assert "failed failed after 3 attempt(s): HTTP 503" in text


def test_only_the_owner_may_send_a_test_and_only_by_post_with_csrf(pages, master, settings, db):
    settings.MEMORY_NOTIFY_EMAIL = "owner@example.com"
    assert pages.get(TEST).status_code == 405
    anonymous = Client()
    assert anonymous.post(TEST).status_code == 302  # to the sign-in page
    strict = Client(enforce_csrf_checks=True)
    from django.contrib.auth import get_user_model

    strict.force_login(get_user_model().objects.get(username="alice"))
    assert strict.post(TEST).status_code == 403
    assert Delivery.objects.count() == 0
