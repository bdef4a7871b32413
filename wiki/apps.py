from django.apps import AppConfig


class WikiConfig(AppConfig):
    name = "wiki"
    verbose_name = "Wiki"

    def ready(self) -> None:
        from wiki import compile, tools

        compile.register()  # the wiki_compile proposal kind
        tools.register()  # wiki_get, wiki_search, wiki_apply
