"""Prompt context (SPEC §4): the system-prompt sections and the pre-turn notes block.

System prompt (§4.1): `## USER.md`, `## INDEX.md`, `## MEMORY.md`, in that order, each
followed by the file's text capped (4,000 / 4,000 / 24,000 characters, cut with `…`),
sections separated by one blank line. A missing or blank file is skipped. USER.md is the
file memory.facts.user_path() names (a root USER.md in an OpenClaw workspace), MEMORY.md
the agent's long-term file (memory.md where that stands for it; the section carries the
file's own name).

Pre-turn block (§4.2): every note of today and yesterday — plain, session
(`2026-05-20-0821.md`) and slugged (`2026-05-20-evening.md`), as OpenClaw writes them —
newest first (today's before yesterday's; within a day the plain note, then the others by
name, newest first: memory.notes.day_note_names), each as a part

    ## memory/2026-11-30.md
    ```markdown
    <the whole note>
    ```

the first time a conversation sees the note (or again when the note was rewritten, i.e.
the text shown before is no longer a prefix of the file), and

    ## memory/2026-11-30.md (new since last shown)
    ```markdown
    <only the bytes appended since>
    ```

on later turns. The note's text is fenced as quoted data: the fence is longer than any
backtick run inside, so nothing a note holds (a transcript, pasted text, its own headings)
can close it or pass for the block's own structure. Parts are separated by one blank line;
a note with nothing new has no part, and nothing new at all is the empty string. The path
is the one memory_search and memory_get use. What a conversation has seen is a NoteCursor
row per note.

Caps (§4.2): each part shows at most MEMORY_PRE_TURN_NOTE_CHARS characters of note text,
and the whole block stays within MEMORY_PRE_TURN_TOTAL_CHARS, handed out in the block's
order (newest first), so an older note is the one cut or only pointed at.
A cut part ends its text after the last whole line that fits, with `…`, and is followed,
after the fence, by a line saying what was left out and the memory_get call (path,
from_line) that reads the rest. The cursor still moves past the whole note: the block
says where the rest is, and showing the same start again every turn would crowd out what
is new.

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
import sys
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from memory import clock, facts, notes, workspace
from memory.errors import InvalidInput, PathRefused
from memory.models import Agent, ContextTurn, NoteCursor
from memory.text import cap, fence_mark

USER_CAP = 4000
INDEX_CAP = 4000
MEMORY_CAP = 24000
NEW_SINCE_LABEL = "(new since last shown)"
CHAT_KINDS = ("direct", "group")
MAX_CONVERSATION_CHARS = 200
# What a runtime already puts in the model's prompt itself, by section: asked for with its
# name, the context leaves those sections out, so nothing reaches the model twice (§4.2).
# OpenClaw injects its workspace's USER.md and MEMORY.md (or memory.md) on every turn.
RUNTIMES: dict[str, frozenset[str]] = {"openclaw": frozenset({"user", "memory"})}

log = logging.getLogger(__name__)


def _readable(read, rel: str):
    """`read(rel)`, or None when the path is refused (a symbolic link, SPEC §1): one file
    that cannot be read is left out of the prompt, the rest is served (SPEC §4.2)."""
    try:
        return read(rel)
    except PathRefused as exc:
        log.warning("left out of the prompt: %s", exc.message)
        return None


def _section(title: str, text: str | None, limit: int) -> str | None:
    if text is None or not text.strip():
        return None
    return f"## {title}\n{cap(text.rstrip(), limit)}"


def _read_index(path: str) -> str:
    return facts.read_index()


def clean_runtime(runtime: object) -> str | None:
    """A runtime's name (RUNTIMES), None for none; anything else is InvalidInput (422)."""
    if runtime is None or runtime == "":
        return None
    if runtime not in RUNTIMES:
        raise InvalidInput(
            f"`runtime` must be one of {', '.join(sorted(RUNTIMES))}, not {runtime!r}."
        )
    return runtime  # type: ignore[return-value]


def system_sections(
    agent: Agent, *, capped: bool = True, runtime: str | None = None
) -> list[tuple[str, str, str]]:
    """(title, workspace path, section text) of each §4.1 section present, in order — the
    agent screen shows where each came from. capped=False: without the caps. `runtime`
    (RUNTIMES) leaves out the sections that runtime injects itself."""
    unlimited = sys.maxsize
    injected = RUNTIMES[clean_runtime(runtime)] if runtime else frozenset()
    found = []
    for role, title, path, limit in (
        ("user", "USER.md", facts.user_path(), USER_CAP),
        ("index", "INDEX.md", facts.INDEX_PATH, INDEX_CAP),
        ("memory", notes.memory_file_name(agent), notes.memory_path(agent), MEMORY_CAP),
    ):
        if role in injected:
            continue
        reader = _read_index if path == facts.INDEX_PATH else workspace.read
        section = _section(title, _readable(reader, path), limit if capped else unlimited)
        if section:
            found.append((title, path, section))
    return found


def system_prompt(agent: Agent, *, capped: bool = True, runtime: str | None = None) -> str:
    """The §4.1 sections for a private conversation with `agent` ("" when all missing).
    capped=False: the same without the caps (what the doctor compares against); `runtime`:
    without what that runtime injects itself (RUNTIMES)."""
    sections = system_sections(agent, capped=capped, runtime=runtime)
    return "\n\n".join(section for _title, _path, section in sections)


def block_note_names(agent: Agent) -> list[str]:
    """The file names of the notes the pre-turn block reads now, in its order: every note
    of today and yesterday (the owner's days), newest first (§4.2)."""
    today = clock.today()
    return notes.day_note_names(agent, [today, today - dt.timedelta(days=1)])


def pre_turn_paths(agent: Agent) -> list[str]:
    """The workspace paths of the notes the pre-turn block reads (block_note_names), in
    its order; each exists (they come from a listing of memory/)."""
    return [_note_rel(agent, name) for name in block_note_names(agent)]


def _note_rel(agent: Agent, name: str) -> str:
    # The name came from the listing of memory/ (one file name, no separator).
    return agent.path(f"{notes.NOTES_DIR}/{name}")


@dataclass(frozen=True)
class _Shown:
    note: str  # file name
    data: bytes  # the whole file as read


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_note_bytes(agent: Agent, name: str) -> bytes | None:
    rel = _note_rel(agent, name)

    def read(rel: str) -> bytes | None:
        # Under the note's (shared) lock: memory_save appends whole lines under it, so we
        # never see half a line (or half a UTF-8 character).
        with workspace.locked(rel, shared=True):
            return workspace.read_bytes_from(rel, 0)

    return _readable(read, rel)


def note_cap() -> int:
    """Characters of note text one part of the pre-turn block shows at most."""
    return int(settings.MEMORY_PRE_TURN_NOTE_CHARS)


def total_cap() -> int:
    """Characters the whole pre-turn block holds at most."""
    return int(settings.MEMORY_PRE_TURN_TOTAL_CHARS)


# Room kept for a part's heading, fence lines and "not shown" line when sharing the total.
FRAME_RESERVE = 300
MIN_PART_CHARS = 200  # less room than this for a note's text: only the pointer is shown


@dataclass(frozen=True)
class _Piece:
    """One note's part of the block before it is rendered: the note's name, its text
    (decoded), the line of the file its text starts on, and whether it is only what is
    new since last shown."""

    name: str
    text: str
    first_line: int
    new_only: bool


def _piece(name: str, data: bytes, *, start: int, new_only: bool) -> _Piece | None:
    # As the workspace hands text out: "\n" endings, no BOM, bad bytes as U+FFFD.
    text = workspace.decode(data[start:]).rstrip("\n")
    if not text.strip():
        return None
    return _Piece(name, text, data[:start].count(b"\n") + 1, new_only)


def _cut_lines(text: str, limit: int) -> tuple[str, int]:
    """(the start of `text` within `limit` characters, ending in `…`, and how many whole
    lines it shows). Whole lines when at least one fits; else the first line, cut."""
    room = max(limit - 1, 0)
    shown: list[str] = []
    size = 0
    for line in text.split("\n"):
        extra = len(line) + (1 if shown else 0)
        if size + extra > room:
            break
        shown.append(line)
        size += extra
    if not shown:
        return text[:room] + "…", 0
    return "\n".join(shown) + "…", len(shown)


def _render(piece: _Piece, limit: int) -> tuple[str, int]:
    """One part: heading, the note's text fenced (cut to `limit` characters, with the
    memory_get call for the rest), or only that call when not even MIN_PART_CHARS fit;
    and how many characters of the note's text it shows."""
    path = f"{notes.NOTES_DIR}/{piece.name}"
    title = f"## {path} {NEW_SINCE_LABEL}" if piece.new_only else f"## {path}"
    if len(piece.text) <= limit:
        mark = fence_mark(piece.text)
        return f"{title}\n{mark}markdown\n{piece.text}\n{mark}", len(piece.text)
    total_lines = piece.text.count("\n") + 1
    if limit < MIN_PART_CHARS:
        return (
            f"{title}\n[… {total_lines:,} line(s), {len(piece.text):,} characters of this "
            f'note not shown (the block is full): call memory_get with path="{path}", '
            f"from_line={piece.first_line}]"
        ), 0
    shown, whole_lines = _cut_lines(piece.text, limit)
    mark = fence_mark(shown)
    left_chars = len(piece.text) - (len(shown) - 1)
    return (
        f"{title}\n{mark}markdown\n{shown}\n{mark}\n"
        f"[… {total_lines - whole_lines:,} more line(s), {left_chars:,} characters of this "
        f'note not shown: call memory_get with path="{path}", '
        f"from_line={piece.first_line + whole_lines}]"
    ), len(shown) - 1


@dataclass(frozen=True)
class Part:
    """What the block holds of one note: its file name, the characters of its text, how
    many of them the block shows (all: whole; fewer: cut; 0: only the memory_get call)."""

    name: str
    chars: int
    shown: int


def _assemble_parts(pieces: list[_Piece], *, capped: bool = True) -> tuple[str, list[Part]]:
    """The block from its pieces (in the block's order, newest first), capped per note and
    in total — the room handed out in that order, so the newest note is never the one
    crowded out — and what it holds of each note."""
    rendered: list[str] = []
    parts: list[Part] = []
    room = total_cap() if capped else sys.maxsize
    per_note = note_cap() if capped else sys.maxsize
    for piece in pieces:
        part, shown = _render(piece, min(per_note, max(room - FRAME_RESERVE, 0)))
        rendered.append(part)
        parts.append(Part(piece.name, len(piece.text), shown))
        room -= len(part) + 2  # and the blank line between parts
    return "\n\n".join(rendered), parts


def _assemble(pieces: list[_Piece], *, capped: bool = True) -> str:
    return _assemble_parts(pieces, capped=capped)[0]


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
    and writes nothing. Every note of today and yesterday is read (block_note_names).
    """
    conversation = clean_conversation(conversation)
    pieces: list[_Piece] = []
    seen: list[_Shown] = []
    cursors = {
        cursor.note: cursor
        for cursor in NoteCursor.objects.filter(agent=agent, conversation=conversation)
    }
    for name in block_note_names(agent):
        data = _read_note_bytes(agent, name)
        if data is None:
            continue
        cursor = cursors.get(name)
        unchanged_prefix = (
            cursor is not None
            and cursor.shown_size <= len(data)
            and _sha(data[: cursor.shown_size]) == cursor.shown_hash
        )
        piece = (
            _piece(name, data, start=cursor.shown_size, new_only=True)
            if unchanged_prefix
            else _piece(name, data, start=0, new_only=False)
        )
        if piece:
            pieces.append(piece)
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
    return _assemble(pieces)


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
    """The block a new conversation would get now (every note of today and yesterday,
    whole, within the caps). Writes no cursor: for the management pages' agent screen."""
    return render_new_block(read_block_notes(agent))


def read_block_notes(agent: Agent) -> list[tuple[str, bytes]]:
    """(file name, bytes) of each note the block reads now, in its order; a note that
    cannot be read (a symbolic link) is left out."""
    notes_read = []
    for name in block_note_names(agent):
        data = _read_note_bytes(agent, name)
        if data is not None:
            notes_read.append((name, data))
    return notes_read


def _new_pieces(notes_read: list[tuple[str, bytes]]) -> list[_Piece]:
    pieces = []
    for name, data in notes_read:
        piece = _piece(name, data, start=0, new_only=False)
        if piece:
            pieces.append(piece)
    return pieces


def render_new_block(notes_read: list[tuple[str, bytes]], *, capped: bool = True) -> str:
    """The block a new conversation gets for these notes ((file name, bytes), in the
    block's order), within the caps (or, capped=False, without them). Pure: reads and
    writes nothing (the doctor uses it too)."""
    return _assemble(_new_pieces(notes_read), capped=capped)


def plan_new_block(notes_read: list[tuple[str, bytes]]) -> list[Part]:
    """What a new conversation's block holds of each of these notes, within the caps:
    what the doctor shows per agent. Pure."""
    return _assemble_parts(_new_pieces(notes_read))[1]


def build_context(
    agent: Agent,
    conversation: str | None,
    chat: str | None = "direct",
    *,
    turn: str | None = None,
    runtime: str | None = None,
) -> dict:
    """`{"system", "pre_turn"}` for one turn. `chat` is "direct" (default) or "group";
    a group gets no private memory at all (§4.3). Without a conversation the pre-turn
    block is the preview (no cursor written); with a `turn` it is retry-safe
    (pre_turn_for_turn). `runtime` names a runtime that injects some files itself
    (RUNTIMES: "openclaw"): their sections are left out of `system` (§4.2)."""
    chat = chat or "direct"
    if chat not in CHAT_KINDS:
        raise InvalidInput(f"`chat` must be one of {', '.join(CHAT_KINDS)}, not {chat!r}.")
    runtime = clean_runtime(runtime)
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
    return {"system": system_prompt(agent, runtime=runtime), "pre_turn": pre_turn}
