"""Black-box steps the § files share: each one a request a client could make, or a fact of
the API's contract written once (no app module is imported here)."""

from __future__ import annotations

import hashlib
import io

from django.core.management import call_command

# The `hash` of a file the API shows (and takes back as `base_hash`): the sha256 of its text
# in UTF-8, or "absent" for a file that does not exist.
ABSENT = "absent"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def proposals(owner_client, **filters: str) -> list[dict]:
    """Every proposal, decided or not (newest first), as `GET /api/memory/proposals` lists
    them to the owner; `filters` are its query parameters (kind, agent…)."""
    response = owner_client.get("/api/memory/proposals", {"status": "all", "limit": 500, **filters})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def agent(owner_client, agent_id: str) -> dict | None:
    """`GET /api/agents/{id}` as the owner sees it; None for an unknown agent."""
    response = owner_client.get(f"/api/agents/{agent_id}")
    return None if response.status_code == 404 else response.json()


def consolidate(client, agent_id: str) -> dict:
    """`POST /api/agents/{id}/memory/consolidate`, then the run as `GET /api/runs/{id}` shows
    it (finished when the test runs tasks inline: the `runs_inline` fixture)."""
    started = client.post(f"/api/agents/{agent_id}/memory/consolidate")
    assert started.status_code == 202, started.content
    return client.get(f"/api/runs/{started.json()['run']['id']}").json()


def memory_token(*args: str) -> str:
    """The key `manage.py memory_token <args>` prints (`"agent", "master", "--job", "x"`)."""
    out = io.StringIO()
    call_command("memory_token", *args, stdout=out)
    return out.getvalue().strip()
