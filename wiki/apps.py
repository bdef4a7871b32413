from django.apps import AppConfig


class WikiConfig(AppConfig):
    name = "wiki"
    verbose_name = "Wiki"

    def ready(self) -> None:
        # Imported here: these modules define or import models, which load only once the
        # app registry is ready (Django's AppConfig.ready()).
        from memory import history  # noqa: PLC0415
        from memory.doctor import register_vault_check  # noqa: PLC0415
        from memory.jobs import runs  # noqa: PLC0415
        from memory.jobs.nightly import register_follow_up  # noqa: PLC0415
        from memory.models import Run  # noqa: PLC0415
        from memory.tools import register_tools  # noqa: PLC0415
        from proposals.actions import register_kind  # noqa: PLC0415
        from proposals.diff import register_presenter  # noqa: PLC0415
        from wiki import compile, tools  # noqa: PLC0415
        from wiki.pages import doctor_findings  # noqa: PLC0415

        register_kind(compile.WikiCompileKind())
        # A page's generated links block is left out of review diffs.
        register_presenter("wiki-pages", compile.PAGE_PRESENTER)
        # A restored page gets its graph and reports rebuilt, like any edit.
        history.register_refresher(
            "wiki-graph", compile.is_page_path, compile.refresh_after_restore
        )
        register_tools(tools.WIKI_TOOLS, tools.PROMPTS_DIR)
        # The doctor names same-named pages and bare links that match several (§10.1).
        register_vault_check(doctor_findings)
        # The vault settles from the same nightly read as MEMORY.md (§10.5).
        register_follow_up("wiki compile", compile.compile_after_consolidation)
        # A compile lost with its worker is started again once (memory.jobs.runs).
        runs.register_redo(Run.Kind.COMPILE, "wiki.compile.run_compile")
