"""Agent scope (SPEC §3): MEMORY.md, daily notes and `memory_save`.

Every path is inside the agent dir (`agent.path(...)`); all disk IO goes through
memory.workspace. Note names are validated strictly (memory.text.parse_note_name), so a
name can never point outside `memory/`.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from memory import agents, reading, workspace
from memory.clock import local_now
from memory.errors import InvalidInput, NotFound, PathRefused
from memory.listing import Listing, page_bounds
from memory.models import Agent
from memory.text import (
    clean_heading,
    fence_mark,
    fold,
    fold_single_line,
    heading_level,
    heading_text,
    note_day,
    parse_note_name,
)

log = logging.getLogger(__name__)

MEMORY_FILE = agents.MEMORY_FILE
MEMORY_ALT_FILE = agents.MEMORY_ALT_FILE
NOTES_DIR = "memory"
# One memory_save line; a longer text is not a note but a document (422).
MAX_SAVE_CHARS = 4000
# One durable line added to MEMORY.md, and how many one request may add.
MAX_LINE_CHARS = 2000
MAX_LINES = 100


@dataclass(frozen=True)
class NoteInfo:
    """One file of an agent's `memory/`. `day` is None only for hand-kept files that are
    not daily notes (e.g. `facebook-books.md`), listed with `include_other=True`."""

    day: dt.date | None
    name: str  # the file name, e.g. "2026-11-30.md" or "2026-11-30-1030.md"
    size: int
    modified: dt.datetime  # aware, UTC


def normalise_newlines(text: str) -> str:
    # Files are UTF-8 with "\n" line endings (SPEC §1), whatever the client sent.
    return text.replace("\r\n", "\n").replace("\r", "\n")


# --- MEMORY.md -------------------------------------------------------------------------


def memory_path(agent: Agent) -> str:
    """The agent's long-term file: MEMORY.md, or memory.md where only that exists."""
    return agents.memory_file(agent)


def memory_file_name(agent: Agent) -> str:
    return agents.memory_file_name(agent)


def read_memory(agent: Agent) -> str:
    """MEMORY.md of the agent, "" when it does not exist."""
    return workspace.read(memory_path(agent)) or ""


def read_memory_with_hash(agent: Agent) -> workspace.FileText:
    """MEMORY.md as an editor opens it: the text, the hash of exactly that text (one read
    under the file's shared lock: a write with it as `base_hash` is a Conflict over
    anything written since), whether it had bytes that are not UTF-8. A missing file is
    `workspace.NO_FILE` (no text, the hash ABSENT)."""
    return workspace.read_file_locked(memory_path(agent)) or workspace.NO_FILE


def write_memory(agent: Agent, body: str, *, base_hash: str | None = None) -> None:
    """Replace MEMORY.md atomically (an intended edit: owner or the agent's rewrite).
    With base_hash, Conflict when MEMORY.md changed since that hash was read."""
    if not isinstance(body, str):
        raise InvalidInput("MEMORY.md must be text.")
    workspace.write_checked(memory_path(agent), normalise_newlines(body), base_hash=base_hash)


def clean_memory_lines(lines: object) -> list[str]:
    """The lines to add to MEMORY.md, validated: a non-empty list (at most MAX_LINES) of
    non-empty strings. Newlines inside a line fold to spaces (one line stays one line).
    Raises InvalidInput; nothing is written by this function."""
    if not isinstance(lines, list) or not lines:
        raise InvalidInput("`lines` must be a non-empty list of strings.")
    if len(lines) > MAX_LINES:
        raise InvalidInput(f"At most {MAX_LINES} lines at once.")
    cleaned: list[str] = []
    for line in lines:
        if not isinstance(line, str):
            raise InvalidInput("Every line must be a string.")
        folded = fold_single_line(line)
        if not folded:
            raise InvalidInput("A line may not be empty.")
        if len(folded) > MAX_LINE_CHARS:
            raise InvalidInput(f"A line may have at most {MAX_LINE_CHARS} characters.")
        cleaned.append(folded)
    return cleaned


def memory_with_lines(current: str, lines: list[str], *, heading: str = "") -> str:
    """MEMORY.md's text after adding `lines`, one per line, as given (pure).

    Without `heading` they go at the end. With one (`Lịch` or `## Lịch`), they go at the
    end of the section under the first heading whose words are the same (folded: case and
    marks do not matter), before the blank lines that close it; a file without that
    heading gets it, as `## <heading>`, at the end. The current text keeps everything it
    had; a missing final newline is added first so the new lines never join the last old
    one. Raises InvalidInput on bad lines or heading.
    """
    cleaned = clean_memory_lines(lines)
    wanted = clean_heading(heading)
    base = current or ""
    if base and not base.endswith("\n"):
        base += "\n"
    added = [f"{line}\n" for line in cleaned]
    if not wanted:
        return base + "".join(added)
    old = base.splitlines(keepends=True)
    end = section_end(old, wanted)
    if end is None:
        gap = "\n" if old and old[-1].strip() else ""
        return base + gap + f"## {wanted}\n\n" + "".join(added)
    return "".join(old[:end] + added + old[end:])


def section_end(lines: list[str], heading: str) -> int | None:
    """Where lines added under `heading` go: after the last non-blank line of the section
    the first heading of those words opens (up to the next heading of the same or a higher
    level); None when the file has no such heading."""
    key = fold(heading)
    for index, line in enumerate(lines):
        if fold(heading_text(line)) != key or not key:
            continue
        level = heading_level(line)
        stop = len(lines)
        for later in range(index + 1, len(lines)):
            if 0 < heading_level(lines[later]) <= level:
                stop = later
                break
        last = index
        for inside in range(index + 1, stop):
            if lines[inside].strip():
                last = inside
        if last == index:  # an empty section: a blank line after the heading
            return index + 1 + (1 if index + 1 < stop and not lines[index + 1].strip() else 0)
        return last + 1
    return None


def append_memory_lines(agent: Agent, lines: list[str], *, heading: str = "") -> str:
    """Add lines to MEMORY.md now (a person is present) and return the new body: at the end,
    or under `heading` (memory_with_lines).

    Read-modify-write under the file's lock, so a concurrent append or rewrite is never
    lost."""
    cleaned = clean_memory_lines(lines)
    rel = memory_path(agent)
    with workspace.locked(rel):
        body = memory_with_lines(workspace.read(rel) or "", cleaned, heading=heading)
        workspace.write(rel, body)
    return body


# --- daily notes -----------------------------------------------------------------------


def note_path(agent: Agent, name: str) -> str:
    """`memory/<name>.md` inside the agent dir. `name` with or without `.md`; anything that
    is not `YYYY-MM-DD[-suffix]` with a real date is InvalidInput (422)."""
    parse_note_name(name)
    stem = name[:-3] if name.endswith(".md") else name
    return agent.path(f"{NOTES_DIR}/{stem}.md")


def note_file_name(name: str) -> str:
    """The validated file name of a note: "2026-11-30" → "2026-11-30.md". Odd but real
    names (`2026-01-05_1030`) pass too; creating one is refused elsewhere."""
    if note_day(name) is None:
        parse_note_name(name)  # the refusal, with its message
    return name if name.endswith(".md") else f"{name}.md"


def existing_note_path(agent: Agent, name: str) -> str:
    """The path of a note to read or edit. A name of the §3 form always; an odd but real
    name (`2026-03-22-zhiji-E001`, `2026-01-05_1030`, see memory.text.note_day) only when
    that file exists — notes are only ever created under the plain form. Anything else is
    InvalidInput (422)."""
    try:
        return note_path(agent, name)
    except InvalidInput:
        if note_day(name) is not None:
            rel = agent.path(f"{NOTES_DIR}/{note_file_name(name)}")
            if workspace.exists(rel):
                return rel
        raise


def read_note_with_hash(agent: Agent, name: str) -> workspace.FileText | None:
    """A note as an editor opens it (as read_memory_with_hash), by any name
    existing_note_path takes; None when there is no such note. InvalidInput (422) for a
    name that is not a note's, PathRefused for a path the workspace refuses."""
    return workspace.read_file_locked(existing_note_path(agent, name))


def note_exists(agent: Agent, name: str) -> bool:
    """Whether `memory/<name>.md` is a note of this agent on disk (any form of name)."""
    try:
        return workspace.exists(existing_note_path(agent, name))
    except (InvalidInput, PathRefused):
        return False


def plain_note_name(day: dt.date) -> str:
    return f"{day.isoformat()}.md"


def _note_day(name: str) -> dt.date | None:
    """The day of a note's file name (memory.text.note_day: `2026-11-30.md`,
    `2026-11-30-1030.md`, `2026-01-05_1030.md`), None for any other name."""
    parsed = note_day(name) if name.endswith(".md") else None
    return parsed[0] if parsed else None


def _sorted_names(agent: Agent) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the daily notes' names without `.md`, newest first; the other Markdown files'
    names, by name) of the agent's `memory/` (memory.reading.note_names)."""
    return reading.note_names(agent)


def day_note_names(agent: Agent, days: list[dt.date]) -> list[str]:
    """The file names of every note of these days — plain, session (`2026-05-20-0821.md`),
    slugged (`2026-05-20-evening.md`) and the odd but real names (`2026-05-20_1030.md`) —
    from one listing of `memory/` (no stat, no read): the days in the order given, and
    within a day the plain note first (what memory_save appends to: the day's running
    log), then the others newest first (by name, descending). SPEC §4.2."""
    wanted = {day.isoformat(): index for index, day in enumerate(days)}
    found: list[tuple[int, bool, str]] = []
    for stem in _sorted_names(agent)[0]:  # newest first, real days only
        index = wanted.get(stem[:10])
        if index is not None:
            found.append((index, len(stem) != 10, stem))
    # A stable sort keeps the listing's newest-first order within (day, plain first).
    found.sort(key=lambda item: (item[0], item[1]))
    return [f"{stem}.md" for _index, _suffixed, stem in found]


def _infos(agent: Agent, names: list[str]) -> list[NoteInfo]:
    """NoteInfo (day, size, modified) of these files of `memory/`: one lstat each; a
    file gone since the listing is left out."""
    return [
        NoteInfo(
            _note_day(name := info.path.rsplit("/", 1)[-1]),
            name,
            info.size,
            dt.datetime.fromtimestamp(info.mtime, tz=dt.UTC),
        )
        for info in workspace.file_infos(agent.path(NOTES_DIR), names)
    ]


def notes_listing(
    agent: Agent, *, offset: int = 0, limit: int | None = None, include_other: bool = False
) -> Listing[NoteInfo]:
    """One page of an agent's daily notes (of its `memory/`, not its subdirectories),
    newest first — by day, then by name without `.md` descending (so
    `2026-11-30-1030.md` comes before `2026-11-30.md`) — and how many there are.

    With include_other, hand-kept Markdown files (`facebook-books.md`) follow the notes,
    by name, with `day` None. They are memory (searched, never deleted) but not notes.

    Costs one listing of the directory (names only) and one lstat per item of the page,
    whatever the number of notes. InvalidInput for a negative offset or limit.
    """
    stems, others = _sorted_names(agent)
    if not include_other:
        others = []
    window = range(len(stems) + len(others))[page_bounds(offset, limit)]
    names = [
        f"{stems[index]}.md" if index < len(stems) else others[index - len(stems)]
        for index in window
    ]
    return Listing(_infos(agent, names), len(stems) + len(others))


def list_notes(agent: Agent, *, include_other: bool = False) -> list[NoteInfo]:
    """Every note (see notes_listing), with its size and date — a stat per file: prefer
    notes_listing with a limit, or count_notes, where a page or a count is enough."""
    return notes_listing(agent, include_other=include_other).items


def count_notes(agent: Agent, *, include_other: bool = False) -> int:
    """How many notes notes_listing would list: a stat of the directory (its names are
    listed again only when it changed), no stat of a note."""
    stems, others = _sorted_names(agent)
    return len(stems) + (len(others) if include_other else 0)


def read_note(agent: Agent, name: str) -> str:
    """The text of one note; NotFound (404) when it does not exist, InvalidInput (422)
    for a name that is not a note name."""
    text = workspace.read(existing_note_path(agent, name))
    if text is None:
        raise NotFound(f"No note {note_file_name(name)} for agent {agent.id}.")
    return text


def write_note(agent: Agent, name: str, body: str, *, base_hash: str | None = None) -> bool:
    """Replace (or create) one note atomically, under the note's lock (so it serialises
    with memory_save's appends). With base_hash, Conflict when the note changed since that
    hash was read (a memory_save in between would otherwise be erased). Returns True when
    the note was created."""
    if not isinstance(body, str):
        raise InvalidInput("A note must be text.")
    rel = existing_note_path(agent, name)
    with workspace.locked(rel):
        created = not workspace.exists(rel)
        workspace.write_checked(rel, normalise_newlines(body), base_hash=base_hash)
    return created


@dataclass(frozen=True)
class Saved:
    """What memory_save wrote: the day (and note) it went to, and the line (no newline)."""

    day: dt.date
    name: str  # the note's file name, "YYYY-MM-DD.md"
    line: str


def memory_save(agent: Agent, text: str, *, now: dt.datetime | None = None) -> Saved:
    """Append `- HH:MM <text>` to today's plain note. Returns the day it went to and the
    line, from one reading of the clock, so every interface names the same note even at
    midnight.

    Today and HH:MM are in the owner's time zone. A missing (or empty) note is created
    with the heading `# YYYY-MM-DD` followed by a blank line, exactly once even under
    concurrent writers (workspace.append holds the file lock). Newlines inside `text` fold
    to spaces. Empty or whitespace-only text, or text over MAX_SAVE_CHARS, is InvalidInput
    and writes nothing.
    """
    if not isinstance(text, str):
        raise InvalidInput("`text` must be a string.")
    folded = fold_single_line(text)
    if not folded:
        raise InvalidInput("Nothing to save: `text` is empty.")
    if len(folded) > MAX_SAVE_CHARS:
        raise InvalidInput(f"`text` may have at most {MAX_SAVE_CHARS} characters.")
    moment = local_now(now)
    day = moment.date().isoformat()
    line = f"- {moment:%H:%M} {folded}"
    workspace.append(note_path(agent, day), f"{line}\n", create_with=f"# {day}\n\n")
    return Saved(moment.date(), plain_note_name(moment.date()), line)


NOTES_DAYS = 7  # counted by day: a plain and a suffixed note of one day are one day
NOTES_BUDGET = 40_000  # characters of the whole notes block
MIN_CUT_CHARS = 200  # a day cut to fit keeps at least this much, or is left out


# --- the notes block a nightly run reads (SPEC §8) ---------------------------------------


@dataclass(frozen=True)
class NotesBlock:
    """What a run reads of the daily notes.

    `text`: the block handed to the model (at most NOTES_BUDGET characters); `days`: the
    days included, newest first; `note_names`: the files read, wholly or partly (e.g.
    "2026-11-30.md"); `hashes`: {file name: sha256 of its whole text as read} for those
    files — what a run records, so the next one can tell whether anything is new (judged
    by content: a clone or a sync gives every file a new mtime); `newest_mtime`: the
    newest modification time (epoch seconds) among them, None when there are none;
    `cut`: True when the budget cut a day short or left days out; `unreadable`: notes of
    the window left out because they could not be read as text (bytes that are not
    UTF-8, a symbolic link), each with why.
    """

    text: str
    days: list[dt.date] = field(default_factory=list)
    note_names: list[str] = field(default_factory=list)
    newest_mtime: float | None = None
    cut: bool = False
    hashes: dict[str, str] = field(default_factory=dict)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    since: dt.date | None = None  # no note of an earlier day was read (read_notes_block)

    def left_out(self) -> list[str]:
        """One reason per unreadable note, for a run's reasons (a person reads them)."""
        return [f"left out {NOTES_DIR}/{name}: {why}" for name, why in self.unreadable]


def _note_piece(name: str, text: str) -> tuple[str, str, str]:
    """(heading, fence opening, fence closing) of one note in the block. The note's text
    sits between fence lines longer than any backtick run in it, so its own `##`/`###`
    headings — or a pasted fence — can never pass for the block's separators."""
    mark = fence_mark(text)
    return f"\n### {NOTES_DIR}/{name}\n", f"{mark}markdown\n", f"\n{mark}\n"


def _note_text(body: str) -> str:
    return body.strip("\n").rstrip()


def _day_section(day: dt.date, texts: list[tuple[str, str]]) -> str:
    parts = [f"## {day.isoformat()}\n"]
    for name, body in texts:
        text = _note_text(body)
        heading, opening, closing = _note_piece(name, text)
        parts.append(f"{heading}{opening}{text}{closing}")
    return "".join(parts) + "\n"


def _cut_section(day: dt.date, texts: list[tuple[str, str]], room: int) -> tuple[str, int]:
    """The day's section cut to exactly `room` characters: the notes that fit whole, then
    the start of the next one (its fence closed), then a line saying how many characters
    of the day were left out. Returns (section, how many notes it shows at least partly);
    0 when not even a start of the first note fits."""
    header = f"## {day.isoformat()}\n"
    notes_text = [_note_text(body) for _, body in texts]
    used = len(header)
    shown: list[str] = [header]
    for index, (name, _) in enumerate(texts):
        text = notes_text[index]
        heading, opening, closing = _note_piece(name, text)
        whole = heading + opening + text + closing
        rest = sum(len(t) for t in notes_text[index + 1 :])
        if not rest and used + len(whole) <= room:
            return "".join(shown) + whole, len(texts)
        if rest and used + len(whole) + len(_left_out_marker(rest)) <= room:
            shown.append(whole)
            used += len(whole)
            continue
        # This note does not fit whole (with the marker the cut needs): keep its start.
        frame = len(heading) + len(opening) + len(closing)
        left_out = len(text) + rest
        while True:  # the marker's length depends on its number: settle it
            kept = min(room - used - frame - len(_left_out_marker(left_out)), len(text))
            if kept <= 0 or len(text) - kept + rest == left_out:
                break
            left_out = len(text) - kept + rest
        if kept <= 0:
            if index == 0:
                return "", 0
            return "".join(shown) + _left_out_marker(len(text) + rest), index
        piece = heading + opening + text[:kept] + closing
        return "".join(shown) + piece + _left_out_marker(left_out), index + 1
    return "".join(shown) + "\n", len(texts)


def _left_out_marker(left_out: int) -> str:
    return f"[… {left_out} more characters of this day left out]\n"


def read_notes_block(
    agent: Agent,
    *,
    days: int = NOTES_DAYS,
    budget: int = NOTES_BUDGET,
    since: dt.date | None = None,
) -> NotesBlock:
    """Up to `days` days of the agent's daily notes, newest day first, within `budget`
    characters (SPEC §8). Within a day the plain note comes first, then the other notes
    of that day (suffixed, or odd but real names such as `2026-01-05_1030.md`) by name.
    Each note is under its own `### memory/<name>` heading and fenced (`_note_piece`).

    A day that does not fit whole is cut to what is left of the budget, ending in a line
    that says how many characters were left out, and no older day follows (a gap in the
    middle would hide that days are missing); when less than MIN_CUT_CHARS would be left
    it is left out entirely. So the newest day always contributes, even when it alone is
    larger than the budget. With `since`, no note of a day before it is read (the first
    consolidation of an existing workspace: memory.jobs.consolidate.first_window).
    """
    window: list[str] = []
    seen_days: set[str] = set()
    oldest = since.isoformat() if since is not None else ""
    for stem in _sorted_names(agent)[0]:  # newest day first
        if stem[:10] < oldest:
            break  # every later name is of an earlier day
        if stem[:10] not in seen_days:
            if len(seen_days) == days:
                break  # older days are beyond the window
            seen_days.add(stem[:10])
        window.append(f"{stem}.md")
    by_day: dict[dt.date, list[NoteInfo]] = {}
    for info in _infos(agent, window):
        by_day.setdefault(info.day, []).append(info)

    text = ""
    included_days: list[dt.date] = []
    names: list[str] = []
    hashes: dict[str, str] = {}
    newest: float | None = None
    cut = False
    unreadable: list[tuple[str, str]] = []
    for day in sorted(by_day, reverse=True):
        infos = sorted(
            by_day[day], key=lambda info: (info.name != f"{day.isoformat()}.md", info.name)
        )
        texts = []
        for info in infos:
            # The name came from the listing of memory/ (no separator, no link): read it
            # as it is, whatever form of name it has.
            try:
                found = workspace.read_file(agent.path(f"{NOTES_DIR}/{info.name}"))
            except PathRefused as exc:
                unreadable.append((info.name, exc.message))
                continue
            if found is None:
                continue
            if found.invalid_utf8:
                # The model would read U+FFFD and might rewrite it into MEMORY.md: the
                # run goes on without this note and says so (SPEC §8).
                unreadable.append((info.name, "it has bytes that are not UTF-8 text"))
                continue
            texts.append((info, found.text))
        if not texts:
            continue
        pairs = [(info.name, body) for info, body in texts]
        section = _day_section(day, pairs)
        room = budget - len(text)
        shown_count = len(texts)
        if len(section) > room:
            cut = True
            if room < MIN_CUT_CHARS:
                break
            section, shown_count = _cut_section(day, pairs, room)
            if not shown_count:
                break
        text += section
        included_days.append(day)
        for info, body in texts[:shown_count]:
            names.append(info.name)
            hashes[info.name] = workspace.hash_text(body)
            mtime = info.modified.timestamp()
            newest = mtime if newest is None else max(newest, mtime)
        if cut:
            break
    for name, why in unreadable:
        log.warning("notes block of %s: left out %s: %s", agent.id, name, why)
    return NotesBlock(text, included_days, names, newest, cut, hashes, unreadable, since)


def write_memory_file(agent: Agent, rel: str, body: str, *, base_hash: str | None = None) -> None:
    """Replace (or create) a Markdown file below the agent's memory/ that is not a wiki
    page: a daily note or a file a person keeps (SPEC §3). `rel` is relative to the agent
    dir (`memory/...md`) and must be one memory_get can read; wiki pages are refused (they
    are written through the wiki, which keeps their sources and links). With base_hash,
    Conflict when the file changed since. InvalidInput / PathRefused for anything else."""
    if not isinstance(body, str):
        raise InvalidInput("A memory file must be text.")
    if not rel.startswith(f"{NOTES_DIR}/"):
        raise InvalidInput(f"Not a file below memory/: {rel!r}.")
    if rel.startswith(f"{NOTES_DIR}/wiki/"):
        raise InvalidInput("Wiki pages are written with wiki_apply, which keeps their sources.")
    workspace.write_checked(
        reading.resolve_memory_path(agent, rel), normalise_newlines(body), base_hash=base_hash
    )
