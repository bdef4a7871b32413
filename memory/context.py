"""Prompt context (SPEC §4): the system-prompt sections and the pre-turn notes block.

System prompt (§4.1): `## USER.md`, `## INDEX.md`, `## MEMORY.md`, in that order, each
followed by the file's text capped (4,000 / 4,000 / 24,000 characters, cut with `…`),
sections separated by one blank line. A missing or blank file is skipped.

Pre-turn block (§4.2): yesterday's then today's plain note, each as a part

    ## memory/2026-11-30.md
    <the whole note>

the first time a conversation sees the note (or again when the note was rewritten, i.e.
the text shown before is no longer a prefix of the file), and

    ## memory/2026-11-30.md (new since last shown)
    <only the bytes appended since>

on later turns. Parts are separated by one blank line; a note with nothing new has no
part, and nothing new at all is the empty string. The path is the one memory_search and
memory_get use. What a conversation has seen is a NoteCursor row per note.

A group conversation (§4.3) gets neither: system "" and pre_turn "".

Retries (§4.2): with a `turn` id, the block answered for a conversation's turn is kept (a
ContextTurn row, the last turn only); asking again for that turn answers the same block
and moves no cursor, and only a new turn id computes (and advances) a new block. A request
without `turn` advances as before.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from dataclasses import dataclass

from django.db import transaction

from memory import clock, facts, notes, workspace
from memory.errors import InvalidInput, PathRefused
from memory.models import Agent, ContextTurn, NoteCursor
from memory.text import cap

USER_CAP = 4000
INDEX_CAP = 4000
MEMORY_CAP = 24000
NEW_SINCE_LABEL = "(new since last shown)"
CHAT_KINDS = ("direct", "group")
MAX_CONVERSATION_CHARS = 200

log = logging.getLogger(__name__)


def _readable(read, rel: str):
    """`read(rel)`, or None when the path is refused (a symbolic link, SPEC §1): one file
    that cannot be read is left out of the prompt, the rest is served (issue 10.14)."""
    try:
        return read(rel)
    except PathRefused as exc:
        log.warning("left out of the prompt: %s", exc.message)
        return None


def _section(title: str, text: str | None, limit: int) -> str | None:
    if text is None or not text.strip():
        return None
    return f"## {title}\n{cap(text.rstrip(), limit)}"


def system_prompt(agent: Agent) -> str:
    """The §4.1 sections for a private conversation with `agent` ("" when all missing)."""
    sections = [
        _section("USER.md", _readable(workspace.read, facts.USER_PATH), USER_CAP),
        _section("INDEX.md", _readable(workspace.read, facts.INDEX_PATH), INDEX_CAP),
        _section("MEMORY.md", _readable(workspace.read, notes.memory_path(agent)), MEMORY_CAP),
    ]
    return "\n\n".join(section for section in sections if section)


@dataclass(frozen=True)
class _Shown:
    note: str  # file name
    data: bytes  # the whole file as read


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_note_bytes(agent: Agent, name: str) -> bytes | None:
    rel = notes.note_path(agent, name)

    def read(rel: str) -> bytes | None:
        # Under the note's (shared) lock: memory_save appends whole lines under it, so we
        # never see half a line (or half a UTF-8 character).
        with workspace.locked(rel, shared=True):
            return workspace.read_bytes_from(rel, 0)

    return _readable(read, rel)


def _recent_plain_notes(on: dt.date) -> list[str]:
    # Oldest first, so the block reads in time order.
    return [notes.plain_note_name(on - dt.timedelta(days=1)), notes.plain_note_name(on)]


def _part(name: str, data: bytes, *, new_only: bool) -> str | None:
    # As the workspace hands text out: "\n" endings, no BOM, bad bytes as U+FFFD.
    text = workspace.decode(data).rstrip("\n")
    if not text.strip():
        return None
    title = f"{notes.NOTES_DIR}/{name}"
    if new_only:
        title = f"{title} {NEW_SINCE_LABEL}"
    return f"## {title}\n{text}"


def clean_conversation(conversation: object) -> str:
    if not isinstance(conversation, str) or not conversation.strip():
        raise InvalidInput("`conversation` must be a non-empty string.")
    if len(conversation) > MAX_CONVERSATION_CHARS:
        raise InvalidInput(f"`conversation` may have at most {MAX_CONVERSATION_CHARS} characters.")
    return conversation


def pre_turn_block(agent: Agent, conversation: str, *, advance: bool = True) -> str:
    """The notes block to place before this turn's opening message (§4.2).

    With advance (the default) the conversation's cursors move to what was shown, so the
    next call shows only what is appended after. advance=False computes the same block
    and writes nothing. Suffixed notes are never included.
    """
    conversation = clean_conversation(conversation)
    parts: list[str] = []
    seen: list[_Shown] = []
    cursors = {
        cursor.note: cursor
        for cursor in NoteCursor.objects.filter(agent=agent, conversation=conversation)
    }
    for name in _recent_plain_notes(clock.today()):
        data = _read_note_bytes(agent, name)
        if data is None:
            continue
        cursor = cursors.get(name)
        unchanged_prefix = (
            cursor is not None
            and cursor.shown_size <= len(data)
            and _sha(data[: cursor.shown_size]) == cursor.shown_hash
        )
        part = (
            _part(name, data[cursor.shown_size :], new_only=True)
            if unchanged_prefix
            else _part(name, data, new_only=False)
        )
        if part:
            parts.append(part)
        if not unchanged_prefix or len(data) != cursor.shown_size:
            seen.append(_Shown(name, data))
    if advance and seen:
        with transaction.atomic():
            for shown in seen:
                NoteCursor.objects.update_or_create(
                    agent=agent,
                    conversation=conversation,
                    note=shown.note,
                    defaults={"shown_size": len(shown.data), "shown_hash": _sha(shown.data)},
                )
    return "\n\n".join(parts)


def clean_turn(turn: object) -> str:
    if not isinstance(turn, str) or not turn.strip():
        raise InvalidInput("`turn` must be a non-empty string.")
    if len(turn) > MAX_CONVERSATION_CHARS:
        raise InvalidInput(f"`turn` may have at most {MAX_CONVERSATION_CHARS} characters.")
    return turn


def pre_turn_for_turn(agent: Agent, conversation: str, turn: str) -> str:
    """The block for one turn of a conversation, retry-safe: the same `turn` as the last
    one answered gets the block answered then, and no cursor moves; a new turn computes
    and advances (pre_turn_block) and is remembered as the conversation's last turn.

    The conversation's row is locked while a new block is computed, so a retry racing
    the original request waits for it and answers the same block.
    """
    conversation = clean_conversation(conversation)
    turn = clean_turn(turn)
    last = ContextTurn.objects.filter(agent=agent, conversation=conversation).first()
    if last is not None and last.turn == turn:
        return last.pre_turn
    with transaction.atomic():
        row, _ = ContextTurn.objects.select_for_update().get_or_create(
            agent=agent, conversation=conversation
        )
        if row.turn == turn:  # the racing request answered it meanwhile
            return row.pre_turn
        block = pre_turn_block(agent, conversation)
        row.turn = turn
        row.pre_turn = block
        row.save(update_fields=["turn", "pre_turn", "updated_at"])
    return block


def preview_pre_turn(agent: Agent) -> str:
    """The block a new conversation would get now (today's and yesterday's plain notes,
    whole). Writes no cursor: for the management pages' agent screen."""
    parts = []
    for name in _recent_plain_notes(clock.today()):
        data = _read_note_bytes(agent, name)
        part = _part(name, data, new_only=False) if data is not None else None
        if part:
            parts.append(part)
    return "\n\n".join(parts)


def build_context(
    agent: Agent,
    conversation: str | None,
    chat: str | None = "direct",
    *,
    turn: str | None = None,
) -> dict:
    """`{"system", "pre_turn"}` for one turn. `chat` is "direct" (default) or "group";
    a group gets no private memory at all (§4.3). Without a conversation the pre-turn
    block is the preview (no cursor written); with a `turn` it is retry-safe
    (pre_turn_for_turn)."""
    chat = chat or "direct"
    if chat not in CHAT_KINDS:
        raise InvalidInput(f"`chat` must be one of {', '.join(CHAT_KINDS)}, not {chat!r}.")
    if chat == "group":
        return {"system": "", "pre_turn": ""}
    if conversation is None or conversation == "":
        if turn is not None:
            raise InvalidInput("`turn` needs a `conversation`.")
        pre_turn = preview_pre_turn(agent)
    elif turn is not None:
        pre_turn = pre_turn_for_turn(agent, conversation, turn)
    else:
        pre_turn = pre_turn_block(agent, conversation)
    return {"system": system_prompt(agent), "pre_turn": pre_turn}
