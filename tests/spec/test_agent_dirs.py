"""SPEC §1/§12/§15: an agent's dir (MEMORY.md and memory/) is created when the agent is
created — whichever way the owner creates it (REST, or the Django admin, where "everything
the agent sees is editable")."""

from __future__ import annotations

from django.test import Client


def test_it_creates_the_agent_dir_when_the_admin_creates_an_agent(alice, master, workspace):
    client = Client()
    client.force_login(alice)
    response = client.post(
        "/admin/memory/agent/add/",
        {"id": "scribe", "name": "Scribe", "memory_consolidate": ""},
    )
    assert response.status_code == 302, response.content[:500]
    from memory.models import Agent

    assert Agent.objects.filter(id="scribe").exists()
    assert (workspace / "agents/scribe/memory").is_dir()


def test_it_creates_the_agent_dir_over_rest(owner_client, master, workspace):
    response = owner_client.post(
        "/api/agents", data={"id": "scout", "name": "Scout"}, format="json"
    )
    assert response.status_code == 201
    assert (workspace / "agents/scout/memory").is_dir()
    note = owner_client.put(
        "/api/agents/scout/memory/notes/2026-01-01", data={"body": "n\n"}, format="json"
    )
    assert note.status_code == 201
    assert (workspace / "agents/scout/memory/2026-01-01.md").read_text(encoding="utf-8") == "n\n"
