"""SPEC §10.1: sources are `note:YYYY-MM-DD` (optionally with the note's suffix) or
`conv:<id>`; a page that cannot say where it comes from is refused (422), nothing written."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "sources",
    [
        ["trust me"],
        ["note:2026-13-45"],
        ["note:yesterday"],
        ["conv:"],
        ["http://example.com"],
        ["note:2026-01-01-ABC"],
        [" "],
        ["conv:1", ""],
        "conv:1",
    ],
)
def test_it_refuses_sources_that_name_no_note_or_conversation(
    owner_client, master, workspace, sources
):
    response = owner_client.put(
        "/api/agents/master/memory/wiki/pages/p",
        data={"title": "P", "kind": "entity", "sources": sources, "body": "b"},
        format="json",
    )
    assert response.status_code == 422
    assert not (workspace / "memory/wiki/entities/p.md").exists()


@pytest.mark.parametrize(
    "sources", [["note:2026-01-01"], ["note:2026-01-01-1030"], ["conv:abc-42"]]
)
def test_it_accepts_note_and_conversation_sources(owner_client, master, workspace, sources):
    response = owner_client.put(
        "/api/agents/master/memory/wiki/pages/p",
        data={"title": "P", "kind": "entity", "sources": sources, "body": "b"},
        format="json",
    )
    assert response.status_code in (200, 201)
    assert response.json()["sources"] == sources
