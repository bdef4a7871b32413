"""`memory_reindex`: rebuild this host's search index from the Markdown files alone and say
what it holds, how big it is and how long it took (memory/search_index.py).

Never needed for correctness — a missing or outdated index is built by the first query,
app writes reach it through the change log, hand edits through the reconcile — but handy
after restoring a backup by hand, to pay the build before the first query does, and to see
the index's size. Safe while the app runs: the new index replaces the old one at once and
running processes reopen it at their next query."""

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
        path = search_index.index_path()
        if if_missing and search_index.usable(path):
            self.stdout.write(f"search index up to date: {path}")
            return
        report = search_index.build(path)
        self.stdout.write(
            f"search index rebuilt: {path}\n"
            f"  {report.files:,} files, {report.entries:,} entries, {report.tokens:,} words\n"
            f"  {report.bytes / 1e6:.1f} MB on disk, built in {report.seconds:.2f} s"
        )
