from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_migrate, post_save

        # Registers the memory_rewrite and fact_review proposal kinds.
        from memory import consolidate, hygiene, schedules  # noqa: F401
        from memory.agents import on_agent_saved
        from memory.models import Agent

        # Every agent, however created, gets its dir (SPEC §1).
        post_save.connect(on_agent_saved, sender=Agent, dispatch_uid="memory-agent-dirs")
        # An agent's memory_consolidate cron is a django-q2 Schedule kept in step with it.
        post_save.connect(
            schedules.on_agent_saved, sender=Agent, dispatch_uid="memory-schedule-save"
        )
        post_delete.connect(
            schedules.on_agent_deleted, sender=Agent, dispatch_uid="memory-schedule-delete"
        )
        post_migrate.connect(schedules.on_post_migrate, dispatch_uid="memory-schedule-migrate")
