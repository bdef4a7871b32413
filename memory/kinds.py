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


class UserFactKind(BaseKind):
    """Save (create or replace) a shared fact. Payload: name, description, type, body,
    written_by, source. Approving writes the rendered fact file and regenerates INDEX.md."""

    name = "user_fact"

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
        facts.regenerate_index()


class UserFactForgetKind(BaseKind):
    """Forget a shared fact. Payload: name. Approving deletes the file and regenerates
    INDEX.md; proposing to forget an unknown fact is 404."""

    name = "user_fact_forget"

    def changes(self, *, agent: Any, payload: dict) -> dict[str, str | None]:
        payload = _require_dict(payload)
        name = payload.get("name")
        path = facts.fact_path(name)
        if workspace.read(path) is None:
            raise NotFound(f"No fact {name!r}.")
        return {path: None}

    def after_write(self, proposal: Proposal) -> None:
        facts.regenerate_index()


class AgentMemoryKind(BaseKind):
    """Add durable lines to an agent's MEMORY.md. Payload: lines (non-empty strings)."""

    name = "agent_memory"

    def changes(self, *, agent: Any, payload: dict) -> dict[str, str | None]:
        payload = _require_dict(payload)
        if agent is None:
            raise InvalidInput("An agent_memory proposal needs an agent.")
        path = notes.memory_path(agent)
        current = workspace.read(path) or ""
        # memory_with_lines validates the lines (InvalidInput, 422).
        return {path: notes.memory_with_lines(current, payload.get("lines"))}


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
