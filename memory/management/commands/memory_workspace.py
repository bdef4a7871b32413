"""`python manage.py memory_workspace [--rebind] [--time-zone ZONE]`: which workspace this
database serves and the owner's time zone recorded with it (memory.binding); `--rebind`
records the current MY_AGENT_HOME after a workspace moved; `--time-zone` records the zone
every process takes "today" from (SPEC §4.2)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory import workspace
from memory.binding import bound_root, configured_zone, rebind, record_time_zone, time_zone


class Command(BaseCommand):
    help = (
        "Show which workspace this database serves and its time zone; --rebind after moving "
        "the workspace; --time-zone to change the owner's zone."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--rebind",
            action="store_true",
            help="record MY_AGENT_HOME as this database's workspace (the workspace moved)",
        )
        parser.add_argument(
            "--time-zone",
            metavar="ZONE",
            help="record ZONE (e.g. Asia/Ho_Chi_Minh) as the owner's time zone for every process",
        )

    def handle(self, *args, rebind_it: bool = False, **options) -> None:
        if options.get("rebind"):
            old, new = rebind()
            self.stdout.write(f"This database served {old or 'no workspace yet'}; now {new}.\n")
            return
        if options.get("time_zone"):
            try:
                old_zone, new_zone = record_time_zone(options["time_zone"])
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(
                f"The owner's time zone was {old_zone}; now {new_zone}. Every process takes "
                "today's note from it within a few seconds.\n"
            )
            return
        bound = bound_root()
        zone, here = time_zone(), configured_zone()
        differs = "" if zone == here else f" (MEMORY_TIME_ZONE of this process: {here})"
        self.stdout.write(
            f"This database serves {bound or 'no workspace yet'}; "
            f"MY_AGENT_HOME is {workspace.root()}.\n"
            f"The owner's time zone: {zone}{differs}.\n"
        )
