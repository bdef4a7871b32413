"""Shared setup of the proposal tests: the files they watch, the owner's fact and a job's
fact proposal."""

from __future__ import annotations

from memory import facts, workspace
from memory.writes import save_fact_or_propose, write_memory_or_propose
from proposals.models import Proposal

FACT = "users/owner/facts/coffee.md"
MEMORY = "agents/helper/MEMORY.md"


def fact_proposal(description: str = "Likes black coffee") -> Proposal:
    """A nightly job's `user_fact` proposal for the fact `coffee` (nothing written yet)."""
    fact, proposal = save_fact_or_propose(
        "coffee",
        description=description,
        type="preference",
        body="No sugar.",
        source="job:nightly",
        written_by="master",
    )
    assert fact is None and proposal is not None
    return proposal


def owner_fact() -> str:
    """The fact `coffee` as the owner wrote it, on disk now; returns the file's text."""
    facts.save_fact(
        "coffee",
        description="Likes black coffee",
        type="preference",
        body="No sugar.",
        written_by="owner",
        source="web",
    )
    return workspace.read(FACT)


def rewrite_proposal(agent, body: str = "rewritten\n") -> Proposal:
    """A job's `memory_rewrite` proposal of the agent's whole MEMORY.md: it replaces
    content, so it is checked against its base (an append is not)."""
    proposal = write_memory_or_propose(agent, body, source="job:1")
    assert proposal is not None
    return proposal
