"""User scope (SPEC §2): USER.md, one fact per file, and the generated INDEX.md.

No presence rule here (memory.writes applies §5): these functions write at once. Every
fact write or delete and the INDEX.md update that follows it happen under the lock
of INDEX.md, so concurrent writers can never leave an index that misses a fact.
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import json
import time
from dataclasses import asdict, dataclass

from django.conf import settings

from memory import workspace
from memory.clock import today
from memory.errors import InvalidInput, NotFound, PathRefused
from memory.listing import Listing, page_bounds
from memory.notes import normalise_newlines
from memory.text import (
    FACT_NAME_RE,
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
    value = settings.MEMORY_USER_FILE.strip()
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


def read_user_with_hash() -> workspace.FileText:
    """USER.md as an editor opens it: the text, the hash of exactly that text (one read
    under the file's shared lock: a write with it as `base_hash` is a Conflict over
    anything written since), whether it had bytes that are not UTF-8. A missing file is
    `workspace.NO_FILE` (no text, the hash ABSENT)."""
    return workspace.read_file_locked(user_path()) or workspace.NO_FILE


def write_user(body: str, *, base_hash: str | None = None) -> None:
    """Replace USER.md atomically. The file is stored whole; only the prompt caps it.
    With base_hash, Conflict when USER.md changed since that hash was read."""
    if not isinstance(body, str):
        raise InvalidInput("USER.md must be text.")
    workspace.write_checked(user_path(), normalise_newlines(body), base_hash=base_hash)


def read_index() -> str:
    """INDEX.md as the facts on disk make it (SPEC §2). The file, unless a fact was added,
    replaced or removed since INDEX.md was last written (the facts directory's stamp
    differs from the one kept with it): a write killed between a fact and its line — an
    approval killed after its commit, before the index followed. Then the index those
    facts give, computed; nothing is written (reads never write): the next fact write, or
    the worker's upkeep (`heal_index`), writes it."""
    state = _read_index_state()
    if state is None or list(workspace.stamp(FACTS_DIR) or ()) == state["directory"]:
        return workspace.read(INDEX_PATH) or ""
    new, _ = _plan_index({})
    return new.decode("utf-8", errors="replace")


def heal_index() -> bool:
    """Write INDEX.md when the facts changed since it was written (see read_index); True
    when it was. The worker's upkeep runs it (memory.jobs.tasks.upkeep_task)."""
    state = _read_index_state()
    if state is not None and list(workspace.stamp(FACTS_DIR) or ()) == state["directory"]:
        return False
    update_index()
    return True


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


def _fact_names() -> tuple[str, ...]:
    """The names of every fact, sorted, from one listing of the directory (no stat, no
    read), kept while the directory is unchanged (workspace.from_names). A hand-made file
    whose name is not a slug cannot be addressed as a fact."""
    return workspace.from_names(FACTS_DIR, "facts", _sorted_fact_names, _resorted_fact_names)


def _sorted_fact_names(listed: list[str]) -> tuple[str, ...]:
    names = []
    for file_name in listed:
        stem = file_name[:-3]
        if file_name != INDEX_NAME and len(stem) <= 64 and FACT_NAME_RE.fullmatch(stem):
            names.append(stem)
    return tuple(sorted(names))


def _resorted_fact_names(
    names: tuple[str, ...], added: frozenset[str], removed: frozenset[str]
) -> tuple[str, ...]:
    """_sorted_fact_names of the listing with `added` and `removed` changed, by bisect."""
    kept = list(names)
    for name in _sorted_fact_names(list(removed)):
        at = bisect.bisect_left(kept, name)
        if at < len(kept) and kept[at] == name:
            del kept[at]
    for name in _sorted_fact_names(list(added)):
        bisect.insort(kept, name)
    return tuple(kept)


def list_facts() -> list[Fact]:
    """Every fact, sorted by name (files whose names are not slugs are left out)."""
    return facts_listing().items


def facts_listing(*, offset: int = 0, limit: int | None = None) -> Listing[Fact]:
    """One page of the facts, sorted by name, and how many there are: the names come
    from one listing of the directory, and only the page's files are read. InvalidInput
    for a negative offset or limit."""
    names = _fact_names()
    facts = []
    for name in names[page_bounds(offset, limit)]:
        found = workspace.read_file(fact_path(name))
        if found is not None:  # deleted since the listing
            facts.append(parse_fact(name, found.text, invalid_utf8=found.invalid_utf8))
    return Listing(facts, len(names))


def index_line(fact: Fact) -> str:
    """The INDEX.md line of one fact (no newline)."""
    return f"- [{fact.name}]({fact.name}.md) ({fact.type}) — {fold_single_line(fact.description)}"


def index_text(facts: list[Fact]) -> str:
    """INDEX.md for these facts: `- [<name>](<name>.md) (<type>) — <description>` per
    fact, sorted by name; "" for no facts."""
    return "".join(f"{index_line(fact)}\n" for fact in sorted(facts, key=lambda fact: fact.name))


# --- INDEX.md, kept up to date line by line ---------------------------------------------
#
# Every write of a fact changes one line of INDEX.md; re-reading every fact to rewrite it
# would cost seconds at 10,000 facts. So INDEX.md is changed by the lines whose facts
# changed (found by binary search: the lines are sorted by name), and regenerated whole
# whenever it cannot be trusted to match the facts:
#
# - its text is not the text this code last wrote (a hand edit of INDEX.md, a restore, a
#   crash between the two writes): the sha256 of what was written is kept in a state file
#   (`.memory-state/facts-index.json`) and compared with INDEX.md's bytes on every write;
# - a fact file was added, deleted or renamed by hand: the facts directory's stamp
#   (mtime, inode) after the last write is kept too; when it differs, the directory is
#   listed (names only) and the missing or extra lines are added or removed;
# - a fact file was edited by hand in place (which leaves the directory alone): every fact
#   file is lstat'ed and those whose ctime (which no edit can set back) is not older than
#   the previous such check are read again, in the volume's own clock, less a second for
#   clock ticks and writes in progress — by the worker's supervisor every half
#   MEMORY_RECONCILE_SECONDS (reconcile_index), and by a write when that is overdue.
#
# Writes through the app (save_fact, forget_fact, update_index after a proposal) hold
# the facts' group guard and change the file by their lines, so INDEX.md is exact after each; a
# change made outside the app shows within MEMORY_RECONCILE_SECONDS while a worker runs, or
# at the first fact write that long after it (a hand edit racing an app write within one
# clock tick of the directory included). The state file is derived: lost or stale, it costs one
# regeneration.

INDEX_STATE_PATH = f"{workspace.STATE_DIR}/facts-index.json"
_STATE_VERSION = 2
_RECONCILE_MARGIN_NS = 1_000_000_000


def _read_index_state() -> dict | None:
    try:
        state = json.loads(workspace.read(INDEX_STATE_PATH) or "null")
    except ValueError:
        return None
    if (
        not isinstance(state, dict)
        or state.get("version") != _STATE_VERSION
        or not isinstance(state.get("index_sha256"), str)
        or not isinstance(state.get("since_ns"), int)
        or not isinstance(state.get("reconciled_at"), int | float)
        or not isinstance(state.get("directory"), list)
    ):
        return None
    return state


def _line_name(line: bytes) -> bytes:
    # A line this code wrote: `- [<name>](<name>.md) (...`; names hold no `]`.
    return line[3 : line.index(b"]")]


def _line_bytes(name: str, text: str) -> bytes:
    return index_line(parse_fact(name, text)).encode("utf-8")


def _replace_line(lines: list[bytes], key: bytes, line: bytes | None) -> None:
    """Put `line` (None: no line) where the fact `key`'s line is or belongs (sorted)."""
    at = bisect.bisect_left(lines, key, key=_line_name)
    present = at < len(lines) and _line_name(lines[at]) == key
    if line is None:
        if present:
            del lines[at]
    elif present:
        lines[at] = line
    else:
        lines.insert(at, line)


def _plan_index(pending: dict[str, str | None], *, reconcile: bool = False) -> tuple[bytes, dict]:
    """(INDEX.md's new bytes, the state to keep) with `pending` applied — {name: the text
    its fact file now has or is about to get, or None for a fact that is or is about to
    be gone} — and whatever the checks above find (every fact file's ctime too when
    `reconcile`, or when that is due). Reads; writes nothing. Caller holds the facts'
    guard."""
    state = _read_index_state()
    current = workspace.read_bytes_from(INDEX_PATH, 0) or b""
    now = time.time()
    trusted = state is not None and state["index_sha256"] == hashlib.sha256(current).hexdigest()
    due = (
        reconcile
        or not trusted
        or not 0 <= now - state["reconciled_at"] < settings.MEMORY_RECONCILE_SECONDS
    )
    since = workspace.volume_now_ns() if due else state["since_ns"]
    lines = current.split(b"\n")[:-1] if trusted else []
    # {name: its new line, or None to drop it}
    changes: dict[str, bytes | None] = {
        name: None if text is None else _line_bytes(name, text) for name, text in pending.items()
    }
    _add_found_changes(changes, lines, state if trusted else None, due=due)
    new = _index_bytes(lines, changes)
    new_state = {
        "version": _STATE_VERSION,
        "index_sha256": hashlib.sha256(new).hexdigest(),
        "since_ns": since,
        "reconciled_at": now if due else state["reconciled_at"],
        "directory": [],  # filled in after the write
    }
    return new, new_state


def _facts_to_look_at(state: dict | None, *, due: bool) -> tuple[set[str] | None, set[str]]:
    """(the fact names on disk, when they had to be listed; the facts to read again): all
    of them when INDEX.md is not trusted (`state` None); when a reconcile is due, those
    changed since the last one (by ctime, with a margin); when the directory changed, its
    names only (a file added or removed by hand)."""
    if state is None:
        names = set(_fact_names())
        return names, set(names)
    if due:
        threshold = state["since_ns"] - _RECONCILE_MARGIN_NS
        on_disk: set[str] = set()
        to_read: set[str] = set()
        for scanned in workspace.scan_files(FACTS_DIR):
            stem = scanned.path.rsplit("/", 1)[-1][:-3]
            if len(stem) <= 64 and FACT_NAME_RE.fullmatch(stem):
                on_disk.add(stem)
                if scanned.ctime_ns >= threshold:
                    to_read.add(stem)
        return on_disk, to_read
    if list(workspace.stamp(FACTS_DIR) or ()) != state["directory"]:
        return set(_fact_names()), set()
    return None, set()


def _add_found_changes(
    changes: dict[str, bytes | None], lines: list[bytes], state: dict | None, *, due: bool
) -> None:
    """Add to `changes` what the facts on disk say beyond them: a fact without a line
    gets one, a line without a fact goes, a fact changed by hand gets its line again."""
    on_disk, to_read = _facts_to_look_at(state, due=due)
    if on_disk is not None:
        listed = {_line_name(line).decode("ascii") for line in lines}
        to_read |= on_disk - listed
        for name in listed - on_disk:
            changes.setdefault(name, None)
    for name in to_read - changes.keys():
        text = workspace.read(fact_path(name))
        changes[name] = None if text is None else _line_bytes(name, text)


def _index_bytes(lines: list[bytes], changes: dict[str, bytes | None]) -> bytes:
    """INDEX.md's bytes: `lines` (sorted by name) with `changes` applied."""
    if len(changes) > 64:  # many lines (a regeneration): merge and sort once
        merged = {_line_name(line): line for line in lines}
        for name, line in changes.items():
            if line is None:
                merged.pop(name.encode("ascii"), None)
            else:
                merged[name.encode("ascii")] = line
        lines = [merged[key] for key in sorted(merged)]
    else:
        for name, line in changes.items():
            _replace_line(lines, name.encode("ascii"), line)
    return b"\n".join(lines) + b"\n" if lines else b""


def _write_index(new: bytes, state: dict, *, also: dict[str, str] | None = None) -> None:
    """Write INDEX.md (removed when empty: a missing file is simply absent from the
    prompt) together with `also` ({path: text}, e.g. the fact itself, fsynced with it),
    then the state. Caller holds the facts' guard."""
    texts: dict[str, str | bytes] = dict(also or {})
    current = workspace.read_bytes_from(INDEX_PATH, 0)
    if new and current != new:
        texts[INDEX_PATH] = new
    if texts:
        workspace.write_many(texts)
    if not new and current is not None:
        workspace.delete(INDEX_PATH)
    state["directory"] = list(workspace.stamp(FACTS_DIR) or ())
    workspace.write_unsynced(INDEX_STATE_PATH, json.dumps(state))


def update_index(names: list[str] | tuple[str, ...] = ()) -> None:
    """Bring INDEX.md up to date after the facts `names` were written or deleted outside
    save_fact / forget_fact (an approved or undone proposal): their lines change, and the
    checks above run. Hand edits of INDEX.md are overwritten."""
    with workspace.guarded(FACTS_DIR):
        pending = {name: workspace.read(fact_path(name)) for name in names}
        _write_index(*_plan_index(pending))


def reconcile_index() -> bool:
    """Look for facts added, removed or edited by hand, as a fact write does when its
    reconcile is due, ahead of the writes: the worker's supervisor runs it every half
    MEMORY_RECONCILE_SECONDS, so a hand edit shows in INDEX.md within that bound without
    waiting for a write, and a write seldom finds the reconcile due (a stat of every fact:
    ~0.1 s at 10,000). Skipped (False) when one ran within the last half bound, and in a
    workspace with no facts folder (nothing is created). True when INDEX.md changed."""
    if workspace.stamp(FACTS_DIR) is None:
        return False
    with workspace.guarded(FACTS_DIR):
        state = _read_index_state()
        half = settings.MEMORY_RECONCILE_SECONDS / 2
        if state is not None and 0 <= time.time() - state["reconciled_at"] < half:
            return False
        before = workspace.read_bytes_from(INDEX_PATH, 0) or b""
        new, new_state = _plan_index({}, reconcile=True)
        _write_index(new, new_state)
        return new != before


def regenerate_index() -> None:
    """Rewrite INDEX.md whole from every fact file (hand edits are overwritten). With no
    facts left the file is removed: a missing file is simply absent from the prompt."""
    with workspace.guarded(FACTS_DIR):
        workspace.delete(INDEX_STATE_PATH)  # trust nothing: read every fact
        _write_index(*_plan_index({}))


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
        index, state = _plan_index({name: text})
        # The fact and its INDEX.md line are fsynced together.
        _write_index(index, state, also={fact_path(name): text})
    return parse_fact(name, text)


def forget_fact(name: str) -> None:
    """Delete a fact and regenerate INDEX.md. NotFound (404) when there is no such fact."""
    rel = fact_path(name)
    with workspace.guarded(FACTS_DIR):
        if not workspace.delete(rel):
            raise NotFound(f"No fact {name!r}.")
        _write_index(*_plan_index({name: None}))


def count_facts() -> int:
    """How many facts there are: a stat of the directory (listed again only when it
    changed), no fact read or stat'ed."""
    return len(_fact_names())
