import json

from django.core.management.base import BaseCommand

from memory.doctor import diagnose, render


class Command(BaseCommand):
    help = (
        "Read the workspace (MY_AGENT_HOME) and report what this app makes of it — the "
        "layout it recognised (OpenClaw's or this app's), the files it reads into the "
        "prompt and their sizes against the caps, the files it ignores and why, and what "
        "start-up would create. Changes nothing."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="the report as JSON")

    def handle(self, *args, **options) -> None:
        report = diagnose()
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
        else:
            self.stdout.write(render(report), ending="")
