"""memory_get (SPEC §5): read a memory file of one agent, or a shared fact, by the path
memory_search shows, in pages of at most 120 lines / 12,000 characters.

What may be read, by a path relative to the agent dir (facts: relative to the home):

- `MEMORY.md` and `memory/**/*.md` of this agent;
- `users/owner/facts/<name>.md`, a fact (a valid fact name: INDEX.md is not one).

Anything else is PathRefused (422) before a byte is read: `..`, `.` or empty parts,
absolute paths, backslashes, NUL and other control characters, `%` (an encoded path is an
attack or a mistake, never a memory file name), characters NFKC would change beyond
composing them (fullwidth `．` or `／`; an NFD name is its NFC name), hidden parts,
names not ending in `.md`, another agent's files, USER.md and INDEX.md (both are whole in
the prompt already), and any path through a symbolic link (the workspace module refuses
links below the home, as search and the listings skip them).
"""

from __future__ import annotations

import io
import re
import unicodedata

from memory import workspace
from memory.errors import NotFound, PathRefused
from memory.models import Agent
from memory.text import FACT_NAME_RE

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
    if ws_rel == agent.path("MEMORY.md"):
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
    or goes through a symbolic link. Reads nothing.
    """
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
    real_rel = resolve_memory_path(agent, path)
    found = workspace.read_file(real_rel)
    if found is None:
        raise NotFound(f"No such memory file: {path}.")
    text = found.text
    # Said after the page (never before it: line numbers stay the file's).
    bad_bytes = (
        f"[{path} has bytes that are not UTF-8 text; they read as \ufffd]"
        if found.invalid_utf8
        else ""
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


def list_memory_files(agent: Agent) -> list[str]:
    """The paths memory_get can read of this agent's own files, relative to its dir:
    MEMORY.md (when it exists) and every Markdown file below memory/ (notes, hand-kept
    files, wiki pages and reports), sorted. Symlinks and hidden files are left out."""
    paths = ["MEMORY.md"] if workspace.exists(agent.path("MEMORY.md")) else []
    prefix = f"{agent.dir}/" if agent.dir else ""
    for info in workspace.list_files(agent.path("memory"), recursive=True):
        paths.append(info.path[len(prefix) :])
    return paths


def read_whole_memory_file(agent: Agent, path: str) -> str:
    """The whole text of a file memory_get may read (same path rules, no paging): what an
    MCP resource answers. Raises PathRefused (nothing read) or NotFound."""
    text = workspace.read(resolve_memory_path(agent, path))
    if text is None:
        raise NotFound(f"No such memory file: {path}.")
    return text
