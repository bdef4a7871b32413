"""memory_get (SPEC §5): read a memory file of one agent, or a shared fact, by the path
memory_search shows, in pages of at most 120 lines / 12,000 characters.

What may be read, by a path relative to the agent dir (facts: relative to the home):

- `MEMORY.md` (or `memory.md`, where that stands for it) and `memory/**/*.md` of this
  agent;
- `users/owner/facts/<name>.md`, a fact (a valid fact name: INDEX.md is not one);
- `extra/<name>/...md` / `extra/<name>.md`, a file of the extra paths
  (MEMORY_EXTRA_PATHS, as OpenClaw's memorySearch.extraPaths): read-only, outside the
  workspace, the same shape rules, symlinks refused (memory.workspace.read_extra).

Anything else is PathRefused (422) before a byte is read: `..`, `.` or empty parts,
absolute paths, backslashes, NUL and other control characters, `%` (an encoded path is an
attack or a mistake, never a memory file name), characters NFKC would change beyond
composing them (fullwidth `．` or `／`; an NFD name is its NFC name), hidden parts,
names not ending in `.md`, another agent's files, USER.md and INDEX.md (both are whole in
the prompt already), and any path through a symbolic link (the workspace module refuses
links below the home, as search and the listings skip them).
"""

from __future__ import annotations

import bisect
import datetime as dt
import io
import re
import unicodedata
from dataclasses import dataclass

from memory import agents, workspace
from memory.errors import NotFound, PathRefused
from memory.listing import Listing, page_bounds
from memory.models import Agent
from memory.text import FACT_NAME_RE, LOOSE_NOTE_NAME_RE, note_day

MAX_LINES = 120
MAX_LINES_PER_CALL = 5000  # the most `lines` one call may ask for
MAX_CHARS = 12_000
FACTS_PREFIX = "users/owner/facts/"

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _check_shape(path: object) -> str:
    if not isinstance(path, str) or not path:
        raise PathRefused("A path is required.")
    if _CONTROL.search(path):
        raise PathRefused("The path contains a control character.")
    if "%" in path:
        raise PathRefused(f"Paths are not URL-encoded: {path!r}.")
    # One spelling in, the file out: a decomposed name (NFD, as macOS writes it) is the
    # same name as the composed one; only compatibility forms (fullwidth `．`) are refused.
    composed = unicodedata.normalize("NFC", path)
    if unicodedata.normalize("NFKC", path) != composed:
        raise PathRefused(f"The path has characters that are not plain: {path!r}.")
    path = composed
    if "\\" in path or path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        raise PathRefused(
            f"Use a path relative to your agent dir, as memory_search shows it: {path!r}."
        )
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise PathRefused(f"A path may not contain empty, '.' or '..' parts: {path!r}.")
    if any(part.startswith(".") for part in parts):
        raise PathRefused(f"Hidden files are not memory: {path!r}.")
    if not path.endswith(".md"):
        raise PathRefused(f"Only Markdown (.md) memory files can be read: {path!r}.")
    return path


def _is_fact(ws_rel: str) -> bool:
    if not ws_rel.startswith(FACTS_PREFIX):
        return False
    name = ws_rel[len(FACTS_PREFIX) : -len(".md")]
    return len(name) <= 64 and FACT_NAME_RE.fullmatch(name) is not None


def _may_read(agent: Agent, ws_rel: str) -> bool:
    """Whether a workspace-relative path is one this agent may read."""
    if _is_fact(ws_rel):
        return True
    if ws_rel == agents.memory_file(agent):
        return True
    return ws_rel.startswith(agent.path("memory") + "/") and ws_rel.endswith(".md")


def _workspace_path(agent: Agent, path: str) -> str:
    """The workspace-relative path of an agent-visible path, or PathRefused."""
    _check_shape(path)
    if path.startswith(FACTS_PREFIX):
        if not _is_fact(path):
            raise PathRefused(
                f"Not a fact: {path!r}. Facts are users/owner/facts/<name>.md; the INDEX "
                "is already in your prompt."
            )
        return path
    if path == "users/owner/USER.md":
        raise PathRefused("USER.md is already in your prompt.")
    if path == agents.MEMORY_FILE:
        # The long-term file by its usual name, whichever spelling this workspace uses.
        return agents.memory_file(agent)
    ws_rel = agent.path(path)
    if not _may_read(agent, ws_rel):
        raise PathRefused(
            f"Not a memory file of yours: {path!r}. Readable: MEMORY.md, memory/<...>.md "
            "and users/owner/facts/<name>.md."
        )
    return ws_rel


def resolve_memory_path(agent: Agent, path: str) -> str:
    """The workspace-relative path memory_get reads for `path`.

    Raises PathRefused when the path is not a memory file of this agent or a shared fact,
    or goes through a symbolic link, and for the read-only extra paths (`extra/...`: they
    are outside the workspace and never written). Reads nothing.
    """
    if workspace.is_extra_path(path):
        raise PathRefused(f"{path} is an extra path: read-only, outside the workspace.")
    ws_rel = _workspace_path(agent, path)
    workspace.resolve(ws_rel)
    return ws_rel


def read_memory_file(
    agent: Agent, path: str, *, from_line: int | None = None, lines: int | None = None
) -> str:
    """The text memory_get returns: lines `from_line` (1-based, default 1) on.

    With `lines`, exactly that many lines (fewer at the end of the file). Without, at most
    MAX_LINES lines and MAX_CHARS characters, followed by a hint of the from_line to
    continue from when the file goes on. Raises PathRefused (nothing read) or NotFound.
    """
    found = _read_found(agent, path)
    if found is None:
        raise NotFound(f"No such memory file: {path}.")
    text, invalid_utf8 = found
    # Said after the page (never before it: line numbers stay the file's).
    bad_bytes = (
        f"[{path} has bytes that are not UTF-8 text; they read as \ufffd]" if invalid_utf8 else ""
    )
    # Lines are "\n"-separated exactly as search numbers them, so from_line=N reads the
    # line a `[path:N]` hit names (str.splitlines would also split on U+2028, NEL…).
    all_lines = io.StringIO(text).readlines()  # splits on "\n" only
    total = len(all_lines)
    start = from_line or 1
    if total == 0:
        return f"[{path} is empty]"
    if start > total:
        return f"[{path} has {total} lines; there is nothing from line {start}]"
    if lines is not None:
        return "".join(all_lines[start - 1 : start - 1 + lines])
    page = _page(all_lines, start, total)
    if bad_bytes:
        page = (page if page.endswith("\n") else page + "\n") + bad_bytes
    return page


def _page(all_lines: list[str], start: int, total: int) -> str:
    """At most MAX_LINES lines / MAX_CHARS characters from line `start`, with the hint of
    where to go on."""
    chunk: list[str] = []
    size = 0
    cut_line = False
    for line in all_lines[start - 1 : start - 1 + MAX_LINES]:
        if size + len(line) > MAX_CHARS:
            if not chunk:
                # One line longer than the page: show its start, say how to get it whole.
                chunk.append(line[:MAX_CHARS])
                cut_line = True
            break
        chunk.append(line)
        size += len(line)
    next_line = start + len(chunk)
    body = "".join(chunk)
    if cut_line:
        body += (
            f"\n[… line {start} is longer than {MAX_CHARS:,} characters: call memory_get "
            f"with from_line={start}, lines=1 for all of it"
        )
        return body + (f"; more: from_line={next_line}]" if next_line <= total else "]")
    if next_line <= total:
        if not body.endswith("\n"):
            body += "\n"
        body += f"[… more: call memory_get with from_line={next_line}]"
    return body


def _read_found(agent: Agent, path: str) -> tuple[str, bool] | None:
    """(text, whether it had bytes that are not UTF-8) of a path memory_get may read: the
    agent's memory file, a fact, or a file of the extra paths (MEMORY_EXTRA_PATHS, shown
    as `extra/...`). None when missing."""
    if workspace.is_extra_path(path):
        _check_shape(path)
        text = workspace.read_extra(path)
        return None if text is None else (text, "\ufffd" in text)
    found = workspace.read_file(resolve_memory_path(agent, path))
    return None if found is None else (found.text, found.invalid_utf8)


def _read_text(agent: Agent, path: str) -> str | None:
    """The text of a path memory_get may read (see _read_found). None when missing."""
    found = _read_found(agent, path)
    return None if found is None else found[0]


def list_extra_files() -> list[str]:
    """The shown paths (`extra/...`) of every Markdown file of the extra paths, sorted:
    read by memory_search and memory_get, never written."""
    return sorted(scanned.path for scanned in workspace.scan_extra())


def list_memory_files(agent: Agent) -> list[str]:
    """The paths memory_get can read of this agent's own files, relative to its dir:
    MEMORY.md (when it exists) and every Markdown file below memory/ (notes, hand-kept
    files, wiki pages and reports), sorted. Symlinks and hidden files are left out."""
    name = agents.memory_file_name(agent)
    paths = [name] if workspace.exists(agent.path(name)) else []
    prefix = f"{agent.dir}/" if agent.dir else ""
    for info in workspace.list_files(agent.path("memory"), recursive=True):
        paths.append(info.path[len(prefix) :])
    return paths


def read_whole_memory_file(agent: Agent, path: str) -> str:
    """The whole text of a file memory_get may read (same path rules, no paging): what an
    MCP resource answers. Raises PathRefused (nothing read) or NotFound."""
    text = _read_text(agent, path)
    if text is None:
        raise NotFound(f"No such memory file: {path}.")
    return text


# --- every file an agent's memory holds (SPEC §3) -------------------------------------

KINDS = ("memory", "note", "file", "wiki", "extra")


@dataclass(frozen=True)
class MemoryFile:
    """One Markdown file of an agent's memory, by the path memory_get reads it with.

    `kind`: "memory" (MEMORY.md, or memory.md standing for it), "note" (a note of its day
    directly in memory/, `day` set), "file" (any other file a person keeps in memory/,
    subfolders included), "wiki" (a page or report of the vault in memory/wiki/, written
    through the wiki), "extra" (a file of the extra paths: read-only). `editable`: whether
    a whole-file edit may replace it (memory.notes.write_memory_file; MEMORY.md has its
    own edit, wiki pages theirs)."""

    path: str
    kind: str
    day: dt.date | None
    size: int
    modified: dt.datetime  # aware, UTC
    editable: bool

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "kind": self.kind,
            "day": self.day.isoformat() if self.day else None,
            "size": self.size,
            "modified": self.modified,
            "editable": self.editable,
        }


def kind_of(path: str) -> tuple[str, dt.date | None]:
    if path.startswith("memory/wiki/"):
        return "wiki", None
    rest = path[len("memory/") :]
    if "/" not in rest:
        parsed = note_day(rest)
        if parsed is not None:
            return "note", parsed[0]
    return "file", None


def _when(mtime: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(mtime, tz=dt.UTC)


def note_names(agent: Agent) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the daily notes' names without `.md`, newest first; the other Markdown files'
    names, by name) of the agent's `memory/`, from one listing of the directory — no
    stat, no read — kept while the directory is unchanged (workspace.from_names).

    Newest first is by day, then by name without `.md` descending, which is simply the
    names without `.md` descending: a note's name starts with its ISO day."""
    return workspace.from_names(agent.path("memory"), "notes", _sort_names, _resort_names)


def _sort_names(listed: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    stems: list[str] = []
    others: list[str] = []
    shaped = LOOSE_NOTE_NAME_RE.fullmatch  # note_day's names, checked without a call each
    for name in listed:
        if shaped(name, 0, len(name) - 3):  # list_names gives names ending in .md
            stems.append(name[:-3])
        else:
            others.append(name)
    stems.sort(reverse=True)
    from_iso = dt.date.fromisoformat
    notes = []
    for stem in stems:
        try:
            from_iso(stem[:10])
        except ValueError:  # shaped like a date, but not one (2026-02-30)
            others.append(f"{stem}.md")
            continue
        notes.append(stem)
    others.sort()
    return tuple(notes), tuple(others)


def _resort_names(
    sorted_names: tuple[tuple[str, ...], tuple[str, ...]],
    added: frozenset[str],
    removed: frozenset[str],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """_sort_names of the listing with `added` and `removed` changed: the few names that
    came or went put in or taken out where they belong (bisect), the rest kept."""
    stems, others = sorted_names
    new_notes, new_others = _sort_names(sorted(added))
    gone_notes, gone_others = _sort_names(sorted(removed))
    # Notes are kept newest first: bisect over the names turned around.
    ascending = list(reversed(stems))
    for stem in gone_notes:
        at = bisect.bisect_left(ascending, stem)
        if at < len(ascending) and ascending[at] == stem:
            del ascending[at]
    for stem in new_notes:
        bisect.insort(ascending, stem)
    kept_others = list(others)
    for name in gone_others:
        at = bisect.bisect_left(kept_others, name)
        if at < len(kept_others) and kept_others[at] == name:
            del kept_others[at]
    for name in new_others:
        bisect.insort(kept_others, name)
    return tuple(reversed(ascending)), tuple(kept_others)


def memory_files(agent: Agent, *, include_extra: bool = True) -> list[MemoryFile]:
    """Every Markdown file memory_get can read of this agent's memory (memory_files_listing
    without a limit)."""
    return memory_files_listing(agent, include_extra=include_extra)[0].items


def memory_files_listing(
    agent: Agent, *, offset: int = 0, limit: int | None = None, include_extra: bool = True
) -> tuple[Listing[MemoryFile], dict[str, int]]:
    """One page of every Markdown file memory_get can read of this agent's memory, how
    many there are, and how many of each kind: its long-term file, every `.md` below
    memory/ (notes, hand-kept files in any subfolder, wiki pages), and, with
    include_extra, the files of the extra paths. Order: the long-term file, notes newest
    first, other files by path, wiki pages by path, extra files by path. Symlinks and
    hidden files are left out, as search leaves them out.

    The notes — what grows with the years — cost what their page costs (their names from
    memory.notes, a stat per note shown); the other files are listed whole. InvalidInput
    for a negative offset or limit."""
    head: list[MemoryFile] = []
    name = agents.memory_file_name(agent)
    info = workspace.stat(agent.path(name))
    if info is not None:
        head.append(MemoryFile(name, "memory", None, info.size, _when(info.mtime), False))
    stems, top_others = note_names(agent)
    rest = _other_files(agent, top_others, include_extra=include_extra)
    counts = {kind: 0 for kind in KINDS}
    counts["memory"], counts["note"] = len(head), len(stems)
    for row in rest:
        counts[row.kind] += 1
    total = len(head) + len(stems) + len(rest)
    window = range(total)[page_bounds(offset, limit)]
    first_note, after_notes = len(head), len(head) + len(stems)
    note_window = range(max(window.start, first_note), min(window.stop, after_notes))
    items = [head[i] for i in window if i < first_note]
    prefix = f"{agent.dir}/" if agent.dir else ""
    for info in workspace.file_infos(
        agent.path("memory"), [f"{stems[i - first_note]}.md" for i in note_window]
    ):
        path = info.path[len(prefix) :]
        kind, day = kind_of(path)
        items.append(MemoryFile(path, kind, day, info.size, _when(info.mtime), True))
    items += [rest[i - after_notes] for i in window if i >= after_notes]
    return Listing(items, total), counts


def _other_files(agent: Agent, top_others: tuple[str, ...], *, include_extra: bool) -> list:
    """The files of memory_files_listing after the notes: hand-kept files (directly in
    memory/ and in its subfolders) by path, wiki pages by path, extra files by path."""
    prefix = f"{agent.dir}/" if agent.dir else ""
    rows: list[MemoryFile] = []
    found = workspace.file_infos(agent.path("memory"), list(top_others))
    for sub in workspace.list_dirs(agent.path("memory")):
        found += workspace.list_files(agent.path(f"memory/{sub}"), recursive=True)
    for info in found:
        path = info.path[len(prefix) :]
        kind, day = kind_of(path)
        rows.append(MemoryFile(path, kind, day, info.size, _when(info.mtime), kind != "wiki"))
    ordered = sorted((row for row in rows if row.kind != "wiki"), key=lambda row: row.path)
    ordered += sorted((row for row in rows if row.kind == "wiki"), key=lambda row: row.path)
    if include_extra:
        extras = sorted(workspace.scan_extra(), key=lambda scanned: scanned.path)
        ordered += [
            MemoryFile(s.path, "extra", None, s.size, _when(s.mtime_ns / 1e9), False)
            for s in extras
        ]
    return ordered


def read_with_hash(agent: Agent, path: str) -> tuple[str, str]:
    """(text, hash of exactly that text) of a file memory_get may read, from one read: what
    an editor opens and sends back as `base_hash`. PathRefused / NotFound as memory_get."""
    if workspace.is_extra_path(path):
        text = _read_text(agent, path)
        body_hash = workspace.hash_text(text)
    else:
        text, body_hash = workspace.read_with_hash(resolve_memory_path(agent, path))
    if text is None:
        raise NotFound(f"No such memory file: {path}.")
    return text, body_hash


def file_kind(agent: Agent, path: str) -> tuple[str, bool]:
    """(kind, editable) of a path memory_get may read (see memory.reading.MemoryFile)."""
    if workspace.is_extra_path(path):
        return "extra", False
    if path in (agents.MEMORY_FILE, agents.memory_file_name(agent)):
        return "memory", False
    if path.startswith("users/"):
        return "fact", False
    kind, _day = kind_of(path)
    return kind, kind != "wiki"
