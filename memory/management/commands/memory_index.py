"""`memory_index`: keep this host's search index (memory/search_keeper.py) until stopped —
build it in the background when there is none usable, watch the memory folders for hand
edits (inotify; a stat of every file where no watch is possible), apply the change log in
short batches, remove generations nobody reads. `make run` (bin/serve) starts it beside the
web server; one per host (a lock): a second one waits and takes over when the first ends."""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand

from memory import search_keeper, workspace
from memory.binding import require_own_workspace

NICENESS = 10


class Command(BaseCommand):
    help = "Keep this host's search index: build, watch hand edits, catch up (runs until stopped)."

    def handle(self, *args, **options) -> None:
        # Background work: the web workers on the same cores come first (a build at the
        # first start competes with the server coming up and with the searches meanwhile).
        os.nice(NICENESS)
        require_own_workspace()
        self.stdout.write(f"memory_index: keeping the search index of {workspace.root()}")
        self.stdout.flush()
        search_keeper.keep_forever()
