from django.core.management.base import BaseCommand

from memory.agents import default_agent, ensure_all_dirs


class Command(BaseCommand):
    help = "Create the workspace directories of every agent (run at start-up)."

    def handle(self, *args, **options) -> None:
        default_agent()
        ensure_all_dirs()
