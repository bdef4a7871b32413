"""Anthropic's client-side memory tool (`memory_20250818`) on an agent's memory.

Claude sends one command at a time — `view`, `create`, `str_replace`, `insert`, `delete`,
`rename` — on paths below `/memories`, and reads back a text. Here `/memories` is the
agent's dir as memory_get sees it: `/memories/MEMORY.md` and `/memories/memory/…`
(notes, files a person keeps, wiki pages). Nothing else is reachable: the path rules are
memory_get's (reading.resolve_memory_path), so `..`, links, hidden and non-`.md` files,
shared facts and other agents' files are refused before anything is read.

Writes go through the operations and the presence rule (memory.writes):

- MEMORY.md: written at once with a person present; from a job token, the edited text
  becomes a `memory_rewrite` proposal (Claude is told nothing is written yet).
- A note or another file below memory/ (not the wiki): written at once, as memory_save
  and PUT …/notes are; wiki pages are written with wiki_apply, never as raw files.
- `delete` and `rename` are refused: memory files are never deleted or moved by the
  system (SPEC §3); a person does that from the management pages.

Every edit carries the hash of the text it read, so a change made in between (an append
by memory_save) is a Conflict rather than being overwritten.

The answers are the texts Anthropic's reference implementation gives, so Claude reads
them as it was trained to; a refused command raises a DomainError whose message is the
text for the tool result (`is_error`).
"""

from __future__ import annotations

from dataclasses import dataclass

from memory import notes, reading, workspace, writes
from memory.errors import Conflict, InvalidInput, NotFound, PathRefused
from memory.models import Agent

ROOT = "/memories"
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
_NUMBER_WIDTH = 6


@dataclass(frozen=True)
class Answer:
    text: str
    proposal: object | None = None  # proposals.models.Proposal


def _relative(path: object) -> str:
    """The agent-dir-relative path of a `/memories/...` path ("" for /memories itself)."""
    if not isinstance(path, str) or not path:
        raise InvalidInput("`path` must be a non-empty string.")
    if path.rstrip("/") == ROOT:
        return ""
    if not path.startswith(f"{ROOT}/"):
        raise InvalidInput(f"Path must start with {ROOT}, got: {path}")
    return path[len(ROOT) + 1 :].rstrip("/")


def _directory(agent: Agent, rel: str) -> list[str] | None:
    """The readable files below a directory (`""` or `memory[/…]`), or None when `rel`
    names no directory of memory files. A directory path that could lead anywhere else
    (`..`, hidden, encoded, backslashes) is PathRefused."""
    parts = rel.split("/") if rel else []
    if any(part in ("", ".", "..") or part.startswith(".") for part in parts) or any(
        char in rel for char in "\\%\0"
    ):
        raise PathRefused(f"Path {rel!r} would escape {ROOT}.")
    files = reading.list_memory_files(agent)
    if rel == "":
        return files
    below = [path for path in files if path.startswith(f"{rel}/")]
    return below or None


def _size(size: int) -> str:
    for unit in ("B", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{size}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return f"{size}B"  # pragma: no cover


def _view_directory(agent: Agent, path: str, rel: str, files: list[str]) -> str:
    base = f"{rel}/" if rel else ""
    sizes: dict[str, int] = {}
    for file in files:
        info = workspace.stat(agent.path(file))
        size = info.size if info else 0
        parts = file[len(base) :].split("/")
        for depth in range(1, min(len(parts), 2) + 1):
            key = "/".join(parts[:depth]) + ("/" if depth < len(parts) else "")
            sizes[key] = sizes.get(key, 0) + size
    total = sum(size for key, size in sizes.items() if "/" not in key.rstrip("/"))
    lines = [f"{_size(total)}\t{path}"]
    lines += [f"{_size(sizes[key])}\t{path.rstrip('/')}/{key}" for key in sorted(sizes)]
    return (
        f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden "
        "items:\n" + "\n".join(lines)
    )


def _numbered(lines: list[str], start: int) -> str:
    return "\n".join(
        f"{str(number).rjust(_NUMBER_WIDTH)}\t{line}" for number, line in enumerate(lines, start)
    )


def _read_file(agent: Agent, path: str, rel: str) -> tuple[str, str]:
    """(text, hash) of a memory file from one read, or the refusal Claude expects."""
    ws_rel = reading.resolve_memory_path(agent, rel)
    if rel.startswith("users/"):  # a fact is readable by memory_get, but not a /memories file
        raise NotFound(f"The path {path} does not exist. Please provide a valid path.")
    found = workspace.read_file_locked(ws_rel)
    if found is None:
        raise NotFound(f"The path {path} does not exist. Please provide a valid path.")
    return found.text, found.hash


def _read_to_edit(agent: Agent, path: str, rel: str) -> tuple[str, str]:
    """_read_file() for an edit. A file with bytes that are not UTF-8 is refused: the
    edit would write U+FFFD where those bytes are, changing more than Claude asked."""
    text, digest = _read_file(agent, path, rel)
    if digest != workspace.hash_text(text):
        raise InvalidInput(
            f"{path} has bytes that are not UTF-8 text (shown as \ufffd); it cannot be edited "
            "here without losing them. Ask the owner to fix the file."
        )
    return text, digest


def view(agent: Agent, path: str, view_range: object = None) -> Answer:
    rel = _relative(path)
    if not rel.endswith(".md"):
        files = _directory(agent, rel)
        if files is None:
            raise NotFound(f"The path {path} does not exist. Please provide a valid path.")
        return Answer(_view_directory(agent, path, rel, files))
    text, _ = _read_file(agent, path, rel)
    lines = text.split("\n")
    start = 1
    if view_range is not None:
        if (
            not isinstance(view_range, list)
            or len(view_range) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
        ):
            raise InvalidInput("`view_range` must be two line numbers, [first, last].")
        first, last = view_range
        start = max(1, first)
        lines = lines[start - 1 :] if last == -1 else lines[start - 1 : last]
    return Answer(f"Here's the content of {path} with line numbers:\n" + _numbered(lines, start))


def _write(agent: Agent, rel: str, text: str, *, base_hash: str, source: str) -> object | None:
    """Write a whole file by the presence rule: the proposal, or None when written."""
    if rel in (notes.MEMORY_FILE, notes.memory_file_name(agent)):
        return writes.write_memory_or_propose(agent, text, source=source, base_hash=base_hash)
    notes.write_memory_file(agent, rel, text, base_hash=base_hash)
    return None


def _proposed(proposal, path: str) -> Answer:
    return Answer(
        f"Proposed for review (proposal #{proposal.pk}): the edit of {path}. Nothing is written "
        "until a person approves it; the file still reads as before.",
        proposal,
    )


def create(agent: Agent, path: str, file_text: object, *, source: str) -> Answer:
    rel = _relative(path)
    if not isinstance(file_text, str):
        raise InvalidInput("`file_text` must be a string.")
    ws_rel = reading.resolve_memory_path(agent, rel)
    if rel.startswith("users/") or rel == "":
        raise InvalidInput(f"Only files below {ROOT}/memory/ can be created: {path}")
    if workspace.exists(ws_rel):
        raise Conflict(f"File {path} already exists")
    proposal = _write(agent, rel, file_text, base_hash=workspace.ABSENT, source=source)
    if proposal is not None:
        return _proposed(proposal, path)
    return Answer(f"File created successfully at: {path}")


def str_replace(
    agent: Agent, path: str, old_str: object, new_str: object, *, source: str
) -> Answer:
    rel = _relative(path)
    if not isinstance(old_str, str) or not old_str or not isinstance(new_str, str):
        raise InvalidInput("`old_str` (not empty) and `new_str` must be strings.")
    text, digest = _read_to_edit(agent, path, rel)
    count = text.count(old_str)
    if count == 0:
        raise InvalidInput(
            f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}."
        )
    if count > 1:
        lines, start = [], 0
        while (found := text.find(old_str, start)) != -1:
            lines.append(text[:found].count("\n") + 1)
            start = found + 1
        raise InvalidInput(
            f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
            f"{', '.join(map(str, lines))}. Please ensure it is unique"
        )
    changed_at = text[: text.find(old_str)].count("\n")
    new_text = text.replace(old_str, new_str)
    proposal = _write(agent, rel, new_text, base_hash=digest, source=source)
    if proposal is not None:
        return _proposed(proposal, path)
    new_lines = new_text.split("\n")
    first = max(0, changed_at - 2)
    snippet = new_lines[first : min(len(new_lines), changed_at + 3)]
    return Answer(
        "The memory file has been edited. Here is the snippet showing the change (with line "
        "numbers):\n" + _numbered(snippet, first + 1)
    )


def insert(
    agent: Agent, path: str, insert_line: object, insert_text: object, *, source: str
) -> Answer:
    rel = _relative(path)
    if not isinstance(insert_line, int) or isinstance(insert_line, bool):
        raise InvalidInput("`insert_line` must be an integer.")
    if not isinstance(insert_text, str):
        raise InvalidInput("`insert_text` must be a string.")
    text, digest = _read_to_edit(agent, path, rel)
    lines = text.splitlines()
    if not 0 <= insert_line <= len(lines):
        raise InvalidInput(
            f"Invalid `insert_line` parameter: {insert_line}. It should be within the range "
            f"[0, {len(lines)}]."
        )
    lines.insert(insert_line, insert_text.rstrip("\n"))
    new_text = "\n".join(lines) + "\n"
    proposal = _write(agent, rel, new_text, base_hash=digest, source=source)
    if proposal is not None:
        return _proposed(proposal, path)
    return Answer(f"The file {path} has been edited.")


_NEVER_REMOVED = (
    "Memory files are never deleted or renamed through this tool: history is kept. Edit the "
    "file instead (str_replace), or ask the owner, who can do it from the management pages."
)


def run_command(agent: Agent, command: object, *, source: str) -> Answer:
    """Carry out one memory-tool command as Claude sends it (a dict with `command`).
    Raises InvalidInput / NotFound / Conflict with the text for Claude's tool result."""
    if not isinstance(command, dict):
        raise InvalidInput("The body must be one memory-tool command (a JSON object).")
    name = command.get("command")
    if name not in COMMANDS:
        raise InvalidInput(f"Unknown command {name!r}: expected one of {', '.join(COMMANDS)}.")
    if name == "view":
        return view(agent, command.get("path"), command.get("view_range"))
    if name == "create":
        return create(agent, command.get("path"), command.get("file_text"), source=source)
    if name == "str_replace":
        return str_replace(
            agent,
            command.get("path"),
            command.get("old_str"),
            command.get("new_str"),
            source=source,
        )
    if name == "insert":
        return insert(
            agent,
            command.get("path"),
            command.get("insert_line"),
            command.get("insert_text"),
            source=source,
        )
    # delete / rename: check the paths first, so a traversal is refused as one.
    for key in ("path", "old_path", "new_path"):
        if key in command:
            _relative(command[key])
    raise InvalidInput(_NEVER_REMOVED)
