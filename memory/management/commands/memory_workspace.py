"""`python manage.py memory_workspace [--rebind]`: which workspace this database serves
(memory.binding); `--rebind` records the current MY_AGENT_HOME after a workspace moved."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from memory import workspace
from memory.binding import bound_root, rebind


class Command(BaseCommand):
    help = "Show which workspace this database serves; --rebind after moving the workspace."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--rebind",
            action="store_true",
            help="record MY_AGENT_HOME as this database's workspace (the workspace moved)",
        )

    def handle(self, *args, rebind_it: bool = False, **options) -> None:
        if options.get("rebind"):
            old, new = rebind()
            self.stdout.write(f"This database served {old or 'no workspace yet'}; now {new}.\n")
            return
        bound = bound_root()
        self.stdout.write(
            f"This database serves {bound or 'no workspace yet'}; "
            f"MY_AGENT_HOME is {workspace.root()}.\n"
        )
