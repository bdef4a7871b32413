from django.apps import AppConfig
from django.db.models.signals import post_delete, post_migrate, post_save


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self) -> None:
        # Imported here: these modules define or import models, which load only once the
        # app registry is ready (Django's AppConfig.ready()).
        from memory import facts, history, kinds, tools, workspace  # noqa: PLC0415
        from memory.jobs import consolidate, hygiene, review, runs, schedules  # noqa: PLC0415
        from memory.models import Agent, Run  # noqa: PLC0415
        from proposals.actions import on_proposed, register_kind  # noqa: PLC0415
        from proposals.diff import register_presenter  # noqa: PLC0415

        for kind in (
            kinds.UserFactKind(),
            kinds.UserFactForgetKind(),
            kinds.AgentMemoryKind(),
            consolidate.MemoryRewriteKind(),
            hygiene.FactReviewKind(),
        ):
            register_kind(kind)
        register_presenter("facts", kinds.FACT_PRESENTER)
        # A new proposal that a standing rule covers applies at once (a task).
        on_proposed("standing-rules", review.enqueue_rules)
        tools.register_tools(tools.MEMORY_TOOLS, tools.PROMPTS_DIR)
        # Every change of a memory file becomes a version (memory.history).
        workspace.on_change(history.record_change)
        history.register_refresher(
            "facts-index",
            lambda path: path.startswith(f"{facts.FACTS_DIR}/") and path != facts.INDEX_PATH,
            lambda path: facts.regenerate_index(),
        )
        # A consolidation lost with its worker is started again once (memory.jobs.runs).
        runs.register_redo(Run.Kind.CONSOLIDATE, "memory.jobs.tasks.consolidate_task")

        # An agent's memory_consolidate cron is a django-q2 Schedule kept in step with it.
        post_save.connect(
            schedules.on_agent_saved, sender=Agent, dispatch_uid="memory-schedule-save"
        )
        post_delete.connect(
            schedules.on_agent_deleted, sender=Agent, dispatch_uid="memory-schedule-delete"
        )
        post_migrate.connect(schedules.on_post_migrate, dispatch_uid="memory-schedule-migrate")
