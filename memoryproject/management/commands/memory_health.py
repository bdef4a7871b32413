"""`python manage.py memory_health`: what `GET /healthz` reports, for a person, with the
worker clusters by name; exit 1 when something is wrong (`--json` prints the report)."""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand

from memoryproject.health import report


class Command(BaseCommand):
    help = "Check the database, the workspace, the worker heartbeat; exit 1 when not healthy."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args, **options) -> None:
        body = report(detail=True)
        if options["json"]:
            self.stdout.write(json.dumps(body, indent=2))
        else:
            for name in ("web", "database", "workspace", "worker", "proposals"):
                check = dict(body[name])
                mark = "ok  " if check.pop("ok") else "FAIL"
                clusters = check.pop("clusters", [])
                fields = ", ".join(f"{key}={value}" for key, value in check.items())
                self.stdout.write(f"{mark} {name}: {fields}")
                for cluster in clusters:
                    self.stdout.write(
                        "       cluster {name} ({broker}): last beat {age_seconds} s ago, "
                        "{restarts} restart(s), up since {up_since}".format(**cluster)
                    )
            self.stdout.write("healthy" if body["ok"] else "NOT healthy")
        sys.exit(0 if body["ok"] else 1)
