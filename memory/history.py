"""The history of every memory file (SPEC §7): versions, restore, blame.

Every change of a file under MY_AGENT_HOME passes memory.workspace, which tells its
`on_change` hooks inside the file's lock; `record_change` (registered in
MemoryConfig.ready()) writes one `FileVersion` row for it, attributed from the
`memory.attribution.attributed(...)` context the operations and interfaces set.

- **Nothing lost silently.** Before recording a change, the file as it was is compared
  with the last recorded version: by fingerprint (size, mtime, ctime, inode — any write
  changes the ctime), and when that differs by content. A file changed by hand outside
  the app (or first seen now) is recorded first, as `outside`, with its whole text.
- **Compact.** A version keeps what the file held after it as a zlib-compressed delta
  against the previous version (common prefix and suffix lengths, then the new middle),
  the appended bytes for an append (the file is not read again), or the whole text every
  SNAPSHOT_EVERY versions (and whenever a delta would not be smaller). Reading a version
  replays at most SNAPSHOT_EVERY rows from its snapshot, fetched in one query.
- **Exactly once.** Rows of one path are numbered (`seq`) under the file's lock and a
  unique constraint; the row is written in the writer's transaction (an approval's file
  write and its version commit together).
- **Restore is a forward change**: the old text written again through the workspace with
  a base-hash check (409 when the file changed since it was read), recorded as a new
  version that names the one it restores. Versions are never edited.
- **Retention**: `prune` drops versions older than MEMORY_HISTORY_DAYS (default 365),
  keeping each path's newest version; the oldest kept one becomes a whole snapshot.

Blame (`blame`) replays a file's versions and says, for each line of its current text, the
version that last brought it in (with that version's proposal, run and date).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import struct
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from memory import textdiff, workspace
from memory.attribution import Attribution, attributed
from memory.errors import Conflict, InvalidInput, NotFound
from memory.models import Agent, FileVersion, RestoreIntent, Run
from memory.text import note_day

logger = logging.getLogger(__name__)

SNAPSHOT_EVERY = 32
LARGE_BYTES = 256 * 1024
FULL, DELTA, APPEND, NONE = "full", "delta", "append", "none"
OUTSIDE_NOTE = "edited outside the app"
FIRST_SEEN_NOTE = "as found when history began"
STATS_SECONDS = 0.05  # the line count of one recorded change is a bounded diff
_HEADER = struct.Struct(">QQ")

Op = FileVersion.Op


# --- storage ------------------------------------------------------------------------------


def _common(before: bytes, after: bytes) -> tuple[int, int]:
    """(the length of the common prefix, of the common suffix not overlapping it): block
    by block, then by halving inside the first block that differs (bytes comparisons run
    in C; a block's copy is small)."""
    limit = min(len(before), len(after))
    prefix = _run_length(lambda a, b: before[a:b] == after[a:b], limit)
    end_old, end_new = len(before), len(after)
    suffix = _run_length(
        lambda a, b: before[end_old - b : end_old - a] == after[end_new - b : end_new - a],
        limit - prefix,
    )
    return prefix, suffix


def _run_length(same: Callable[[int, int], bool], limit: int, block: int = 65536) -> int:
    """The largest n ≤ limit with same(0, n), given same(a, b) for ranges [a, b)."""
    start = 0
    while start < limit and same(start, min(start + block, limit)):
        start = min(start + block, limit)
    low, high = start, min(start + block, limit)
    while low < high:  # same(start, low) holds, same(start, high + 1) does not
        middle = (low + high + 1) // 2
        if same(start, middle):
            low = middle
        else:
            high = middle - 1
    return low


def _level(data: bytes) -> int:
    # A large file (INDEX.md of thousands of facts) is compressed fast, inside the write.
    return 6 if len(data) < LARGE_BYTES else 1


def _pack(storage: str, before: bytes | None, after: bytes | None) -> bytes:
    if storage == NONE or after is None:
        return b""
    if storage == FULL:
        return zlib.compress(after, _level(after))
    before = before or b""
    prefix, suffix = _common(before, after)
    middle_bytes = after[prefix : len(after) - suffix]
    return zlib.compress(_HEADER.pack(prefix, suffix) + middle_bytes, 6)


def _unpack(storage: str, data: bytes, previous: bytes | None) -> bytes | None:
    if storage == NONE:
        return None
    raw = zlib.decompress(bytes(data))
    if storage == FULL:
        return raw
    if storage == APPEND:
        return (previous or b"") + raw
    prefix, suffix = _HEADER.unpack_from(raw)
    previous = previous or b""
    tail = previous[len(previous) - suffix :] if suffix else b""
    return previous[:prefix] + raw[_HEADER.size :] + tail


def content(version: FileVersion) -> bytes | None:
    """What the file held after `version` (None: it did not exist)."""
    rows = FileVersion.objects.filter(
        path=version.path, seq__gte=version.base_seq, seq__lte=version.seq
    ).order_by("seq")
    text: bytes | None = None
    for row in rows.only("storage", "data", "seq"):
        text = _unpack(row.storage, row.data, text)
    return text


def text_of(data: bytes | None) -> str | None:
    """Bytes of a version as text (a byte that is not UTF-8 shown as U+FFFD)."""
    return None if data is None else data.decode("utf-8", errors="replace")


def previous_version(version: FileVersion) -> FileVersion | None:
    return (
        FileVersion.objects.filter(path=version.path, seq__lt=version.seq).order_by("-seq").first()
    )


def replaced(version: FileVersion) -> bytes | None:
    """What `version` replaced: the text of the version before it (None: none, or absent)."""
    before = previous_version(version)
    return content(before) if before is not None else None


def before_and_after(version: FileVersion) -> tuple[bytes | None, bytes | None]:
    """What the file held just before `version` and just after it (None: absent), from
    one replay of the rows both are built from (two queries, whatever the versions)."""
    before = previous_version(version)
    if before is None:
        return None, content(version)
    start = min(before.base_seq, version.base_seq)
    rows = FileVersion.objects.filter(
        path=version.path, seq__gte=start, seq__lte=version.seq
    ).order_by("seq")
    text: bytes | None = None
    old: bytes | None = None
    for row in rows.only("storage", "data", "seq"):
        text = _unpack(row.storage, row.data, text)
        if row.seq == before.seq:
            old = text
    return old, text


# --- recording ------------------------------------------------------------------------------


def agent_of_path(path: str) -> str:
    """The agent whose dir holds `path` ("" for the user scope)."""
    if path.startswith("users/"):
        return ""
    if path.startswith("agents/"):
        return path.split("/", 2)[1]
    default = Agent.objects.filter(is_default=True).values_list("pk", flat=True).first()
    return default or ""


# What kind of file a path is, for the feed's filter (SPEC §7): an agent's MEMORY.md
# ("lines" when a change only adds lines to it), a daily note, a fact, USER.md, a wiki
# page, another file of memory/, or what the app generates by itself (INDEX.md, the wiki's
# reports: never in the feed).
KINDS = ("lines", "memory", "note", "fact", "user", "wiki", "file")
GENERATED = "generated"


def kind_of_path(path: str) -> str:
    """The kind of file `path` is (one of KINDS, or GENERATED). Pure: reads nothing."""
    parts = path.split("/")
    if parts[0] == "users":
        if parts[-1] in ("INDEX.md", ".index-state.json") or parts[-1].startswith("."):
            return GENERATED
        return "fact" if "facts" in parts[:-1] else "user"
    if parts[0] == "agents" and len(parts) > 2:
        parts = parts[2:]
    if parts == ["USER.md"]:
        return "user"
    if parts in (["MEMORY.md"], ["memory.md"]):
        return "memory"
    if parts[0] != "memory" or len(parts) < 2:
        return "file"
    if parts[1] == "wiki":
        return GENERATED if "reports" in parts[2:-1] else "wiki"
    if len(parts) == 2 and note_day(parts[1]) is not None:
        return "note"
    return "file"


def _feed_fields(path: str, attribution: Attribution, *, removed: int) -> dict:
    """`in_feed`, `by_agent` and `kind` of a version (SPEC §7, the feed): in the feed when
    an agent or a job made it — an agent's attended write (a tool, REST with its token),
    a job's (autonomous, or a proposal approved, by the owner or a standing rule) — never
    the owner's own edits, undos, restores and reverts, edits outside the app, or the files
    the app generates."""
    kind = kind_of_path(path)
    if kind == "memory" and not removed:
        kind = "lines"
    actor = attribution.actor
    owners_own = (
        attribution.restored_from is not None
        or attribution.reverts is not None
        # proposals.actions notes an undo "undo of proposal #N" (its approval "approval of…")
        or attribution.note.startswith("undo")
    )
    by_someone = actor.startswith(("agent:", "job:", "auto:")) or attribution.proposal is not None
    in_feed = kind != GENERATED and by_someone and not owners_own
    return {"in_feed": in_feed, "by_agent": _writer_agent(path, attribution), "kind": kind}


def _writer_agent(path: str, attribution: Attribution) -> str:
    """The agent that wrote (or whose job asked): an `agent:<id>` actor, an autonomous
    `auto:<id>`, else the agent of the proposal or run behind it, else the file's."""
    actor = attribution.actor
    for prefix in ("agent:", "auto:"):
        if actor.startswith(prefix):
            return actor[len(prefix) :][:64]
    if attribution.proposal is not None:
        proposal_model = FileVersion._meta.get_field("proposal").related_model
        found = (
            proposal_model.objects.filter(pk=attribution.proposal)
            .values_list("agent_id", flat=True)
            .first()
        )
        if found:
            return found
    if attribution.run is not None:
        found = Run.objects.filter(pk=attribution.run).values_list("agent_id", flat=True).first()
        if found:
            return found
    return agent_of_path(path)


def _line_stats(before: bytes | None, after: bytes | None) -> tuple[int, int]:
    """(lines removed, lines added). The lines both texts begin and end with are left
    out first (the diff would skip them too): one changed line of a large file costs the
    size of that line, not of the file."""
    before, after = before or b"", after or b""
    prefix, suffix = _common(before, after)
    start = before.rfind(b"\n", 0, prefix) + 1  # whole lines before the first difference
    newline = before.find(b"\n", len(before) - suffix) if suffix else -1
    tail = len(before) - newline - 1 if newline != -1 else 0  # whole lines after the last
    old = (text_of(before[start : len(before) - tail]) or "").splitlines()
    new = (text_of(after[start : len(after) - tail]) or "").splitlines()
    return textdiff.changed_line_count(textdiff.line_opcodes(old, new, seconds=STATS_SECONDS))


def _whole_is_smaller(delta: bytes, after: bytes | None) -> bool:
    """Whether the new text compressed whole would be no larger than its delta. A delta a
    sixteenth of the text is smaller than the text compressed: not compressed to ask."""
    if after is None or len(delta) * 16 < len(after):
        return False
    return len(delta) >= len(zlib.compress(after, 1))


def _new_row(
    path: str,
    last: FileVersion | None,
    *,
    op: str,
    before: bytes | None,
    after: bytes | None,
    fingerprint: workspace.Fingerprint | None,
    attribution: Attribution,
    appended: bytes | None = None,
    agent: str,
    now: dt.datetime,
) -> FileVersion:
    """A version row after `last` (not saved). `before` is the text `last` holds (None:
    absent); `after` the new text (None: deleted), or with `appended` unknown (an append:
    only the appended bytes are known and stored)."""
    seq = (last.seq + 1) if last else 1
    if after is None and appended is None:
        storage, base_seq = NONE, seq
    elif last is None or last.storage == NONE or seq - last.base_seq >= SNAPSHOT_EVERY:
        storage, base_seq = FULL, seq
    elif appended is not None:
        storage, base_seq = APPEND, last.base_seq
    else:
        storage, base_seq = DELTA, last.base_seq
    if storage == FULL and after is None:  # a snapshot of an append: read the whole file
        after = workspace.read_bytes_from(path, 0) or b""
    if storage == APPEND:
        data = zlib.compress(appended or b"", 6)
        added = (text_of(appended) or "").count("\n")
        removed = 0
    else:
        data = _pack(storage, before, after)
        if storage == DELTA and _whole_is_smaller(data, after):
            storage, base_seq = FULL, seq
            data = _pack(FULL, None, after)
        if appended is not None:
            added, removed = (text_of(appended) or "").count("\n"), 0
        else:
            removed, added = _line_stats(before, after)
    exists = not (after is None and appended is None)
    feed = _feed_fields(path, attribution, removed=removed) if op != Op.OUTSIDE else {}
    return FileVersion(
        **feed,
        reverts_id=attribution.reverts,
        path=path,
        seq=seq,
        agent=agent,
        op=op,
        actor=attribution.actor[:200],
        source=attribution.source[:200],
        via=attribution.via[:30],
        note=attribution.note[:300],
        proposal_id=attribution.proposal,
        run_id=attribution.run,
        restored_from_id=attribution.restored_from,
        created_at=now,
        exists=exists,
        size=fingerprint.size if fingerprint else (len(after) if after is not None else 0),
        sha256=hashlib.sha256(after).hexdigest() if after is not None else "",
        fingerprint=str(fingerprint) if fingerprint else "",
        storage=storage,
        base_seq=base_seq,
        data=data,
        lines_added=added,
        lines_removed=removed,
    )


def _matches(last: FileVersion, data: bytes | None) -> bool:
    """Whether `data` (None: absent) is what `last` recorded."""
    if data is None:
        return not last.exists
    if not last.exists:
        return False
    if last.sha256:
        return last.sha256 == hashlib.sha256(data).hexdigest()
    return content(last) == data


def record_change(change: workspace.Change) -> None:
    """The workspace hook: record `change` as a version (first the file as found, when it
    is not what was last recorded). Runs inside the file's lock; a database error is
    logged by the workspace and the next write notices the gap as an outside edit."""
    with transaction.atomic():
        _record(change)


def _record(change: workspace.Change) -> None:
    path = change.path
    now = timezone.now()
    agent = agent_of_path(path)
    # The newest version's stored text is read only when it is needed (content()).
    last = FileVersion.objects.filter(path=path).order_by("-seq").defer("data").first()
    attribution = change.attribution

    if change.op == "adopt":
        current = workspace.read_bytes_from(path, 0)
        if last is not None and _matches(last, current):
            return
        row = _new_row(
            path,
            last,
            op=Op.RESTORE if attribution.restored_from else Op.ADOPT,
            before=content(last) if last is not None else None,
            after=current,
            fingerprint=change.after_fingerprint,
            attribution=attribution,
            agent=agent,
            now=now,
        )
        row.save()
        return

    # What the file held just before this change, and whether that is what was recorded
    # last. An append reads the file only when its fingerprint is not the recorded one.
    if change.op == "append":
        if last is not None and str(change.before_fingerprint or "") == last.fingerprint:
            before, same = None, True
        else:
            before = (workspace.read_bytes_from(path, 0) or b"")[: change.offset]
            same = last is not None and _matches(last, before)
        found_absent = False
    else:
        before = change.before
        found_absent = before is None
        # As for an append: the file found is the one last recorded when its fingerprint
        # (size, times, inode) is the recorded one; its bytes are hashed only otherwise.
        same = last is not None and (
            (
                change.before_fingerprint is not None
                and str(change.before_fingerprint) == last.fingerprint
            )
            or _matches(last, before)
        )

    if not same and (last is not None or not found_absent):
        row = _new_row(
            path,
            last,
            op=Op.OUTSIDE,
            before=content(last) if last is not None else None,
            after=before,
            fingerprint=change.before_fingerprint,
            attribution=Attribution(note=OUTSIDE_NOTE if last is not None else FIRST_SEEN_NOTE),
            agent=agent,
            now=now,
        )
        row.save()
        last = row

    if change.op == "append":
        op, after, appended = Op.APPEND, None, change.data
    elif change.op == "delete":
        op, after, appended = Op.DELETE, None, None
    else:
        op = Op.RESTORE if attribution.restored_from else Op.WRITE
        after, appended = change.data, None
    row = _new_row(
        path,
        last,
        op=op,
        before=before,
        after=after,
        appended=appended,
        fingerprint=change.after_fingerprint,
        attribution=attribution,
        agent=agent,
        now=now,
    )
    row.save()


# --- reading ------------------------------------------------------------------------------


def versions(*, path: str | None = None, agent: str | None = None) -> QuerySet[FileVersion]:
    """Versions newest first (without their stored text), of one path and/or one agent's
    files ("" = the user scope)."""
    rows = FileVersion.objects.defer("data").order_by("-created_at", "-id")
    if path is not None:
        check_path(path)
        rows = FileVersion.objects.defer("data").filter(path=path).order_by("-seq")
    if agent is not None:
        rows = rows.filter(agent=agent)
    return rows


def get_version_or_404(version_id: int) -> FileVersion:
    row = FileVersion.objects.filter(pk=version_id).first()
    if row is None:
        raise NotFound(f"No version {version_id}.")
    return row


def latest(path: str) -> FileVersion | None:
    return FileVersion.objects.filter(path=path).order_by("-seq").first()


def check_path(path: str) -> str:
    """`path`, when the workspace accepts it; PathRefused (422) for one it refuses
    (absolute, `..`, through a symbolic link…). Reads nothing."""
    workspace.resolve(path)
    return path


def is_current(version: FileVersion) -> bool:
    """Whether the file holds exactly what `version` recorded (is absent, for a version
    that deleted it): False once it changed since, by hand or by a write not yet
    recorded."""
    return _matches(version, workspace.read_bytes_from(version.path, 0))


def current_hash(path: str) -> str:
    """The hash of the file's bytes now (`workspace.ABSENT` when missing): what a person
    looks at before a restore, and sends back as its `base_hash`."""
    return workspace.bytes_hash(path)


# --- restore --------------------------------------------------------------------------------

# After a restore, what depends on the file is refreshed: INDEX.md after a fact, the
# vault's graph after a wiki page. Apps register (predicate, refresh(path)) pairs.
_REFRESHERS: dict[str, tuple[Callable[[str], bool], Callable[[str], None]]] = {}


def register_refresher(
    name: str, applies: Callable[[str], bool], refresh: Callable[[str], None]
) -> None:
    """After restoring a path for which `applies(path)`, call `refresh(path)`."""
    _REFRESHERS[name] = (applies, refresh)


def restore(version: FileVersion, *, base_hash: str, by: str, via: str = "") -> FileVersion:
    """Write the text of `version` again, as a new version, exactly once: the file must
    still hash to `base_hash` (what the person looked at), else Conflict (409) and nothing
    is written. Conflict too when the file already holds that text (nothing to restore).
    InvalidInput (422) for a version in which the file did not exist, or no base_hash.
    Returns the new version.

    Crash-safe: a `RestoreIntent` row is committed before the file is written and removed
    once its version is recorded; a process killed anywhere in between leaves the intent,
    which `recover` settles (at start-up, and before the next restore of the path) so the
    file's latest version is always its text."""
    if not isinstance(base_hash, str) or not base_hash:
        raise InvalidInput("`base_hash` is required: the hash of the file as you saw it.")
    if not version.exists:
        raise InvalidInput(
            f"Version {version.seq} of {version.path} is the file deleted: restore the "
            "version before it instead."
        )
    text = content(version)
    assert text is not None
    path = version.path
    with workspace.locked(path):
        _settle(path)
        current = workspace.bytes_hash(path)
        if current != base_hash:
            raise Conflict(f"{path} changed since you looked at it; reload and try again.")
        if current == hashlib.sha256(text).hexdigest():
            raise Conflict(f"{path} already holds the text of version {version.seq}.")
        intent = RestoreIntent.objects.create(
            path=path,
            version=version,
            sha256=hashlib.sha256(text).hexdigest(),
            actor=by[:200],
            via=via[:30],
        )
        with _restore_attributed(version, by=by, via=via):
            workspace.write_raw(path, text)
        made = latest(path)
        RestoreIntent.objects.filter(pk=intent.pk).delete()
    _refresh(path)
    assert made is not None
    return made


def _restore_attributed(version: FileVersion, *, by: str, via: str, note: str = ""):
    return attributed(
        actor=by,
        via=via,
        note=note or f"restore of version {version.seq}",
        restored_from=version.pk,
    )


def _refresh(path: str) -> None:
    for name, (applies, refresh) in list(_REFRESHERS.items()):
        if applies(path):
            try:
                refresh(path)
            except Exception:  # the restore is written; a failed refresh must not hide it
                logger.exception("refresh %s after restoring %s failed", name, path)


RECOVERED_NOTE = "restore of version %(seq)s, recorded after a restart"


def _settle(path: str) -> bool:
    """Settle the restores of `path` a killed process left (caller holds the file's lock,
    so none of them is still running): the file holding the restored bytes gets its
    version recorded as that restore (when not recorded yet); otherwise nothing was
    written and the intent goes. Returns whether a restore was found written."""
    written = False
    for intent in RestoreIntent.objects.filter(path=path).select_related("version"):
        if workspace.bytes_hash(path) == intent.sha256:
            written = True
            last = latest(path)
            if last is None or last.sha256 != intent.sha256:
                note = RECOVERED_NOTE % {"seq": intent.version.seq}
                attribution = _restore_attributed(
                    intent.version, by=intent.actor, via=intent.via, note=note
                )
                with attribution:
                    workspace.adopt(path)
        RestoreIntent.objects.filter(pk=intent.pk).delete()
    return written


def recover() -> list[str]:
    """Settle every restore a killed process left (start-up: memory_init). Returns the
    paths whose restore had been written (their dependants refreshed)."""
    done = []
    for path in sorted(set(RestoreIntent.objects.values_list("path", flat=True))):
        with workspace.locked(path):
            written = _settle(path)
        if written:
            _refresh(path)
            done.append(path)
    return done


# --- compare --------------------------------------------------------------------------------


def compared(first: FileVersion, second: FileVersion | None) -> tuple[str | None, str | None]:
    """The texts of two versions of one file (`second` None: the file as it is now), for a
    diff of any two. InvalidInput (422) for versions of two different files."""
    if second is not None and second.path != first.path:
        raise InvalidInput(
            f"Versions {first.pk} and {second.pk} are of different files: compare versions "
            "of one file."
        )
    before = text_of(content(first))
    after = text_of(content(second)) if second is not None else workspace.read(first.path)
    return before, after


# --- who made a version -------------------------------------------------------------------

OWNER, AGENT, JOB, RULE, OUTSIDE_WHO, APP = "owner", "agent", "job", "rule", "outside", "app"


def who(version: FileVersion | None) -> tuple[str, str]:
    """Who made a version, as (kind, name): the owner (their name), an agent (its id), a job
    (`job:<id>` — its proposal approved by someone, or a run's own write), a standing rule,
    a change made outside the app, or the app itself; ("", "") for no version."""
    if version is None:
        return "", ""
    actor, source = version.actor, version.source
    if version.op == Op.OUTSIDE:
        return OUTSIDE_WHO, ""
    if source.startswith("job:"):
        return JOB, source
    if actor.startswith("job:"):
        return JOB, actor
    if actor.startswith("agent:"):
        return AGENT, actor.removeprefix("agent:")
    if actor.startswith(("rule:", "auto:")):
        return RULE, actor
    if actor:
        return OWNER, actor
    return APP, ""


def hash_after(version: FileVersion) -> str:
    """The hash of what the file held after `version` (`workspace.ABSENT`: it did not
    exist), as `current_hash` says it when the file is still at that version."""
    if not version.exists:
        return workspace.ABSENT
    if version.sha256:
        return version.sha256
    return hashlib.sha256(content(version) or b"").hexdigest()


def revert(version: FileVersion, *, by: str, via: str = "") -> FileVersion:
    """Undo the change `version` made: the text the file held before it written again, as
    a new version (a file it created is deleted) — `restore`'s rules, exactly once: the
    file must still be what `version` left (else Conflict 409: a later change would be
    undone too, and the message says to restore from the file's history instead), and a
    version is reverted at most once (Conflict). InvalidInput (422) when it changed
    nothing. Returns the new version, which names `version` as the one it reverts."""
    path = version.path
    if version.op == Op.OUTSIDE:
        raise InvalidInput(
            f"Version {version.seq} of {path} was an edit outside the app: restore a version "
            "from the file's history instead."
        )
    before = previous_version(version)
    restore_to = before if before is not None and before.exists else None
    expected = hash_after(version)
    with attributed(reverts=version.pk, actor=by, via=via):
        with workspace.locked(path):
            done = FileVersion.objects.filter(reverts=version).order_by("seq").first()
            if done is not None:
                raise Conflict(
                    f"Version {version.seq} of {path} was already reverted (version {done.seq})."
                )
            if workspace.bytes_hash(path) != expected:
                newer = latest(path)
                raise Conflict(
                    f"{path} changed after version {version.seq} (it is now at version "
                    f"{newer.seq if newer else '?'} or edited by hand): reverting would undo "
                    "those changes too. Open the file's history and restore the version you "
                    "want instead."
                )
            if restore_to is None:
                if not version.exists:
                    raise InvalidInput(f"Version {version.seq} of {path} changed nothing.")
                with attributed(note=f"revert of version {version.seq}"):
                    workspace.delete(path)
                made = latest(path)
        if restore_to is not None:
            if hash_after(restore_to) == expected:
                raise InvalidInput(f"Version {version.seq} of {path} changed nothing.")
            # restore() checks the hash again under the file's lock: a write in between is
            # its 409, never a clobber.
            return restore(restore_to, base_hash=expected, by=by, via=via)
    _refresh(path)
    assert made is not None
    return made


def _refresh(path: str) -> None:
    for name, (applies, refresh) in list(_REFRESHERS.items()):
        if applies(path):
            try:
                refresh(path)
            except Exception:  # the change is written; a failed refresh must not hide it
                logger.exception("refresh %s after reverting %s failed", name, path)


# --- blame ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlameLine:
    number: int  # 1-based line of the current text
    text: str
    version: FileVersion | None  # None: the line is not in any recorded version


def _replay(path: str) -> Iterable[tuple[FileVersion, bytes | None]]:
    text: bytes | None = None
    for row in FileVersion.objects.filter(path=path).order_by("seq").iterator(chunk_size=200):
        text = _unpack(row.storage, row.data, text)
        yield row, text


def blame(path: str) -> list[BlameLine]:
    """For each line of the file's current text, the version that last brought it in. Lines
    of a text not yet recorded (changed by hand since the last write) have no version.
    PathRefused (422) for a path the workspace refuses."""
    check_path(path)
    lines: list[str] = []
    owners: list[FileVersion | None] = []
    for row, data in _replay(path):
        new = (text_of(data) or "").splitlines()
        if row.storage == APPEND and new[: len(lines)] == lines:
            owners = owners + [row] * (len(new) - len(lines))
        else:
            carried: list[FileVersion | None] = []
            for tag, i1, i2, j1, j2 in textdiff.line_opcodes(lines, new):
                carried += owners[i1:i2] if tag == "equal" else [row] * (j2 - j1)
            owners = carried
        lines = new
        row.data = b""  # keep the rows small: only their attribution is needed now
    current = (workspace.read(path) or "").splitlines()
    if current != lines:
        carried = []
        for tag, i1, i2, j1, j2 in textdiff.line_opcodes(lines, current):
            carried += owners[i1:i2] if tag == "equal" else [None] * (j2 - j1)
        owners, lines = carried, current
    pairs = zip(lines, owners, strict=True)
    return [BlameLine(n, line, owner) for n, (line, owner) in enumerate(pairs, 1)]


# --- retention ------------------------------------------------------------------------------


def prune(*, days: int | None = None, now: dt.datetime | None = None) -> int:
    """Delete versions older than `days` (default MEMORY_HISTORY_DAYS), never a path's
    newest one; the oldest version kept of a path becomes a whole snapshot first, so every
    kept version can still be read. Returns how many rows were deleted. 0 days or less
    keeps everything."""
    days = settings.MEMORY_HISTORY_DAYS if days is None else days
    if days <= 0:
        return 0
    cutoff = (now or timezone.now()) - dt.timedelta(days=days)
    deleted = 0
    paths = (
        FileVersion.objects.filter(created_at__lt=cutoff).values_list("path", flat=True).distinct()
    )
    for path in list(paths):
        with workspace.locked(path), transaction.atomic():
            newest = latest(path)
            old = FileVersion.objects.filter(path=path, created_at__lt=cutoff).exclude(pk=newest.pk)
            last_old = old.order_by("-seq").first()
            if last_old is None:
                continue
            keep = FileVersion.objects.filter(path=path, seq__gt=last_old.seq).order_by("seq")
            first_kept = keep.first()
            if first_kept is not None and first_kept.storage not in (FULL, NONE):
                text = content(first_kept)
                FileVersion.objects.filter(pk=first_kept.pk).update(
                    storage=FULL, data=_pack(FULL, None, text), base_seq=first_kept.seq
                )
                # Later rows of the same chain now start from the new snapshot.
                FileVersion.objects.filter(
                    path=path, seq__gt=first_kept.seq, base_seq__lt=first_kept.seq
                ).update(base_seq=first_kept.seq)
            deleted += FileVersion.objects.filter(path=path, seq__lte=last_old.seq).delete()[0]
    return deleted
