"""Exactly once under real concurrency (SPEC §7): many HTTP requests at once against a
live server, and several OS processes deciding the same proposal. Runs on SQLite and, with
DATABASE_URL, on PostgreSQL."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from django.db import connection

from memory import facts
from memory import workspace as ws
from proposals import actions
from proposals.models import Proposal
from tests.helpers import all_at_once
from tests.processes import run_together
from tests.proposals import counting_kind
from tests.proposals.helpers import FACT, fact_proposal

HTTP_REQUESTS = 16
PROCESSES = 4
THREADS_PER_PROCESS = 4


@pytest.mark.django_db(transaction=True)
def test_it_applies_once_under_many_concurrent_http_approvals(live_server, live_owner_key):
    proposal = fact_proposal()
    url = f"{live_server.url}/api/memory/proposals/{proposal.pk}"
    auth = {"Authorization": f"Token {live_owner_key}"}

    responses = all_at_once(
        [lambda c: c.post(url, json={"approve": True}, headers=auth)] * HTTP_REQUESTS
    )

    codes = sorted(response.status_code for response in responses)
    assert codes == [200] + [409] * (HTTP_REQUESTS - 1), [r.text for r in responses]
    proposal.refresh_from_db()
    assert proposal.status == "approved"
    assert ws.read(FACT) == proposal.payload["writes"][FACT]
    assert ws.read(facts.INDEX_PATH) == (
        "- [coffee](coffee.md) (preference) — Likes black coffee\n"
    )


@pytest.mark.django_db(transaction=True)
def test_it_decides_once_when_approvals_and_rejections_race(live_server, live_owner_key):
    proposal = fact_proposal()
    url = f"{live_server.url}/api/memory/proposals/{proposal.pk}"
    auth = {"Authorization": f"Token {live_owner_key}"}
    bodies = [{"approve": index % 2 == 0} for index in range(HTTP_REQUESTS)]

    responses = all_at_once(
        [lambda c, body=body: c.post(url, json=body, headers=auth) for body in bodies]
    )

    winners = [r for r in responses if r.status_code == 200]
    assert len(winners) == 1
    assert all(r.status_code == 409 for r in responses if r is not winners[0])
    proposal.refresh_from_db()
    assert proposal.status == winners[0].json()["status"]
    expected = proposal.payload["writes"][FACT] if proposal.status == "approved" else None
    assert ws.read(FACT) == expected


@pytest.mark.django_db(transaction=True)
def test_it_applies_once_when_several_processes_decide(workspace, tmp_path):
    counting_kind.register()
    proposal = actions.propose(
        "test_counted",
        agent=None,
        target="counted.md",
        payload={"path": "counted.md", "text": "applied once\n"},
        source="job:test",
    )
    go = tmp_path / "go"
    worker = Path(__file__).with_name("decide_worker.py")
    db_name = connection.settings_dict["NAME"]
    commands = [
        [str(worker), db_name, str(proposal.pk), f"p{n}", str(THREADS_PER_PROCESS), str(go)]
        for n in range(PROCESSES)
    ]
    results = run_together(commands, go)

    lines = [line for _, out, _ in results for line in out.splitlines()]
    assert all(code == 0 for code, _, _ in results), [err for _, _, err in results]
    assert len(lines) == PROCESSES * THREADS_PER_PROCESS
    assert not [line for line in lines if line.startswith("error")], lines
    winners = [line.split()[1] for line in lines if line.startswith("ok")]
    assert len(winners) == 1, lines
    proposal.refresh_from_db()
    assert proposal.status == "approved"
    assert proposal.decided_by == winners[0]
    assert ws.read("counted.md") == "applied once\n"
    assert ws.read(counting_kind.LOG) == f"{proposal.pk} {winners[0]}\n"


def test_it_keeps_the_row_pending_when_the_write_fails(db, workspace):
    # The second path sits below a regular file, so writing it fails after the first path
    # was written: the row must stay pending and the first file must be put back.
    counting_kind.register()
    ws.write("blocker.md", "I am a file\n")
    ws.write("a.md", "A old\n")
    proposal = actions.propose(
        "test_counted",
        agent=None,
        target="a.md",
        payload={"path": "a.md", "text": "A new\n"},
        source="job:test",
    )
    # Point the stored write at a path that cannot be written, as a failing disk would.
    Proposal.objects.filter(pk=proposal.pk).update(
        payload={**proposal.payload, "writes": {"a.md": "A new\n", "blocker.md/x.md": "X"}},
        base_hashes={"a.md": proposal.base_hash, "blocker.md/x.md": ws.ABSENT},
    )
    proposal.refresh_from_db()

    with pytest.raises(OSError):
        actions.approve(proposal, by="alice")

    proposal.refresh_from_db()
    assert proposal.status == "pending"
    assert ws.read("a.md") == "A old\n"
    assert ws.read(counting_kind.LOG) is None


@pytest.mark.django_db(transaction=True)
def test_it_does_not_stall_when_a_job_proposes_under_a_file_lock_during_an_approval(
    helper_agent,
):
    # Consolidation creates its proposal while holding MEMORY.md's lock. An approval of a
    # proposal on the same file must take the locks in the same order (file, then
    # database), or each would wait for the other until SQLite's 30 s busy timeout.
    import time

    path = "agents/helper/MEMORY.md"
    ws.write(path, "old\n")
    pending = actions.propose(
        "agent_memory", agent=helper_agent, target=path, payload={"lines": ["a"]}, source="job:1"
    )
    holding = threading.Event()
    results: dict[str, object] = {}

    def job() -> None:
        try:
            with ws.locked(path):
                holding.set()
                time.sleep(0.3)  # the approval is now waiting for a lock
                results["job"] = actions.propose(
                    "agent_memory",
                    agent=helper_agent,
                    target=path,
                    payload={"lines": ["b"]},
                    source="job:2",
                )
        except BaseException as exc:
            results["job"] = exc
        finally:
            connection.close()

    def approval() -> None:
        holding.wait()
        try:
            results["approval"] = actions.approve(pending, by="alice")
        except BaseException as exc:
            results["approval"] = exc
        finally:
            connection.close()

    started = time.monotonic()
    threads = [threading.Thread(target=job), threading.Thread(target=approval)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert time.monotonic() - started < 10, results
    assert isinstance(results["job"], Proposal), results
    assert isinstance(results["approval"], Proposal), results
    assert ws.read(path) == "old\na\n"
