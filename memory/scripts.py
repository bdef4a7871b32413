"""The script store (SPEC §11): what an agent's scripts keep with `store(key, value)` for a
later run to `load(key)`, per schedule or per conversation. Rows, not memory files.

Every interface (REST, the Scripts tab, scripts running in-process) calls these functions.
"""

from __future__ import annotations

from typing import Any

from memory.errors import InvalidInput, NotFound
from memory.models import Agent, ScriptEntry

SCOPES = tuple(ScriptEntry.Scope.values)  # ("schedule", "conversation")
MAX_ID_LENGTH = 200


def validate_scope(scope: str) -> str:
    """`schedule` or `conversation`; anything else is InvalidInput (422)."""
    if scope not in SCOPES:
        raise InvalidInput(f"Unknown scope {scope!r}: use 'schedule' or 'conversation'.")
    return scope


def _validate_id(kind: str, value: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LENGTH:
        raise InvalidInput(f"A {kind} is 1–{MAX_ID_LENGTH} characters.")
    if "\x00" in value or "/" in value:
        raise InvalidInput(f"A {kind} may not contain '/' or NUL.")
    return value


def store(agent: Agent, scope: str, scope_id: str, key: str, value: Any) -> ScriptEntry:
    """Upsert one entry (the value is any JSON-serialisable data). Returns the row.

    One row per (agent, scope, scope_id, key), guaranteed by a unique constraint, so two
    concurrent stores of one key leave one row holding the later value.
    """
    validate_scope(scope)
    _validate_id("scope id", scope_id)
    _validate_id("key", key)
    entry, _ = ScriptEntry.objects.update_or_create(
        agent=agent, scope=scope, scope_id=scope_id, key=key, defaults={"value": value}
    )
    return entry


def get_entry_or_404(agent: Agent, scope: str, scope_id: str, key: str) -> ScriptEntry:
    validate_scope(scope)
    entry = ScriptEntry.objects.filter(agent=agent, scope=scope, scope_id=scope_id, key=key).first()
    if entry is None:
        raise NotFound(f"No script-store entry {scope}/{scope_id}/{key}.")
    return entry


def load(agent: Agent, scope: str, scope_id: str, key: str, default: Any = None) -> Any:
    """The stored value, or `default` when nothing is stored under that key."""
    validate_scope(scope)
    entry = ScriptEntry.objects.filter(agent=agent, scope=scope, scope_id=scope_id, key=key).first()
    return default if entry is None else entry.value


def delete_entry(agent: Agent, scope: str, scope_id: str, key: str) -> None:
    """Delete one entry; NotFound (404) when there is none."""
    validate_scope(scope)
    deleted, _ = ScriptEntry.objects.filter(
        agent=agent, scope=scope, scope_id=scope_id, key=key
    ).delete()
    if not deleted:
        raise NotFound(f"No script-store entry {scope}/{scope_id}/{key}.")


def list_entries(
    agent: Agent, *, schedule: str | None = None, conversation: str | None = None
) -> list[ScriptEntry]:
    """An agent's entries, ordered by scope, scope id and key. With `schedule` and/or
    `conversation`, only the entries of that schedule / that conversation."""
    rows = ScriptEntry.objects.filter(agent=agent)
    if schedule is not None and conversation is not None:
        rows = rows.filter(scope="schedule", scope_id=schedule) | rows.filter(
            scope="conversation", scope_id=conversation
        )
    elif schedule is not None:
        rows = rows.filter(scope="schedule", scope_id=schedule)
    elif conversation is not None:
        rows = rows.filter(scope="conversation", scope_id=conversation)
    return list(rows.order_by("scope", "scope_id", "key"))


def grouped(agent: Agent) -> dict[str, dict[str, list[ScriptEntry]]]:
    """{"schedule": {scope_id: [entries]}, "conversation": {…}} for the Scripts tab."""
    groups: dict[str, dict[str, list[ScriptEntry]]] = {scope: {} for scope in SCOPES}
    for entry in list_entries(agent):
        groups[entry.scope].setdefault(entry.scope_id, []).append(entry)
    return groups


class ScriptStore:
    """`store(key, value)` / `load(key)` bound to one schedule or one conversation:

    kv = ScriptStore(agent, schedule="morning-bulletin")
    kv.store("last_sent", "2026-11-30")
    kv.load("last_sent")
    """

    def __init__(
        self, agent: Agent, *, schedule: str | None = None, conversation: str | None = None
    ) -> None:
        if (schedule is None) == (conversation is None):
            raise InvalidInput("Bind a script store to exactly one schedule or conversation.")
        self.agent = agent
        self.scope = "schedule" if schedule is not None else "conversation"
        self.scope_id = _validate_id("scope id", schedule if schedule is not None else conversation)

    def store(self, key: str, value: Any) -> None:
        store(self.agent, self.scope, self.scope_id, key, value)

    def load(self, key: str, default: Any = None) -> Any:
        return load(self.agent, self.scope, self.scope_id, key, default)

    def delete(self, key: str) -> None:
        delete_entry(self.agent, self.scope, self.scope_id, key)

    def entries(self) -> dict[str, Any]:
        return {
            entry.key: entry.value
            for entry in ScriptEntry.objects.filter(
                agent=self.agent, scope=self.scope, scope_id=self.scope_id
            )
        }
