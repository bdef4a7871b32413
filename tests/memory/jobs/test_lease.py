"""Run leases (memory.jobs.runs): a claimed run's process renews its heartbeat; a lost run is
failed "worker lost" and started again once; a queued run waits longer than a claimed one."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.utils import timezone
from django_q.models import OrmQ

from memory.jobs import runs
from memory.models import Run


def _lose(run: Run, **ago: float) -> None:
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - dt.timedelta(**ago))


def test_a_lost_claimed_run_is_failed_and_redone_once(helper_agent, settings):
    settings.MEMORY_RUN_LEASE_SECONDS = 60
    run = runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="api")
    assert runs.claim_run(run)
    runs._keeper.drop(run.pk)  # abandoned, as a killed worker leaves it
    _lose(run, seconds=61)

    assert runs.reap_stale_runs() == 1

    run.refresh_from_db()
    again = Run.objects.exclude(pk=run.pk).get()
    assert run.status == "failed"
    assert run.summary == (
        f"worker lost: no heartbeat for more than 1 minute; redone as run #{again.pk}"
    )
    assert (again.status, again.trigger, again.kind) == ("running", f"redo of #{run.pk}", run.kind)
    assert OrmQ.objects.count() == 1  # its task is queued for a worker
    # A second reaper finds nothing: the run is failed once and redone once.
    assert runs.reap_stale_runs() == 0
    assert Run.objects.count() == 2


def test_a_lost_redo_is_failed_but_not_redone_again(helper_agent, settings):
    settings.MEMORY_RUN_LEASE_SECONDS = 60
    run = runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="redo of #7")
    runs.claim_run(run)
    runs._keeper.drop(run.pk)
    _lose(run, minutes=5)

    assert runs.reap_stale_runs() == 1

    run.refresh_from_db()
    assert run.summary == "worker lost: no heartbeat for more than 1 minute"
    assert Run.objects.count() == 1


def test_a_queued_run_waits_for_the_queued_lease(helper_agent, settings):
    settings.MEMORY_RUN_LEASE_SECONDS = 60
    settings.MEMORY_RUN_QUEUED_LEASE_SECONDS = 600
    run = runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="api")
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - dt.timedelta(minutes=5))

    assert runs.reap_stale_runs() == 0  # waiting behind busy workers is not a crash

    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - dt.timedelta(minutes=11))
    assert runs.reap_stale_runs(redo=False) == 1
    run.refresh_from_db()
    assert run.summary == "worker lost: not picked up within 10 minutes"


def test_a_new_start_replaces_a_lost_run_without_a_redo(helper_agent, settings):
    settings.MEMORY_RUN_LEASE_SECONDS = 60
    run = runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="api")
    runs.claim_run(run)
    runs._keeper.drop(run.pk)
    _lose(run, minutes=2)

    fresh = runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="api")

    assert Run.objects.count() == 2
    assert fresh.trigger == "api"
    run.refresh_from_db()
    assert run.summary == "worker lost: no heartbeat for more than 1 minute"


@pytest.mark.django_db(transaction=True)
def test_the_claiming_process_keeps_the_lease_until_the_run_finishes(helper_agent, settings):
    settings.MEMORY_RUN_LEASE_SECONDS = 2  # a beat every half second
    run = runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="api")
    assert runs.claim_run(run)
    first = Run.objects.get(pk=run.pk).heartbeat_at

    time.sleep(3)  # longer than the lease: only the renewals keep it alive
    assert runs.reap_stale_runs() == 0
    assert Run.objects.get(pk=run.pk).heartbeat_at > first

    runs.finish_run(run, Run.Status.SUCCEEDED, summary="done")
    assert run.pk not in runs._keeper.held()
