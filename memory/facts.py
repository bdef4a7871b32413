"""User scope (SPEC §2): USER.md, one fact per file, and the generated INDEX.md.

No presence rule here (memory.writes applies §5): these functions write at once. Every
fact write or delete and the INDEX.md regeneration that follows it happen under the lock
of INDEX.md, so concurrent writers can never leave an index that misses a fact.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass

from django.conf import settings

from memory import workspace
from memory.clock import today
from memory.errors import InvalidInput, NotFound, PathRefused
from memory.notes import normalise_newlines
from memory.text import (
    dump_frontmatter,
    fold_single_line,
    parse_frontmatter,
    validate_fact_name,
    validate_fact_type,
)

OWNER_USER_PATH = "users/owner/USER.md"
ROOT_USER_PATH = "USER.md"  # where OpenClaw keeps the owner's profile
FACTS_DIR = "users/owner/facts"
INDEX_NAME = "INDEX.md"
INDEX_PATH = f"{FACTS_DIR}/{INDEX_NAME}"
STALE_AFTER_DAYS = 90
MAX_DESCRIPTION_CHARS = 300


@dataclass(frozen=True)
class Fact:
    name: str
    description: str
    type: str
    written_by: str
    source: str
    updated: str  # YYYY-MM-DD as written in the file ("" when missing)
    body: str
    stale: bool
    invalid_utf8: bool = False  # the file has bytes that are not UTF-8 (read as U+FFFD)

    def as_dict(self) -> dict:
        return asdict(self)


# --- USER.md ---------------------------------------------------------------------------


def configured_user_file() -> str:
    """MEMORY_USER_FILE as a workspace-relative path ("" when unset). An absolute path
    inside the home is taken relative to it; anything else (outside the home, not `.md`)
    is PathRefused — the setting names a file of the workspace, never one beside it."""
    value = str(getattr(settings, "MEMORY_USER_FILE", "") or "").strip()
    if not value:
        return ""
    if value.startswith("/"):
        home = str(workspace.root())
        if not value.startswith(home + "/"):
            raise PathRefused(f"MEMORY_USER_FILE={value!r} is not inside MY_AGENT_HOME.")
        value = value[len(home) + 1 :]
    if not value.endswith(".md"):
        raise PathRefused(f"MEMORY_USER_FILE={value!r} is not a Markdown (.md) file.")
    workspace.resolve(value)  # PathRefused for `..`, links and the like
    return value


def user_path() -> str:
    """The file that is the user scope's USER.md (SPEC §1, §2), decided on every call:

    1. MEMORY_USER_FILE, when set (a workspace-relative path), whatever exists;
    2. `users/owner/USER.md` when it exists;
    3. else the root `USER.md` when it exists — where an OpenClaw workspace keeps it;
    4. else `users/owner/USER.md` (where a first save creates it).

    Read, shown, edited, capped and put in every prompt through this one path, so the
    file an OpenClaw workspace already has is the one the owner edits here."""
    configured = configured_user_file()
    if configured:
        return configured
    for candidate in (OWNER_USER_PATH, ROOT_USER_PATH):
        try:
            if workspace.exists(candidate):
                return candidate
        except PathRefused:
            return candidate  # a link there: reading it says why it is refused
    return OWNER_USER_PATH


def read_user() -> str:
    """USER.md, "" when it does not exist."""
    return workspace.read(user_path()) or ""


def write_user(body: str, *, base_hash: str | None = None) -> None:
    """Replace USER.md atomically. The file is stored whole; only the prompt caps it.
    With base_hash, Conflict when USER.md changed since that hash was read."""
    if not isinstance(body, str):
        raise InvalidInput("USER.md must be text.")
    workspace.write_checked(user_path(), normalise_newlines(body), base_hash=base_hash)


def read_index() -> str:
    return workspace.read(INDEX_PATH) or ""


# --- facts -----------------------------------------------------------------------------


def fact_path(name: str) -> str:
    """`users/owner/facts/<name>.md`; InvalidInput (422) for a name that is not a slug."""
    return f"{FACTS_DIR}/{validate_fact_name(name)}.md"


def is_stale(updated: str, *, on: dt.date | None = None) -> bool:
    """More than 90 days between `updated` and today. A missing or unreadable date
    counts as stale: nobody has confirmed the fact."""
    try:
        day = dt.date.fromisoformat(str(updated))
    except ValueError:
        return True
    return ((on or today()) - day).days > STALE_AFTER_DAYS


def _clean_description(description: object) -> str:
    if not isinstance(description, str):
        raise InvalidInput("A fact needs a `description`.")
    # INDEX.md carries it on one line; a newline would break the index.
    cleaned = fold_single_line(description)
    if not cleaned:
        raise InvalidInput("A fact needs a non-empty `description`.")
    if len(cleaned) > MAX_DESCRIPTION_CHARS:
        raise InvalidInput(f"A description may have at most {MAX_DESCRIPTION_CHARS} characters.")
    return cleaned


def _clean_label(value: object, field: str) -> str:
    if not isinstance(value, str) or not fold_single_line(value):
        raise InvalidInput(f"A fact needs `{field}`.")
    value = fold_single_line(value)
    if len(value) > 200:
        raise InvalidInput(f"`{field}` may have at most 200 characters.")
    return value


def render_fact(
    name: str,
    *,
    description: str,
    type: str,
    body: str,
    written_by: str,
    source: str,
    updated: str | None = None,
) -> str:
    """The text of a fact file: YAML frontmatter (name, description, type, written_by,
    source, updated) and the Markdown body. Validates every field (InvalidInput, 422);
    `updated` defaults to today. Pure: writes nothing."""
    validate_fact_name(name)
    validate_fact_type(type)
    if not isinstance(body, str):
        raise InvalidInput("A fact's `body` must be text.")
    if updated is None:
        updated = today().isoformat()
    else:
        try:
            dt.date.fromisoformat(updated)
        except (TypeError, ValueError):
            raise InvalidInput(f"`updated` must be YYYY-MM-DD, not {updated!r}.") from None
    meta = {
        "name": name,
        "description": _clean_description(description),
        "type": type,
        "written_by": _clean_label(written_by, "written_by"),
        "source": _clean_label(source, "source"),
        "updated": updated,
    }
    return dump_frontmatter(meta, normalise_newlines(body))


def parse_fact(name: str, text: str, *, invalid_utf8: bool = False) -> Fact:
    """A Fact from a file's text. The file name is the identity: a `name` in the
    frontmatter that disagrees is ignored. Missing fields read as ""."""
    meta, body = parse_frontmatter(text)
    updated = str(meta.get("updated") or "")
    return Fact(
        name=name,
        description=str(meta.get("description") or ""),
        type=str(meta.get("type") or ""),
        written_by=str(meta.get("written_by") or ""),
        source=str(meta.get("source") or ""),
        updated=updated,
        body=body.strip("\n"),
        stale=is_stale(updated),
        invalid_utf8=invalid_utf8,
    )


def get_fact(name: str) -> Fact | None:
    """The fact called `name`, or None. InvalidInput for a name that is not a slug."""
    found = workspace.read_file(fact_path(name))
    return None if found is None else parse_fact(name, found.text, invalid_utf8=found.invalid_utf8)


def get_fact_or_404(name: str) -> Fact:
    fact = get_fact(name)
    if fact is None:
        raise NotFound(f"No fact {name!r}.")
    return fact


def _fact_names() -> list[str]:
    names = []
    for info in workspace.list_files(FACTS_DIR):
        file_name = info.path.rsplit("/", 1)[-1]
        if file_name == INDEX_NAME:
            continue
        stem = file_name[:-3]
        # A hand-made file whose name is not a slug cannot be addressed as a fact.
        try:
            validate_fact_name(stem)
        except InvalidInput:
            continue
        names.append(stem)
    return sorted(names)


def list_facts() -> list[Fact]:
    """Every fact, sorted by name (files whose names are not slugs are left out)."""
    facts = []
    for name in _fact_names():
        found = workspace.read_file(fact_path(name))
        if found is not None:
            facts.append(parse_fact(name, found.text, invalid_utf8=found.invalid_utf8))
    return facts


def index_text(facts: list[Fact]) -> str:
    """INDEX.md for these facts: `- [<name>](<name>.md) (<type>) — <description>` per
    fact, sorted by name; "" for no facts."""
    lines = [
        f"- [{fact.name}]({fact.name}.md) ({fact.type}) — {fold_single_line(fact.description)}"
        for fact in sorted(facts, key=lambda fact: fact.name)
    ]
    return "".join(f"{line}\n" for line in lines)


def regenerate_index() -> None:
    """Rewrite INDEX.md from the fact files (hand edits are overwritten). With no facts
    left the file is removed: a missing file is simply absent from the prompt."""
    with workspace.guarded(FACTS_DIR):
        text = index_text(list_facts())
        if text:
            if workspace.read(INDEX_PATH) != text:
                workspace.write(INDEX_PATH, text)
        else:
            workspace.delete(INDEX_PATH)


def save_fact(
    name: str,
    *,
    description: str,
    type: str,
    body: str,
    written_by: str,
    source: str,
) -> Fact:
    """Write a fact now (create or replace; `updated` = today) and regenerate INDEX.md.
    Raises InvalidInput before anything is written."""
    text = render_fact(
        name,
        description=description,
        type=type,
        body=body,
        written_by=written_by,
        source=source,
    )
    with workspace.guarded(FACTS_DIR):
        workspace.write(fact_path(name), text)
        regenerate_index()
    return parse_fact(name, text)


def forget_fact(name: str) -> None:
    """Delete a fact and regenerate INDEX.md. NotFound (404) when there is no such fact."""
    rel = fact_path(name)
    with workspace.guarded(FACTS_DIR):
        if not workspace.delete(rel):
            raise NotFound(f"No fact {name!r}.")
        regenerate_index()


def count_facts() -> int:
    """How many facts there are (without reading them)."""
    return len(_fact_names())
