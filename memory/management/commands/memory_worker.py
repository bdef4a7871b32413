"""`python manage.py memory_worker`: a django-q2 cluster under a supervisor that starts it
anew whenever one of its processes dies or its guard stops beating (memory.jobs.cluster).
Use it instead of `qcluster`; it takes the same Q_CLUSTER settings."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from memory.binding import require_own_workspace
from memory.jobs.cluster import Supervisor


class Command(BaseCommand):
    help = "Run the django-q2 worker cluster, restarted whenever one of its processes dies."

    def handle(self, *args, **options) -> None:
        require_own_workspace()
        sys.exit(Supervisor().run())
