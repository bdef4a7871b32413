"""An agent's memory_consolidate cron as a django-q2 Schedule, kept in sync by name
(SPEC §8, §12)."""

from __future__ import annotations

import datetime as dt

import pytest
from croniter import croniter
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import Schedule
from django_q.scheduler import scheduler

from memory.errors import InvalidInput
from memory.jobs import schedules
from memory.models import Agent, Run
from proposals.models import Proposal
from tests.memory.jobs.conftest import day, rewrite_answer, write_memory, write_note


def consolidation_schedules():
    return Schedule.objects.filter(name__startswith="memory-consolidate:")


def test_an_agent_with_a_cron_gets_a_schedule(workspace, db):
    before = timezone.now()
    Agent.objects.create(id="night", name="Night", memory_consolidate="0 3 * * *")

    (schedule,) = consolidation_schedules()
    assert schedule.name == "memory-consolidate:night"
    assert schedule.func == "memory.jobs.tasks.scheduled_consolidate"
    assert schedule.args == "'night'"
    assert (schedule.schedule_type, schedule.cron, schedule.repeats) == (
        Schedule.CRON,
        "0 3 * * *",
        -1,
    )
    assert schedule.intended_date_kwarg == "intended_date"
    # Its first run is the cron's next time, never "now" (no firing on creation).
    expected = croniter("0 3 * * *", timezone.localtime(before)).get_next(dt.datetime)
    assert schedule.next_run == expected
    assert schedule.next_run > timezone.now()


def test_changing_the_cron_updates_the_one_schedule(workspace, db):
    agent = Agent.objects.create(id="night", name="Night", memory_consolidate="0 3 * * *")

    agent.memory_consolidate = "30 4 * * 1"
    agent.save()

    (schedule,) = consolidation_schedules()
    assert schedule.cron == "30 4 * * 1"
    assert timezone.localtime(schedule.next_run).weekday() == 0
    assert (timezone.localtime(schedule.next_run).hour, schedule.next_run.minute) == (4, 30)


def test_saving_an_agent_without_changing_the_cron_keeps_the_next_run(workspace, db):
    agent = Agent.objects.create(id="night", name="Night", memory_consolidate="0 3 * * *")
    first = consolidation_schedules().get().next_run

    agent.name = "Renamed"
    agent.save()
    agent.save()

    assert consolidation_schedules().count() == 1
    assert consolidation_schedules().get().next_run == first


def test_clearing_the_cron_removes_the_schedule(workspace, db):
    agent = Agent.objects.create(id="night", name="Night", memory_consolidate="0 3 * * *")

    agent.memory_consolidate = ""
    agent.save()

    assert not consolidation_schedules().exists()


def test_deleting_the_agent_removes_the_schedule(workspace, db):
    agent = Agent.objects.create(id="night", name="Night", memory_consolidate="0 3 * * *")
    Agent.objects.create(id="day", name="Day", memory_consolidate="0 12 * * *")

    agent.delete()

    assert list(consolidation_schedules().values_list("name", flat=True)) == [
        "memory-consolidate:day"
    ]


def test_an_invalid_cron_saved_around_the_api_leaves_no_schedule(workspace, db):
    agent = Agent.objects.create(id="night", name="Night", memory_consolidate="0 3 * * *")

    agent.memory_consolidate = "every night"
    agent.save()  # does not raise: saving an agent never fails on its schedule

    assert not consolidation_schedules().exists()


def test_the_agents_api_keeps_the_schedule_in_step(owner_client):
    created = owner_client.post(
        "/api/agents",
        {"id": "night", "name": "Night", "memory_consolidate": "0 3 * * *"},
        format="json",
    )
    assert created.status_code == 201, created.content
    assert consolidation_schedules().get().cron == "0 3 * * *"

    changed = owner_client.patch(
        "/api/agents/night", {"memory_consolidate": "15 2 * * *"}, format="json"
    )
    assert changed.status_code == 200
    assert consolidation_schedules().get().cron == "15 2 * * *"

    cleared = owner_client.patch("/api/agents/night", {"memory_consolidate": ""}, format="json")
    assert cleared.status_code == 200
    assert not consolidation_schedules().exists()

    refused = owner_client.patch(
        "/api/agents/night", {"memory_consolidate": "61 * * * *"}, format="json"
    )
    assert refused.status_code == 422
    assert not consolidation_schedules().exists()


@pytest.mark.parametrize("expr", ["0 3 * * *", "*/15 * * * *", "0 3 * * mon-fri", "  0  3 * * * "])
def test_validate_cron_accepts_five_field_expressions(expr):
    assert schedules.validate_cron(expr) == " ".join(expr.split())


@pytest.mark.parametrize(
    "expr", ["every night", "61 * * * *", "0 3 * *", "0 3 * * * 0", "* * 32 * *"]
)
def test_validate_cron_refuses_anything_else(expr):
    with pytest.raises(InvalidInput) as caught:
        schedules.validate_cron(expr)
    assert caught.value.status_code == 422


def test_validate_cron_reads_empty_as_no_schedule():
    assert schedules.validate_cron("") == ""
    assert schedules.validate_cron("   ") == ""


def test_sync_all_repairs_the_set_without_duplicates(workspace, db):
    Agent.objects.create(id="night", name="Night", memory_consolidate="0 3 * * *")
    Schedule.objects.create(
        name="memory-consolidate:gone",
        func=schedules.CONSOLIDATE_FUNC,
        schedule_type=Schedule.CRON,
        cron="0 1 * * *",
    )
    Schedule.objects.filter(name="memory-consolidate:night").delete()

    schedules.sync_all_schedules()
    schedules.sync_all_schedules()

    assert sorted(consolidation_schedules().values_list("name", flat=True)) == [
        "memory-consolidate:night"
    ]
    reaper = Schedule.objects.get(name=schedules.REAPER_NAME)
    assert (reaper.func, reaper.schedule_type, reaper.minutes) == (
        "memory.jobs.tasks.reap_runs_task",
        Schedule.MINUTES,
        5,
    )


def test_a_due_schedule_runs_the_same_consolidation_as_the_endpoint(
    helper_agent, fake_llm, monkeypatch
):
    monkeypatch.setattr(Conf, "SYNC", True)
    helper_agent.memory_consolidate = "0 3 * * *"
    helper_agent.save()
    write_memory(helper_agent, "# Memory\n")
    write_note(helper_agent, f"{day(0)}.md", "- news\n")
    fake_llm.script(rewrite_answer("# Memory\n- news\n"))
    due = timezone.now() - dt.timedelta(minutes=1)
    Schedule.objects.filter(name="memory-consolidate:helper").update(next_run=due)

    scheduler()

    run = Run.objects.get(kind="consolidate")
    assert (run.agent_id, run.trigger, run.status) == ("helper", "schedule", "succeeded")
    assert run.task_key == f"schedule:helper:{due.isoformat()}"
    assert Proposal.objects.get().run == run
    # Next firing is in the future: no catch-up storm.
    assert Schedule.objects.get(name="memory-consolidate:helper").next_run > timezone.now()


def test_schedules_saved_with_the_old_task_paths_heal_on_migrate(workspace, db):
    Agent.objects.create(id="night", name="Night", memory_consolidate="0 3 * * *")
    Schedule.objects.filter(name="memory-consolidate:night").update(
        func="memory.tasks.scheduled_consolidate"
    )
    Schedule.objects.filter(name="memory-reap-runs").update(func="memory.tasks.reap_runs_task")

    schedules.sync_all_schedules()  # what post_migrate runs

    assert Schedule.objects.get(name="memory-consolidate:night").func == (
        "memory.jobs.tasks.scheduled_consolidate"
    )
    assert Schedule.objects.get(name="memory-reap-runs").func == "memory.jobs.tasks.reap_runs_task"


def test_a_task_queued_under_an_old_path_still_runs(workspace, db):
    from django.utils.module_loading import import_string

    # django-q2 imports a queued task's function by its dotted path.
    assert import_string("memory.tasks.consolidate_task") is import_string(
        "memory.jobs.tasks.consolidate_task"
    )
    assert import_string("memory.tasks.scheduled_consolidate").__module__ == "memory.jobs.tasks"
