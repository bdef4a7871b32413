"""A real proposal kind for the concurrency tests: it writes one file like any kind, and
its after_write appends one line per application to `applied.log`, so a test can count how
many times a proposal was actually applied across threads and processes."""

from __future__ import annotations

from memory import workspace
from proposals.actions import BaseKind, register_kind

LOG = "applied.log"


class CountingKind(BaseKind):
    name = "test_counted"

    def changes(self, *, agent, payload):
        return {payload["path"]: payload["text"]}

    def after_write(self, proposal) -> None:
        workspace.append(LOG, f"{proposal.pk} {proposal.decided_by}\n")


def register() -> None:
    register_kind(CountingKind())
