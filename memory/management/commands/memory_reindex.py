"""`memory_reindex`: rebuild this host's search index from the Markdown files alone and say
what it holds, how big it is and how long it took (memory/search_index.py).

Never needed for correctness — a missing, outdated or broken index is built again in the
background (search answers from the files meanwhile), app writes reach it through the change
log, hand edits through the host's keeper — but handy after restoring a backup by hand and
to see the index's size. Safe while the app runs: the new index is built beside the current
one and every process moves to it at its next query (nothing is replaced under a process
that has it open)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from memory import search_index


class Command(BaseCommand):
    help = "Rebuild the search index from the files and report its size and build time."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--if-missing",
            action="store_true",
            help="build only when there is no usable index yet (for start-up scripts)",
        )

    def handle(self, *args, if_missing: bool = False, **options) -> None:
        if if_missing and search_index.usable():
            self.stdout.write(f"search index up to date: {search_index.index_path()}")
            return
        report = search_index.build()
        self.stdout.write(
            f"search index rebuilt: {search_index.index_path()}\n"
            f"  {report.files:,} files, {report.entries:,} entries, {report.tokens:,} words\n"
            f"  {report.bytes / 1e6:.1f} MB on disk, built in {report.seconds:.2f} s"
        )
