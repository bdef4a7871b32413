"""SPEC §17 over real HTTP: a body over the size limit is 413 (never a 500), on the API and
on the management pages' forms, and nothing is written."""

from __future__ import annotations

import httpx
import pytest


@pytest.mark.parametrize(
    "method,path",
    [
        ("PUT", "/api/agents/master/memory"),
        ("PUT", "/api/memory/user"),
        ("PUT", "/api/agents/master/memory/notes/2026-01-01"),
        ("POST", "/api/agents/master/tools/memory_save"),
        ("POST", "/api/agents/master/memory/lines"),
        ("PUT", "/api/agents/master/script-store/schedule/s/k"),
    ],
)
def test_it_answers_413_over_http(live_server, live_owner_key, workspace, settings, method, path):
    big = b'{"body": "' + b"x" * (settings.MEMORY_MAX_BODY_BYTES + 1) + b'"}'
    with httpx.Client(timeout=60) as client:
        response = client.request(
            method,
            f"{live_server.url}{path}",
            content=big,
            headers={
                "Authorization": f"Token {live_owner_key}",
                "Content-Type": "application/json",
            },
        )
    assert response.status_code == 413
    memory_md = workspace / "MEMORY.md"  # absent, or empty as the agent's creation left it
    assert not memory_md.exists() or memory_md.read_text() == ""
    assert not (workspace / "users/owner/USER.md").exists()
    assert not list((workspace / "memory").glob("*.md"))


def test_it_answers_413_to_a_big_form_on_the_pages(alice, master, workspace, settings):
    from django.test import Client

    client = Client()
    client.force_login(alice)
    response = client.post(
        "/manage/memory/user/", {"body": "y" * (settings.MEMORY_MAX_BODY_BYTES + 1)}
    )
    assert response.status_code == 413
    assert not (workspace / "users/owner/USER.md").exists()
