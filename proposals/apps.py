from django.apps import AppConfig


class ProposalsConfig(AppConfig):
    name = "proposals"
    verbose_name = "Proposals"

    def ready(self) -> None:
        # Registers the user- and agent-scope kinds; other apps register theirs from
        # their own ready().
        from proposals import kinds  # noqa: F401
