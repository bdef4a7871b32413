"""The proposal kinds of the user and agent scopes (SPEC §5, §7): what approving a job's
shared write does. Registered from MemoryConfig.ready(), like `memory_rewrite` and
`fact_review` (memory.jobs) and, from WikiConfig.ready(), `wiki_compile`.
"""

from __future__ import annotations

from typing import Any

from memory import facts, notes, workspace
from memory.errors import InvalidInput, NotFound
from memory.text import parse_frontmatter
from proposals.actions import BaseKind
from proposals.diff import Presented, Presenter
from proposals.models import Proposal

FACT_FIELDS = ("description", "type", "body", "written_by", "source")


def _require_dict(payload: Any) -> dict:
    if not isinstance(payload, dict):
        raise InvalidInput("A proposal payload is a JSON object.")
    return payload


def written_by_same_job(proposal: Proposal) -> bool:
    """Whether a standing rule may change the fact this proposal changes: a new fact, or one
    whose file says it was last written by the same agent through the same job. The
    owner's facts (and another agent's or job's) are always asked about (SPEC §7)."""
    name = (proposal.payload or {}).get("name")
    fact = facts.get_fact(name) if isinstance(name, str) else None
    if fact is None:
        return True
    return fact.written_by == proposal.requested_by and fact.source == proposal.source


class UserFactKind(BaseKind):
    """Save (create or replace) a shared fact. Payload: name, description, type, body,
    written_by, source. Approving writes the rendered fact file and regenerates INDEX.md."""

    name = "user_fact"

    def may_apply_unattended(self, proposal: Proposal) -> bool:
        return written_by_same_job(proposal)

    def changes(self, *, agent: Any, payload: dict) -> dict[str, str | None]:
        payload = _require_dict(payload)
        name = payload.get("name")
        path = facts.fact_path(name)  # validates the name (422)
        fields = {key: payload.get(key) for key in FACT_FIELDS}
        if fields["body"] is None:
            fields["body"] = ""
        text = facts.render_fact(
            name,
            description=fields["description"],
            type=fields["type"],
            body=fields["body"],
            written_by=fields["written_by"] or "",
            source=fields["source"] or "",
        )
        return {path: text}

    def after_write(self, proposal: Proposal) -> None:
        facts.update_index([proposal.payload["name"]])


class UserFactForgetKind(BaseKind):
    """Forget a shared fact. Payload: name. Approving deletes the file and regenerates
    INDEX.md; proposing to forget an unknown fact is 404."""

    name = "user_fact_forget"

    def may_apply_unattended(self, proposal: Proposal) -> bool:
        return written_by_same_job(proposal)

    def changes(self, *, agent: Any, payload: dict) -> dict[str, str | None]:
        payload = _require_dict(payload)
        name = payload.get("name")
        path = facts.fact_path(name)
        if workspace.read(path) is None:
            raise NotFound(f"No fact {name!r}.")
        return {path: None}

    def after_write(self, proposal: Proposal) -> None:
        facts.update_index([proposal.payload["name"]])


class AgentMemoryKind(BaseKind):
    """Add durable lines to an agent's MEMORY.md. Payload: lines (non-empty strings) and
    optionally the heading they belong under. An append: approving adds the lines to the
    file as it is then (under the heading, created at the end when absent)."""

    name = "agent_memory"
    appends = True

    def changes(self, *, agent: Any, payload: dict) -> dict[str, str | None]:
        payload = _require_dict(payload)
        if agent is None:
            raise InvalidInput("An agent_memory proposal needs an agent.")
        path = notes.memory_path(agent)
        current = workspace.read(path) or ""
        # memory_with_lines validates the lines and the heading (InvalidInput, 422).
        return {
            path: notes.memory_with_lines(
                current, payload.get("lines"), heading=payload.get("heading") or ""
            )
        }


# --- how a fact reads in a diff --------------------------------------------------------

FACT_SHOWN_FIELDS = ("description", "type", "written_by", "source", "updated")


def _present_fact(text: str) -> Presented:
    meta, body = parse_frontmatter(text)
    fields = {key: str(meta[key]) for key in FACT_SHOWN_FIELDS if key in meta}
    return Presented(fields, body)


FACT_PRESENTER = Presenter(
    applies=lambda path: path.startswith(f"{facts.FACTS_DIR}/") and path != facts.INDEX_PATH,
    present=_present_fact,
)
