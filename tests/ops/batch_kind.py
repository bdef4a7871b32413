"""A real batch proposal kind for the crash tests: it writes every path of its payload
as one proposal (like wiki_compile), so a crash can fall between two of its files."""

from __future__ import annotations

from proposals.actions import BaseKind, register_kind


class TwoFilesKind(BaseKind):
    name = "test_two_files"
    batch = True

    def changes(self, *, agent, payload):
        return dict(payload["files"])


def register() -> None:
    register_kind(TwoFilesKind())
