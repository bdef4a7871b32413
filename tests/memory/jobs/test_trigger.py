"""Starting a consolidation: the endpoint, 409 while one runs (also across processes),
duplicate task delivery, the reaper, and the runs API (SPEC §8, §12, §14.1)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ

from memory import workspace
from memory.errors import Conflict
from memory.jobs import runs
from memory.jobs.tasks import consolidate_task, reap_runs_task, scheduled_consolidate
from memory.models import Run
from proposals.models import Proposal
from tests.memory.jobs.conftest import day, rewrite_answer, write_memory, write_note
from tests.processes import run_together

MEMORY = "# Memory\n\n- Owner lives in Hanoi\n"
RUN_FIELDS = {
    "id", "agent", "kind", "status", "summary", "reasons", "tokens_in", "tokens_out", "cost",
    "proposals", "model", "started_at", "finished_at",
}  # fmt: skip


def url(agent_id: str) -> str:
    return f"/api/agents/{agent_id}/memory/consolidate"


def test_it_answers_202_with_a_running_run_and_queues_the_task(owner_client, helper_agent):
    response = owner_client.post(url("helper"))

    assert response.status_code == 202
    run = Run.objects.get()
    assert response.json()["run"]["id"] == run.pk
    assert response.json()["run"]["status"] == "running"
    assert (run.kind, run.trigger, run.status) == ("consolidate", "api", "running")
    assert OrmQ.objects.count() == 1  # handed to a django-q2 worker


def test_a_second_trigger_while_the_first_runs_is_409(owner_client, helper_agent, master):
    assert owner_client.post(url("helper")).status_code == 202

    second = owner_client.post(url("helper"))

    assert second.status_code == 409
    assert second.json()["detail"] == "a consolidation or compile is already running for helper"
    assert Run.objects.count() == 1
    assert owner_client.post(url("master")).status_code == 202  # another agent is free


def test_a_running_compile_blocks_a_consolidation_too(owner_client, helper_agent):
    runs.start_run(helper_agent, Run.Kind.COMPILE, trigger="test")

    assert owner_client.post(url("helper")).status_code == 409


def test_a_fact_review_does_not_block_a_consolidation(owner_client, master):
    runs.start_run(master, Run.Kind.FACT_REVIEW, trigger="test")

    assert owner_client.post(url("master")).status_code == 202


@pytest.mark.django_db(transaction=True)
def test_only_one_of_two_processes_starts_a_run(workspace, tmp_path):
    from memory.models import Agent

    Agent.objects.create(id="helper", name="Helper")
    go = tmp_path / "go"
    worker = Path(__file__).with_name("start_worker.py")
    db_name = connection.settings_dict["NAME"]
    results = run_together([[str(worker), db_name, "helper", str(go)]] * 2, go)

    lines = sorted(out.strip() for _, out, _ in results)
    assert all(code == 0 for code, _, _ in results), [err for _, _, err in results]
    assert len(lines) == 2
    assert lines[0] == "conflict a consolidation or compile is already running for helper"
    assert lines[1].startswith("started ")
    (run,) = Run.objects.filter(agent_id="helper")
    assert run.status == "running"
    assert lines[1] == f"started {run.pk}"


def test_the_task_does_the_work_once_even_when_delivered_twice(
    owner_client, helper_agent, fake_llm
):
    path = write_memory(helper_agent, MEMORY)
    write_note(helper_agent, f"{day(0)}.md", "- news\n")
    fake_llm.script(rewrite_answer(MEMORY + f"- news ({day(0)})\n"))
    run_id = owner_client.post(url("helper")).json()["run"]["id"]

    assert consolidate_task(run_id) == "succeeded"
    assert consolidate_task(run_id) == "already taken"

    assert Run.objects.filter(kind="consolidate").count() == 1
    assert Proposal.objects.filter(kind="memory_rewrite").count() == 1
    assert workspace.read(path) == MEMORY
    run = Run.objects.get(pk=run_id)
    assert run.status == "succeeded"
    # After it finished, a new trigger is welcome again.
    assert owner_client.post(url("helper")).status_code == 202


def test_the_endpoint_runs_inline_when_q_is_synchronous(
    owner_client, helper_agent, fake_llm, monkeypatch
):
    monkeypatch.setattr(Conf, "SYNC", True)
    write_memory(helper_agent, MEMORY)
    write_note(helper_agent, f"{day(0)}.md", "- news\n")
    fake_llm.script(rewrite_answer(MEMORY + "- news\n"))

    response = owner_client.post(url("helper"))

    assert response.status_code == 202
    assert response.json()["run"]["status"] == "succeeded"
    assert Proposal.objects.filter(kind="memory_rewrite").count() == 1


def test_a_scheduled_firing_delivered_twice_makes_one_run(helper_agent, fake_llm):
    write_memory(helper_agent, MEMORY)
    write_note(helper_agent, f"{day(0)}.md", "- news\n")
    fake_llm.script(rewrite_answer(MEMORY + "- news\n"))
    when = "2026-11-30T03:00:00+00:00"

    assert scheduled_consolidate("helper", intended_date=when) == "succeeded"
    assert scheduled_consolidate("helper", intended_date=when) == "succeeded"

    assert Run.objects.filter(kind="consolidate").count() == 1
    assert Proposal.objects.count() == 1
    assert Run.objects.get(kind="consolidate").trigger == "schedule"


def test_a_scheduled_firing_while_one_runs_is_recorded_as_skipped(helper_agent, fake_llm):
    busy = runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="api")

    assert scheduled_consolidate("helper", intended_date="2026-11-30T03:00:00+00:00") == "skipped"

    skipped = Run.objects.exclude(pk=busy.pk).get(kind="consolidate")
    assert skipped.summary == "a consolidation or compile is already running for helper"
    assert fake_llm.requests == []


def test_a_lost_worker_is_reaped_after_its_lease(owner_client, helper_agent, settings):
    settings.MEMORY_RUN_LEASE_SECONDS = 600
    run = runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="api")
    runs.claim_run(run)
    assert owner_client.post(url("helper")).status_code == 409

    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - dt.timedelta(minutes=11))
    assert reap_runs_task() == 1

    run.refresh_from_db()
    redo = Run.objects.exclude(pk=run.pk).get()
    assert run.status == "failed"
    assert run.summary == (
        f"worker lost: no heartbeat for more than 10 minutes; redone as run #{redo.pk}"
    )
    # The lost consolidation is started again once; while it runs, another start is 409.
    assert (redo.status, redo.trigger) == ("running", f"redo of #{run.pk}")
    assert owner_client.post(url("helper")).status_code == 409


def test_a_new_trigger_reaps_a_run_never_picked_up(owner_client, helper_agent, settings):
    settings.MEMORY_RUN_LEASE_SECONDS = 600
    settings.MEMORY_RUN_QUEUED_LEASE_SECONDS = 900
    run = runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="api")
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - dt.timedelta(minutes=20))

    assert owner_client.post(url("helper")).status_code == 202

    run.refresh_from_db()
    assert run.status == "failed"


def test_a_live_run_is_not_reaped(helper_agent):
    run = runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="api")
    runs.heartbeat(run)

    assert reap_runs_task() == 0
    with pytest.raises(Conflict):
        runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="api")


def test_start_run_with_a_known_task_key_returns_that_run(helper_agent):
    first = runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="x", task_key="k-1")

    assert runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="x", task_key="k-1") == first
    assert Run.objects.count() == 1


# --- who may trigger and read ----------------------------------------------------------------


def test_an_agent_may_start_its_own_consolidation_only(helper_client, master):
    assert helper_client.post(url("helper")).status_code == 202
    assert helper_client.post(url("master")).status_code == 403
    assert Run.objects.filter(agent_id="master").count() == 0


def test_strangers_and_unknown_agents_are_refused(anon_client, owner_client, master):
    assert anon_client.post(url("master")).status_code in (401, 403)
    assert owner_client.post(url("nobody")).status_code == 404


def test_runs_are_listed_newest_first_and_filtered(owner_client, master, helper_agent):
    a = runs.record_run(master, "consolidate", "skipped", trigger="t", summary="a")
    b = runs.record_run(helper_agent, "compile", "failed", trigger="t", summary="b")
    c = runs.record_run(master, "fact_review", "succeeded", trigger="t", summary="c")

    def ids(query: str = "") -> list[int]:
        response = owner_client.get(f"/api/runs{query}")
        assert response.status_code == 200
        return [row["id"] for row in response.json()["results"]]

    assert ids() == [c.pk, b.pk, a.pk]
    assert ids("?agent=master") == [c.pk, a.pk]
    assert ids("?kind=compile") == [b.pk]
    assert ids("?status=skipped") == [a.pk]
    assert ids("?agent=master&kind=fact_review&status=succeeded") == [c.pk]
    assert owner_client.get("/api/runs?status=nonsense").status_code == 422


def test_a_run_has_the_documented_shape(owner_client, helper_agent, fake_llm):
    write_memory(helper_agent, MEMORY)
    write_note(helper_agent, f"{day(0)}.md", "- news\n")
    fake_llm.script(rewrite_answer(MEMORY + "- news\n", ("- news", "add", "new")))
    run_id = owner_client.post(url("helper")).json()["run"]["id"]
    consolidate_task(run_id)

    body = owner_client.get(f"/api/runs/{run_id}").json()

    assert RUN_FIELDS <= set(body)
    proposal = Proposal.objects.get()
    assert body["id"] == run_id
    assert (body["agent"], body["kind"], body["status"]) == ("helper", "consolidate", "succeeded")
    assert body["reasons"] == ["add: - news — new"]
    assert (body["tokens_in"], body["tokens_out"], body["cost"]) == (120, 45, "0.000045")
    assert body["model"] == "gpt-4o-mini"
    assert body["proposals"] == [
        {
            "id": proposal.pk,
            "kind": "memory_rewrite",
            "status": "pending",
            "target": proposal.target,
        }
    ]
    assert body["finished_at"] is not None
    assert owner_client.get("/api/runs/999999").status_code == 404


def test_an_agent_token_sees_only_its_own_runs(helper_client, master, helper_agent):
    mine = runs.record_run(helper_agent, "consolidate", "skipped", trigger="t", summary="")
    theirs = runs.record_run(master, "consolidate", "skipped", trigger="t", summary="")

    assert [row["id"] for row in helper_client.get("/api/runs").json()["results"]] == [mine.pk]
    assert helper_client.get("/api/runs?agent=master").status_code == 403
    assert helper_client.get(f"/api/runs/{mine.pk}").status_code == 200
    assert helper_client.get(f"/api/runs/{theirs.pk}").status_code == 403
