"""Agents (SPEC §12): lookups and the directories each agent's memory lives in."""

from __future__ import annotations

from memory import workspace
from memory.errors import NotFound, PathRefused
from memory.models import Agent

DEFAULT_AGENT_ID = "master"
MEMORY_FILE = "MEMORY.md"
# OpenClaw reads MEMORY.md, else memory.md: a workspace may hold only the lowercase one.
MEMORY_ALT_FILE = "memory.md"


def get_agent_or_404(agent_id: str) -> Agent:
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        raise NotFound(f"No agent {agent_id!r}.")
    return agent


def default_agent() -> Agent:
    agent = Agent.objects.filter(is_default=True).first()
    if agent is None:
        agent, _ = Agent.objects.get_or_create(
            id=DEFAULT_AGENT_ID, defaults={"name": "Master", "is_default": True}
        )
    return agent


def _present(rel: str) -> bool:
    try:
        return workspace.exists(rel)
    except PathRefused:
        return True  # something is there (a link): reading it says why it is refused


def memory_file_name(agent: Agent) -> str:
    """The name of the agent's long-term file: `MEMORY.md`, or `memory.md` when only that
    exists (OpenClaw's rule, SPEC §1). Decided on every call, from the disk."""
    if not _present(agent.path(MEMORY_FILE)) and _present(agent.path(MEMORY_ALT_FILE)):
        return MEMORY_ALT_FILE
    return MEMORY_FILE


def memory_file(agent: Agent) -> str:
    """The workspace-relative path of the agent's long-term file (see memory_file_name)."""
    return agent.path(memory_file_name(agent))


def ensure_agent_dirs(agent: Agent) -> None:
    """Create the agent dir with its MEMORY.md and memory/ (SPEC §1). An existing
    MEMORY.md is never touched; a new one is empty (an empty file is left out of the
    prompt, as a missing one is). Where `memory.md` stands for MEMORY.md, no MEMORY.md is
    created beside it: OpenClaw would then load the empty one instead."""
    workspace.ensure_dir(agent.path("memory"))
    if memory_file_name(agent) == MEMORY_FILE:
        workspace.create(agent.path(MEMORY_FILE))


def on_agent_saved(sender: type[Agent], instance: Agent, created: bool, **kwargs) -> None:
    """Every way an agent comes to exist (REST, admin, shell) gives it its directory."""
    if created:
        ensure_agent_dirs(instance)


def ensure_all_dirs() -> None:
    workspace.ensure_dir("users/owner/facts")
    for agent in Agent.objects.all():
        ensure_agent_dirs(agent)
