"""SPEC §15 Management pages and admin: what the pages and the Django admin refuse, and
signing in."""

from __future__ import annotations

from django.test import Client


def test_the_admin_refuses_a_cron_that_never_fires(alice, master):
    client = Client()
    client.force_login(alice)
    response = client.post(
        "/admin/memory/agent/master/change/",
        {"name": "Master", "memory_consolidate": "0 0 31 2 *"},
    )
    assert response.status_code == 200  # the form again, with the error
    assert "never fires" in response.content.decode()
    master.refresh_from_db()
    assert master.memory_consolidate == ""


def test_sign_in_is_throttled_after_repeated_failures(alice, settings):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = client.post("/manage/memory/login/", {"username": "alice", "password": "wrong"})
        assert response.status_code == 200  # the form again
    last = client.post("/manage/memory/login/", {"username": "alice", "password": "wrong"})
    assert last.status_code == 429
    locked = client.post("/manage/memory/login/", {"username": "alice", "password": "pw-alice-123"})
    assert locked.status_code == 429
    assert "Too many failed sign-ins" in locked.content.decode()
    admin = client.post("/admin/login/", {"username": "alice", "password": "pw-alice-123"})
    assert admin.status_code == 429
    # Another address (or another username) is not paused.
    other = Client(REMOTE_ADDR="10.9.9.9")
    ok = other.post("/manage/memory/login/", {"username": "alice", "password": "pw-alice-123"})
    assert ok.status_code == 302
