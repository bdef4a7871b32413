"""Agents (SPEC §12): lookups and the directories each agent's memory lives in."""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction

from memory import workspace
from memory.errors import Conflict, DomainError, NotFound, PathRefused
from memory.models import Agent

log = logging.getLogger(__name__)

DEFAULT_AGENT_ID = "master"
MEMORY_FILE = "MEMORY.md"
# OpenClaw reads MEMORY.md, else memory.md: a workspace may hold only the lowercase one.
MEMORY_ALT_FILE = "memory.md"


def get_agent_or_404(agent_id: str) -> Agent:
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        raise NotFound(f"No agent {agent_id!r}.")
    return agent


def create_agent(
    *, id: str, name: str, autonomous: bool = False, memory_consolidate: str = ""
) -> Agent:
    """Create a (non-default) agent from fields a serializer validated, with its directory
    (SPEC §1, §12), its schedule too (memory.jobs.schedules). Conflict (409) when the id
    is taken, also when two requests race for it. The row and the directory come together:
    a workspace that cannot take the directory (read-only: WorkspaceReadOnly, 503; full:
    DiskFull, 507; something in the way: PathRefused, 422) leaves no row behind."""
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
            _make_dirs(agent)  # raises the workspace's error, which rolls the row back
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
    SPEC §1, docs/decisions.md), and each must be what it is named (a folder, a file)."""
    problems: list[str] = []
    wanted = [("memory", "dir"), (memory_file_name(agent), "file")]
    checks = [(part, "dir") for part in _dir_parts(agent)] + [
        (agent.path(name), kind) for name, kind in wanted
    ]
    for rel, kind in checks:
        try:
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


def _dir_parts(agent: Agent) -> list[str]:
    # "agents" and "agents/<id>" for a non-default agent; the default agent's dir is the
    # workspace root itself (which may be a link: it is resolved once, at the root).
    return ["agents", agent.dir] if agent.dir else []


def _make_dirs(agent: Agent) -> None:
    """The agent's memory/ and its MEMORY.md (see ensure_agent_dirs); raises the
    workspace's error."""
    workspace.ensure_dir(agent.path("memory"))
    if memory_file_name(agent) == MEMORY_FILE:
        workspace.create(agent.path(MEMORY_FILE))


def ensure_agent_dirs(agent: Agent) -> list[str]:
    """Create the agent dir with its MEMORY.md and memory/ (SPEC §1). An existing
    MEMORY.md is never touched; a new one is empty (an empty file is left out of the
    prompt, as a missing one is). Where `memory.md` stands for MEMORY.md, no MEMORY.md is
    created beside it: OpenClaw would then load the empty one instead.

    Never raises for the workspace's state: an agent dir that cannot be used (a symbolic
    link, a file where a folder should be, a read-only or full disk) is logged with the
    reason and returned as problems, so start-up always completes (SPEC §1)."""
    problems = dir_problems(agent)
    if not problems:
        try:
            _make_dirs(agent)
        except DomainError as exc:
            problems = [exc.message]
    for problem in problems:
        log.warning("agent %s: %s", agent.id, problem)
    return problems


def on_agent_saved(sender: type[Agent], instance: Agent, created: bool, **kwargs) -> None:
    """Every way an agent comes to exist (REST, admin, shell) gives it its directory."""
    if created:
        ensure_agent_dirs(instance)


def ensure_all_dirs() -> dict[str, list[str]]:
    """ensure_agent_dirs for every agent (and the user scope's folder). Returns the
    problems found, by agent id ("" for the user scope); logged, never raised."""
    problems: dict[str, list[str]] = {}
    try:
        workspace.ensure_dir("users/owner/facts")
    except DomainError as exc:
        log.warning("the user scope: %s", exc.message)
        problems[""] = [exc.message]
    for agent in Agent.objects.all():
        found = ensure_agent_dirs(agent)
        if found:
            problems[agent.id] = found
    return problems
