"""SPEC §7 and §1 over real HTTP (live_server, threads): undo happens once; concurrent
memory_save calls lose nothing; concurrent fact writes keep INDEX.md whole."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.helpers import all_at_once

# The live server's listen backlog is small (socketserver's request_queue_size): more
# simultaneous connects than that are reset by the kernel, which would test the harness.
THREADS = 8


def test_it_undoes_once_under_concurrent_http_requests(live_server, live_owner_key, workspace):
    headers = {"Authorization": f"Token {live_owner_key}"}
    base = live_server.url
    with httpx.Client(timeout=60, headers=headers) as client:
        assert client.put(
            f"{base}/api/memory/user/facts/tea",
            json={"description": "likes tea", "type": "preference", "body": "b"},
        ).status_code in (200, 201)
        original = (workspace / "users/owner/facts/tea.md").read_bytes()
        proposal = client.put(
            f"{base}/api/memory/user/facts/tea",
            json={
                "description": "likes oolong",
                "type": "preference",
                "body": "b",
                "source": "job:n",
            },
        ).json()["proposal"]
        assert (
            client.post(
                f"{base}/api/memory/proposals/{proposal['id']}", json={"approve": True}
            ).status_code
            == 200
        )
    url = f"{base}/api/memory/proposals/{proposal['id']}/undo"
    answers = all_at_once([lambda c: c.post(url, headers=headers)] * THREADS)
    codes = sorted(r.status_code for r in answers)
    assert codes == [200] + [409] * (THREADS - 1), codes
    assert (workspace / "users/owner/facts/tea.md").read_bytes() == original


def test_it_loses_no_memory_save_line_under_concurrent_http_calls(
    live_server, live_owner_key, workspace, settings
):
    headers = {"Authorization": f"Token {live_owner_key}"}
    url = f"{live_server.url}/api/agents/master/tools/memory_save"
    calls = [
        (lambda i: (lambda c: c.post(url, json={"text": f"entry {i}"}, headers=headers)))(i)
        for i in range(THREADS * 2)
    ]
    answers = all_at_once(calls[:THREADS]) + all_at_once(calls[THREADS:])
    assert all(r.status_code == 200 for r in answers), [r.status_code for r in answers]
    today = dt.datetime.now(ZoneInfo(settings.MEMORY_TIME_ZONE)).date()
    text = (workspace / f"memory/{today}.md").read_text(encoding="utf-8")
    assert text.count(f"# {today}") == 1
    assert sorted(
        int(line.rsplit(" ", 1)[1]) for line in text.splitlines() if " entry " in line
    ) == list(range(THREADS * 2))


def test_it_keeps_index_md_whole_under_concurrent_fact_writes(
    live_server, live_owner_key, workspace
):
    headers = {"Authorization": f"Token {live_owner_key}"}
    base = live_server.url
    calls = [
        (
            lambda i: (
                lambda c: c.put(
                    f"{base}/api/memory/user/facts/fact-{i:02d}",
                    json={"description": f"d{i}", "type": "profile", "body": ""},
                    headers=headers,
                )
            )
        )(i)
        for i in range(THREADS)
    ]
    answers = all_at_once(calls)
    assert all(r.status_code in (200, 201) for r in answers), [r.status_code for r in answers]
    index = (workspace / "users/owner/facts/INDEX.md").read_text(encoding="utf-8")
    lines = [line for line in index.splitlines() if line.startswith("- ")]
    assert lines == [f"- [fact-{i:02d}](fact-{i:02d}.md) (profile) — d{i}" for i in range(THREADS)]


@pytest.mark.django_db
def test_it_has_the_default_master_agent_after_migrate():
    from memory.models import Agent

    master = Agent.objects.get(id="master")
    assert master.is_default is True
    assert Agent.objects.filter(is_default=True).count() == 1
