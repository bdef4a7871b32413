from django.apps import AppConfig


class ProposalsConfig(AppConfig):
    name = "proposals"
    verbose_name = "Proposals"
    # Kinds register themselves from their owners' AppConfig.ready() (memory, wiki).
