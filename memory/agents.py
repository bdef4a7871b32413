"""Agents (SPEC §12): lookups and the directories each agent's memory lives in."""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction

from memory import lookups, workspace
from memory.errors import (
    Conflict,
    DiskFull,
    DomainError,
    NotFound,
    PathRefused,
    WorkspaceReadOnly,
)
from memory.models import Agent

log = logging.getLogger(__name__)

DEFAULT_AGENT_ID = "master"
MEMORY_FILE = "MEMORY.md"
# OpenClaw reads MEMORY.md, else memory.md: a workspace may hold only the lowercase one.
MEMORY_ALT_FILE = "memory.md"


def get_agent_or_404(agent_id: str) -> Agent:
    """The agent `agent_id` (read by a fixed statement, memory.lookups: every agent's
    request asks), or NotFound."""
    agent = lookups.get_by(Agent, "pk", agent_id)
    if agent is None:
        raise NotFound(f"No agent {agent_id!r}.")
    return agent


def create_agent(
    *, id: str, name: str, autonomous: bool = False, memory_consolidate: str = ""
) -> Agent:
    """Create a (non-default) agent from fields a serializer validated; its schedule
    follows (memory.jobs.schedules). Its directory comes with its first write (SPEC §1):
    nothing is made in the workspace now. Conflict (409) when the id is taken, also when
    two requests race for it. An agent that could not write its memory is not made: a
    dir that cannot be used (PathRefused, 422) or a workspace that takes no writes
    (read-only: WorkspaceReadOnly, 503; full: DiskFull, 507) leaves no row behind."""
    if Agent.objects.filter(pk=id).exists():
        raise Conflict(f"Agent {id!r} exists.", field="id")
    try:
        with transaction.atomic():
            agent = Agent.objects.create(
                id=id,
                name=name,
                autonomous=autonomous,
                memory_consolidate=memory_consolidate,
                is_default=False,
            )
            problems = dir_problems(agent)
            if problems:
                raise PathRefused(problems[0])
            _require_writable(agent)  # raises the workspace's error: the row rolls back
            return agent
    except IntegrityError:
        raise Conflict(f"Agent {id!r} exists.", field="id") from None


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


def dir_problems(agent: Agent) -> list[str]:
    """Why the agent's dir cannot be used, in words for the owner ([] when it can).
    Looks only, writes nothing: the agent dir (for a non-default agent), `MEMORY.md` and
    `memory/` must not be symbolic links (links inside the workspace are never followed,
    SPEC §1, docs/decisions.md), and each must be what it is named (a folder, a file).
    Every layout asks it for every agent: each path costs one lstat."""
    problems: list[str] = []
    checks = [(part, "dir") for part in _dir_parts(agent)] + [(agent.path("memory"), "dir")]
    checks.append((None, "file"))  # the long-term file, once the folders above are sound
    for rel, kind in checks:
        try:
            if rel is None:
                rel, found = _memory_file_kind(agent)
            else:
                found = workspace.kind_of(rel)
        except DomainError as exc:
            problems.append(f"{rel}: {exc.message}")
            break
        if found == "link":
            problems.append(
                f"{rel} is a symbolic link (to {workspace.is_link(rel)}). Links inside the "
                "workspace are not followed, so this agent's files there are refused; move "
                "the real folder or file to this place (docs/openclaw.md, symbolic links)."
            )
            break  # everything below a link is refused for the same reason
        if found not in ("missing", kind):
            what = "a folder" if kind == "dir" else "a file"
            problems.append(f"{rel} is not {what}, so it cannot hold this agent's memory.")
            break
    return problems


def _memory_file_kind(agent: Agent) -> tuple[str, str]:
    """(the long-term file's path as memory_file_name chooses it, what is there), from the
    kinds of both names: something other than a folder counts as present (memory_file_name
    counts a link or a pipe as present too, for reading it says why it is refused)."""
    main = agent.path(MEMORY_FILE)
    found = workspace.kind_of(main)
    if found in ("missing", "dir"):
        alternative = agent.path(MEMORY_ALT_FILE)
        other = workspace.kind_of(alternative)
        if other not in ("missing", "dir"):
            return alternative, other
    return main, found


def _dir_parts(agent: Agent) -> list[str]:
    # "agents" and "agents/<id>" for a non-default agent; the default agent's dir is the
    # workspace root itself (which may be a link: it is resolved once, at the root).
    return ["agents", agent.dir] if agent.dir else []


def _require_writable(agent: Agent) -> None:
    """WorkspaceReadOnly (503) or DiskFull (507) when the workspace could take none of the
    agent's writes; looks only (workspace.health), makes nothing."""
    health = workspace.health()
    if not health.writable:
        raise WorkspaceReadOnly(
            f"The workspace {health.path} is read-only or not writable by this server: "
            f"agent {agent.id} could not write its memory. Nothing was made.",
            path=agent.dir,
        )
    if health.free_bytes <= 0:
        raise DiskFull(
            f"The workspace's disk is full: agent {agent.id} could not write its memory. "
            "Nothing was made.",
            path=agent.dir,
        )


def agent_dir_problems() -> dict[str, list[str]]:
    """Why each agent's dir cannot be used (dir_problems), by agent id, for the agents
    that have problems — logged, never raised, so start-up always completes (SPEC §1).

    Looks only: nothing is created. An agent's `MEMORY.md` and `memory/`, and the user
    scope's `users/owner/facts/`, come with the first write that needs them, so a
    workspace holds nothing its owner did not ask for (no empty file or folder to show as
    untracked in their git)."""
    problems: dict[str, list[str]] = {}
    for agent in Agent.objects.all():
        found = dir_problems(agent)
        for problem in found:
            log.warning("agent %s: %s", agent.id, problem)
        if found:
            problems[agent.id] = found
    return problems
