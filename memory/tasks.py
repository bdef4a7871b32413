"""Old dotted paths of the django-q2 tasks, kept importable for one release: tasks queued
before the move to memory.jobs.tasks name these. Schedules are rewritten to the new paths
on migrate (memory.jobs.schedules.sync_all_schedules). Remove after the next release."""

from memory.jobs.tasks import consolidate_task, reap_runs_task, scheduled_consolidate

__all__ = ["consolidate_task", "reap_runs_task", "scheduled_consolidate"]
