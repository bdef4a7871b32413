"""The presence rule (SPEC §5), used alike by REST, the agent tools and MCP.

A write made while a person is present (`chat`, `telegram`, `web`, `http`, `conv:<id>`…)
happens at once. A scheduled job (`source` = `job:<id>`) has nobody watching: its writes to
shared memory and its durable MEMORY.md lines become proposals (§7) that a person decides.

Everything is validated before anything is proposed, so a bad write from a job is 422
exactly like a bad write from a person, and no proposal row is left behind.

The `source` every function here takes comes from memory.presence.Caller.source(): the
caller's credential and the runtime's statement, never the model.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from memory import facts, notes, workspace
from memory.attribution import attributed
from memory.errors import Conflict, Forbidden, InvalidInput, NotFound
from memory.models import Agent
from memory.presence import is_job_source, validate_source
from memory.text import clean_heading, clean_reason, validate_fact_name
from proposals.actions import propose, supersede_pending

if TYPE_CHECKING:
    from proposals.models import Proposal


def _clean_written_by(written_by: object) -> str:
    if not isinstance(written_by, str) or not re.fullmatch(r"[a-z0-9:_-]{1,80}", written_by):
        raise InvalidInput(f"Invalid written_by {written_by!r}: an agent id or `owner`.")
    return written_by


def _propose(kind: str, **kwargs) -> Proposal:
    return propose(kind, **kwargs)


OWNER = "owner"  # `written_by` of the owner's own writes

F = TypeVar("F", bound=Callable)


def _sourced(func: F) -> F:
    """The files the write changes are attributed to its `source` in their history."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        source = kwargs.get("source")
        with attributed(source=source if isinstance(source, str) else ""):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


@_sourced
def replace_user(body: str, *, written_by: str, source: str, base_hash: str | None = None) -> None:
    """Replace USER.md — the owner's words about themselves, in every agent's prompt. Only
    the owner, present, may: an agent (`written_by` an agent id) or a job is Forbidden
    (403), and no proposal kind rewrites USER.md (a job proposes facts instead). With
    base_hash, Conflict (409) when USER.md changed since that hash was read."""
    validate_source(source)
    if _clean_written_by(written_by) != OWNER:
        raise Forbidden("USER.md is the owner's words: only the owner may rewrite it.")
    if is_job_source(source):
        raise Forbidden("A scheduled job may not rewrite USER.md; propose a fact instead.")
    facts.write_user(body, base_hash=base_hash)


@_sourced
def save_fact_or_propose(
    name: str,
    *,
    description: str,
    type: str,
    body: str,
    source: str,
    written_by: str,
    create_only: bool = False,
    reason: str | None = None,
) -> tuple[facts.Fact | None, Proposal | None]:
    """Present: write the fact now → (fact, None). Job: a `user_fact` proposal →
    (None, proposal), carrying the caller's `reason` (its own words, for the card).
    InvalidInput (422) for any bad field, before anything happens; with `create_only`,
    Conflict (409) when a fact of that name exists already."""
    validate_source(source)
    written_by = _clean_written_by(written_by)
    reason = clean_reason(reason)
    if create_only and facts.get_fact(name) is not None:
        raise Conflict(f"A fact named {name} exists already.", name=name)
    fields = {
        "description": description,
        "type": type,
        "body": body,
        "written_by": written_by,
        "source": source,
    }
    # Renders (and so validates) exactly what approving would write.
    facts.render_fact(name, **fields)
    if not is_job_source(source):
        return facts.save_fact(name, **fields), None
    existing = facts.get_fact(name)
    action = "update" if existing else "save"
    proposal = _propose(
        "user_fact",
        agent=None,
        target=facts.fact_path(name),
        payload={"name": name, **fields},
        reasons=[f"{written_by} asked to {action} the fact {name!r} from {source}."],
        source=source,
        reason=reason,
        requested_by=_asker(written_by),
    )
    return None, proposal


def _asker(written_by: str) -> str:
    """The agent that asked ("" for the owner): what a standing rule is scoped to."""
    return "" if written_by == OWNER else written_by


@_sourced
def forget_fact_or_propose(
    name: str, *, source: str, written_by: str, reason: str | None = None
) -> Proposal | None:
    """Present: delete the fact now → None. Job: a `user_fact_forget` proposal carrying
    the caller's `reason`. NotFound (404) for an unknown fact either way; InvalidInput
    (422) for a bad name or reason."""
    validate_source(source)
    written_by = _clean_written_by(written_by)
    reason = clean_reason(reason)
    validate_fact_name(name)
    if not is_job_source(source):
        facts.forget_fact(name)
        return None
    if facts.get_fact(name) is None:
        raise NotFound(f"No fact {name!r}.")
    return _propose(
        "user_fact_forget",
        agent=None,
        target=facts.fact_path(name),
        payload={"name": name},
        reasons=[f"{written_by} asked to forget the fact {name!r} from {source}."],
        source=source,
        reason=reason,
        requested_by=_asker(written_by),
    )


@_sourced
def add_memory_lines_or_propose(
    agent: Agent,
    lines: list[str],
    *,
    source: str,
    heading: str | None = None,
    reason: str | None = None,
) -> tuple[str | None, Proposal | None]:
    """Present: add the lines to MEMORY.md now — at the end, or under `heading` (created at
    the end when absent) → (new body, None). Job: an `agent_memory` proposal carrying the
    (validated, newline-folded) lines, the heading and the caller's `reason` → (None,
    proposal); approving adds them to the file as it is then. InvalidInput (422) for bad
    lines, heading, reason or source."""
    validate_source(source)
    cleaned = notes.clean_memory_lines(lines)
    under = clean_heading(heading)
    reason = clean_reason(reason)
    if not is_job_source(source):
        return notes.append_memory_lines(agent, cleaned, heading=under), None
    payload: dict = {"lines": cleaned}
    if under:
        payload["heading"] = under
    proposal = _propose(
        "agent_memory",
        agent=agent,
        target=notes.memory_path(agent),
        payload=payload,
        reasons=[f"{source} asked to add {len(cleaned)} line(s) to {agent.id}'s MEMORY.md."],
        source=source,
        reason=reason,
    )
    return None, proposal


@_sourced
def write_memory_or_propose(
    agent: Agent,
    body: str,
    *,
    source: str,
    base_hash: str | None = None,
    reason: str | None = None,
) -> Proposal | None:
    """Present: replace MEMORY.md now → None (Conflict when base_hash no longer matches).
    Job: a `memory_rewrite` proposal of the whole new text, carrying the caller's
    `reason`, which supersedes the agent's older pending rewrite (SPEC §7) → the proposal.
    InvalidInput for a bad source, body or reason, Conflict for a stale base_hash, before
    anything is proposed."""
    validate_source(source)
    reason = clean_reason(reason)
    if not isinstance(body, str):
        raise InvalidInput("MEMORY.md must be text.")
    if not is_job_source(source):
        notes.write_memory(agent, body, base_hash=base_hash)
        return None

    path = notes.memory_path(agent)
    if base_hash is not None and workspace.file_hash(path) != base_hash:
        raise Conflict("MEMORY.md changed since it was read.")
    proposal = _propose(
        "memory_rewrite",
        agent=agent,
        target=path,
        payload={"memory": notes.normalise_newlines(body)},
        reasons=[f"{source} asked to rewrite {agent.id}'s MEMORY.md."],
        source=source,
        reason=reason,
    )
    supersede_pending("memory_rewrite", agent=agent, except_id=proposal.pk)
    return proposal
