"""Proposal operations (SPEC §7): the only code that changes a proposal's status.

Every interface — REST, admin, management pages, tasks — calls these functions, so every
way in obeys the same rules:

- **Exactly once.** A decision is a conditional update on `status='pending'` inside
  `transaction.atomic()`; whoever updates zero rows lost the race and gets `Conflict`
  (409). This holds across threads and processes because the database decides.
- **Appends stack.** A kind that only adds (`appends = True`: lines for MEMORY.md) is
  applied to the file as it is when approved — its text is computed again under the file's
  lock — so it is never stale, never superseded by another append or an attended write,
  and never supersedes one (SPEC §7).
- **Stale base.** A proposal that replaces content is checked: before writing, under the
  file lock of every path it changes, each file's current hash is compared with the hash it
  had when the proposal was made. Any mismatch: the proposal becomes `superseded`
  (committed), `Conflict` is raised and no file is touched. `reapply` then merges its
  changes into the current text (memory.textdiff.merge3): an approval of the merged text
  when it is still pending, else a new proposal — each exactly once.
- **Write last.** Files are written after the row update, still inside the transaction and
  with the file locks held until the commit, so a failed write rolls the row back (and
  files already written in the batch are put back).
- **A crash between the write and the commit** (the process killed) leaves the files
  written and the row `pending`. Approving again reconciles: a target that already holds
  exactly the bytes the proposal writes counts as applied (only the others are written),
  so the retry records the approval and undo works; rejecting such a proposal is 409 (its
  change is on disk: approve it, then undo). Only a target holding something else than
  its base or its planned bytes makes the proposal `superseded`.
- **Lock order: files, then the database**, as everywhere else (consolidation creates its
  proposal while holding MEMORY.md's lock). Reversing it would let an approval and a
  consolidation wait on each other until SQLite's busy timeout.
- **Undo is a forward change.** It writes the previous text again as a new write and
  records who and when; the applied row is never edited back to pending.

A *kind* knows what a proposal would write (`changes`) and what to refresh afterwards
(`after_write`). Kinds register themselves with `register_kind`, also from another app's
`AppConfig.ready()`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory import textdiff, workspace
from memory.attribution import attributed
from memory.errors import Conflict, InvalidInput, NotFound
from memory.text import clean_reason
from proposals.models import Proposal

logger = logging.getLogger(__name__)

PENDING = Proposal.Status.PENDING
APPROVED = Proposal.Status.APPROVED
REJECTED = Proposal.Status.REJECTED
SUPERSEDED = Proposal.Status.SUPERSEDED
EXPIRED = Proposal.Status.EXPIRED


# --- kinds ----------------------------------------------------------------------------


@runtime_checkable
class ProposalKind(Protocol):
    """What a kind of proposal must offer.

    - `name`: the `Proposal.kind` value.
    - `batch`: True when the kind changes many paths as one proposal (`previous_body` is
      then a `{path: text or None}` mapping even for one path). Optional, default False.
    - `changes(*, agent, payload)`: `{workspace path: new full text, or None to delete}`,
      computed against the files as they are now. Raises a DomainError (e.g. InvalidInput,
      NotFound) when the payload is unusable — then nothing is proposed.
    - `after_write(proposal)`: called after an approve or an undo wrote the files (e.g.
      regenerate INDEX.md, rebuild the wiki graph). Failures are logged, not raised: the
      write itself has happened.
    - `appends`: True when the proposal only adds to its file (its `changes` computed
      against the file as it is when approved: never stale). Optional, default False.
    - `may_apply_unattended(proposal)`: False when a standing rule must leave this one to
      the owner (a fact the same job did not write). Optional, default True.
    """

    name: str

    def changes(self, *, agent: Any, payload: dict) -> dict[str, str | None]: ...

    def after_write(self, proposal: Proposal) -> None: ...


class BaseKind(ABC):
    """Convenience base: a single-path kind with nothing to do after writing."""

    name: str = ""
    batch: bool = False
    appends: bool = False

    def may_apply_unattended(self, proposal: Proposal) -> bool:
        return True

    @abstractmethod
    def changes(self, *, agent: Any, payload: dict) -> dict[str, str | None]: ...

    def after_write(self, proposal: Proposal) -> None:
        return None


_KINDS: dict[str, ProposalKind] = {}


def register_kind(kind: ProposalKind) -> ProposalKind:
    """Make a kind known by its name (registering the same name again replaces it, so an
    app's ready() may run twice in tests). Returns the kind, so it can decorate a class
    instance assignment."""
    if not getattr(kind, "name", ""):
        raise ValueError("A proposal kind needs a name.")
    _KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> ProposalKind:
    """The registered kind; InvalidInput (422) for an unknown name."""
    kind = _KINDS.get(name)
    if kind is None:
        raise InvalidInput(f"Unknown proposal kind {name!r}.")
    return kind


def _is_batch(kind: ProposalKind) -> bool:
    return bool(getattr(kind, "batch", False))


def appends(proposal: Proposal) -> bool:
    """Whether the proposal only adds to its file (applied to the file as it is when
    approved, never stale, never superseded)."""
    return bool(getattr(_KINDS.get(proposal.kind), "appends", False))


def may_apply_unattended(proposal: Proposal) -> bool:
    """Whether its kind lets a standing rule apply it (not a fact someone else wrote)."""
    kind = _KINDS.get(proposal.kind)
    check = getattr(kind, "may_apply_unattended", None)
    return True if check is None else bool(check(proposal))


# --- what a proposal writes and replaces ----------------------------------------------


def planned_writes(proposal: Proposal) -> dict[str, str | None]:
    """{path: text or None} that approving writes, as stored at propose time."""
    writes = (proposal.payload or {}).get("writes") or {}
    return dict(writes)


def previous_texts(proposal: Proposal) -> dict[str, str | None]:
    """{path: text or None} each changed path held when the proposal was made."""
    paths = list(planned_writes(proposal))
    previous = proposal.previous_body
    if isinstance(previous, dict):
        return {path: previous.get(path) for path in paths}
    # A single-path kind stores the bare text (or None when the file did not exist).
    return {path: previous for path in paths}


def replaced_texts(proposal: Proposal) -> dict[str, str | None]:
    """{path: text or None} an approval replaced: what the file held when it was approved
    for an append or a re-apply, else what it held when proposed. Undo puts this back."""
    replaced = dict(proposal.replaced_body or {})
    previous = previous_texts(proposal)
    return {path: replaced.get(path, previous.get(path)) for path in previous}


def stale_paths(proposal: Proposal) -> set[str]:
    """The paths the proposal writes whose file changed since it was proposed: its
    recorded base hash no longer matches the file (what approving them would refuse).
    Never any for an append: it applies to the file as it is."""
    if appends(proposal):
        return set()
    bases = proposal.base_hashes or {}
    return {
        path
        for path in planned_writes(proposal)
        if path in bases and workspace.file_hash(path) != bases[path]
    }


def _base_hashes(proposal: Proposal) -> dict[str, str]:
    hashes = dict(proposal.base_hashes or {})
    for path in planned_writes(proposal):
        hashes.setdefault(path, proposal.base_hash)
    return hashes


@contextlib.contextmanager
def _locked_all(paths: list[str]) -> Iterator[None]:
    """Hold the file locks of every path, taken together (workspace.locked_many: in one
    order everywhere) so two batches sharing paths can never deadlock each other."""
    with workspace.locked_many(paths):
        yield


def _write_texts(texts: dict[str, str | None]) -> None:
    """Write (or delete) every path; when one fails, put back those already written and
    re-raise, so a batch is all or nothing on disk as well (the write that failed changed
    nothing: writes are atomic). Caller holds the locks."""
    done: dict[str, str | None] = {}
    try:
        for path, text in texts.items():
            old = workspace.read(path)
            if text is None:
                workspace.delete(path)
            else:
                workspace.write(path, text)
            done[path] = old
    except BaseException:
        for path, old in done.items():
            with contextlib.suppress(Exception):
                if old is None:
                    workspace.delete(path)
                else:
                    workspace.write(path, old)
        raise


def writes_now(proposal: Proposal, *, lines: list | None = None) -> dict[str, str | None]:
    """What approving would write now: an append computed against the files as they are
    (with `lines`: the owner's lines instead of the proposed ones), anything else as
    planned. For a preview; `approve` computes it again under the file's lock."""
    if not appends(proposal):
        return planned_writes(proposal)
    payload = {key: value for key, value in (proposal.payload or {}).items() if key != "writes"}
    if lines is not None:
        payload["lines"] = lines
    return get_kind(proposal.kind).changes(agent=proposal.agent, payload=payload)


def _after_write(proposal: Proposal) -> None:
    kind = _KINDS.get(proposal.kind)
    if kind is None:
        return
    try:
        kind.after_write(proposal)
    except Exception:  # the files are written; a failed refresh must not hide that
        logger.exception("after_write of proposal %s (%s) failed", proposal.pk, proposal.kind)


# --- operations -----------------------------------------------------------------------


def propose(
    kind_name: str,
    *,
    agent: Any,
    target: str,
    payload: dict,
    reasons: list | tuple = (),
    source: str = "",
    run: Any = None,
    reason: str | None = None,
    requested_by: str = "",
) -> Proposal:
    """Create a pending proposal; nothing under MY_AGENT_HOME is written.

    `reasons` are the code's sentences; `reason` is the caller's own words (the model's,
    shown labelled as such, never a trust input: InvalidInput past MAX_REASON_CHARS).
    `requested_by` is the agent that asked (default: `agent`, else the run's agent): what
    a standing rule is scoped to.

    The kind computes the new texts against the files as they are now; those texts are
    stored in `payload["writes"]` ({path: text or None}) so the diff shows exactly what
    approving would write and approving writes exactly that. The previous text and hash of
    every path are snapshotted under the paths' file locks (single-path kinds: text or None
    in `previous_body` and its hash in `base_hash`; batches: `{path: text or None}`).
    Every path's hash is also kept in `base_hashes`.

    Raises InvalidInput for an unknown kind, and whatever the kind raises for a bad payload.
    """
    kind = get_kind(kind_name)
    words = clean_reason(reason)
    asked = requested_by or getattr(agent, "pk", None) or getattr(run, "agent_id", None) or ""
    payload = {key: value for key, value in dict(payload or {}).items() if key != "writes"}
    # First pass to learn the paths, second under their locks so the new texts and the
    # snapshot describe the same version of every file.
    paths = list(kind.changes(agent=agent, payload=payload))
    for _attempt in range(3):
        with _locked_all(paths):
            writes = kind.changes(agent=agent, payload=payload)
            if sorted(writes) == sorted(paths):
                previous = {path: workspace.read(path) for path in writes}
                break
        paths = list(writes)  # the files moved under us: lock the new set and retry
    else:
        raise Conflict("The files this proposal changes kept changing; try again.")
    if not writes:
        raise InvalidInput("This proposal would change nothing.")
    hashes = {path: workspace.hash_text(text) for path, text in previous.items()}
    if _is_batch(kind) or len(writes) > 1:
        previous_body: Any = previous
        base_hash = ""
    else:
        (only,) = writes
        previous_body = previous[only]
        base_hash = hashes[only]
    agent_id = getattr(agent, "pk", None)
    shape = shape_of(kind.name, agent_id, target, payload)
    with transaction.atomic():
        # No nagging: exactly what the owner rejected, asked again, is counted on the
        # rejected row (shown "rejected before") instead of queued as new; exactly what
        # already waits is that same pending proposal.
        earlier = (
            Proposal.objects.select_for_update()
            .filter(shape=shape, status__in=[REJECTED, PENDING])
            .order_by("-created_at", "-id")
            .first()
        )
        if earlier is not None and earlier.status == REJECTED:
            Proposal.objects.filter(pk=earlier.pk).update(
                repeats=earlier.repeats + 1, repeated_at=timezone.now()
            )
            earlier.refresh_from_db()
            return earlier
        if earlier is not None:
            return earlier
        proposal = Proposal.objects.create(
            kind=kind.name,
            agent=agent,
            target=target,
            payload={**payload, "writes": writes},
            previous_body=previous_body,
            base_hash=base_hash,
            base_hashes=hashes,
            reasons=list(reasons),
            reason=words,
            source=source,
            requested_by=str(asked)[:80],
            run=run,
            shape=shape,
        )
        for name, hook in list(_PROPOSED_HOOKS.items()):
            transaction.on_commit(lambda hook=hook, name=name: _call_hook(name, hook, proposal))
    return proposal


_NOT_SHAPE = {"writes", "reason_items"}  # how it was explained is not what it asks


def shape_of(kind: str, agent_id: Any, target: str, payload: dict) -> str:
    """What makes two asks the same ask: kind, agent, target and payload (not the reasons,
    the source or the moment)."""
    key = json.dumps(
        [kind, agent_id, target, {k: v for k, v in payload.items() if k not in _NOT_SHAPE}],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


# Called after a new pending proposal is committed (standing rules apply it, memory.jobs).
_PROPOSED_HOOKS: dict[str, Callable[[Proposal], None]] = {}


def on_proposed(name: str, hook: Callable[[Proposal], None]) -> None:
    """Call `hook(proposal)` after every new proposal is committed (failures logged)."""
    _PROPOSED_HOOKS[name] = hook


def _call_hook(name: str, hook: Callable[[Proposal], None], proposal: Proposal) -> None:
    try:
        hook(proposal)
    except Exception:
        logger.exception("on_proposed hook %s failed for proposal %s", name, proposal.pk)


def _claim(proposal: Proposal, status: str, *, by: str, now) -> None:
    """The exactly-once gate: move a pending row to `status`, or raise Conflict."""
    updated = Proposal.objects.filter(pk=proposal.pk, status=PENDING).update(
        status=status, decided_at=now, decided_by=by
    )
    if updated != 1:
        current = Proposal.objects.filter(pk=proposal.pk).values_list("status", flat=True).first()
        if current is None:
            raise NotFound(f"No proposal {proposal.pk}.")
        raise Conflict(f"Proposal {proposal.pk} was already decided ({current}).", status=current)


def _stored_or_404(proposal: Proposal) -> Proposal:
    row = Proposal.objects.filter(pk=proposal.pk).first()
    if row is None:
        raise NotFound(f"No proposal {proposal.pk}.")
    return row


def _decision_attributed(row: Proposal, what: str, by: str):
    """The versions an approval or undo writes name who decided, the proposal, its run and
    the source that asked for it."""
    return attributed(
        actor=by,
        source=row.source,
        proposal=row.pk,
        run=row.run_id,
        note=f"{what} of proposal #{row.pk}",
    )


def applied_writes(proposal: Proposal) -> dict[str, str | None]:
    """{path: text or None} that approving wrote: the owner's edited or partial texts when
    there were any, else the plan."""
    return dict(proposal.applied_writes or {}) or planned_writes(proposal)


def _check_texts(row: Proposal, texts: dict | None) -> None:
    """An edited approval names the files it edits, each with its text: a missing or null
    text is refused (422) — it would otherwise delete the file."""
    if texts is None:
        return
    if not isinstance(texts, dict) or not texts:
        raise InvalidInput("`texts` names at least one file, each with its edited text.")
    for path, text in texts.items():
        if not isinstance(text, str):
            raise InvalidInput(
                f"The edited text of {path} is missing: give the whole text (an edit never "
                "deletes a file; reject the proposal instead)."
            )


def _chosen_writes(
    row: Proposal,
    *,
    paths: list[str] | None,
    texts: dict[str, str] | None,
    hunks: dict[str, list] | None,
) -> tuple[dict[str, str | None], dict]:
    """What this decision writes, and how it differs from the plan (for `decision`)."""
    _check_texts(row, texts)
    writes = planned_writes(row)
    previous = previous_texts(row)
    decision: dict = {}
    chosen = list(writes)
    if paths is not None:
        unknown = sorted(set(paths) - set(writes))
        if unknown:
            raise InvalidInput(f"Proposal {row.pk} does not change {', '.join(unknown)}.")
        if not paths:
            raise InvalidInput("Choose at least one page to apply, or reject the proposal.")
        chosen = [path for path in writes if path in set(paths)]
        if len(chosen) < len(writes):
            decision["pages"] = chosen
    out = {path: writes[path] for path in chosen}
    for path, kept in (hunks or {}).items():
        if path not in out or out[path] is None:
            raise InvalidInput(f"{path} is not a text this proposal rewrites.")
        try:
            out[path] = textdiff.apply_hunks(previous.get(path), writes[path], kept)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        decision.setdefault("hunks", {})[path] = [list(h) for h in kept]
    for path, text in (texts or {}).items():
        if path not in out:
            raise InvalidInput(f"Proposal {row.pk} does not change {path}.")
        if out[path] is None:
            raise InvalidInput(f"{path} is deleted by this proposal: there is no text to edit.")
        if text != writes[path]:
            out[path] = text
            decision.setdefault("edited", []).append(path)
    return out, decision


def _edited_lines(row: Proposal, lines: list | None, heading: str | None) -> dict:
    """The payload an append is applied with: the owner's `lines` / `heading` instead of
    the proposed ones (validated by the kind). InvalidInput for a kind that adds no lines."""
    payload = {key: value for key, value in (row.payload or {}).items() if key != "writes"}
    if lines is None and heading is None:
        return payload
    if not appends(row):
        raise InvalidInput(f"Proposal {row.pk} adds no lines: edit its `texts` instead.")
    if lines is not None:
        payload["lines"] = lines
    if heading is not None:
        payload["heading"] = heading
    return payload


def approve(
    proposal: Proposal,
    *,
    by: str,
    paths: list[str] | None = None,
    texts: dict[str, str] | None = None,
    hunks: dict[str, list] | None = None,
    lines: list | None = None,
    heading: str | None = None,
    skip_stale: bool = False,
    extra: dict | None = None,
) -> Proposal:
    """Apply a pending proposal exactly once. Returns it, refreshed.

    The owner may apply part of it — `paths`: only these pages of a batch; `hunks`:
    {path: [[i1, i2, j1, j2], …]} the changes of a rewrite to keep (the others keep the
    old text) — and may change what is written — `texts`: {path: edited text} (a missing
    or null text is InvalidInput: an edit never deletes), or for lines to add, `lines`
    and `heading`. History keeps both: the plan in `payload["writes"]`, what was written in
    `applied_writes`.

    An append (lines for MEMORY.md) is applied to the file as it is now, whatever was
    written since it was proposed; what it replaced is kept for undo (`replaced_body`).

    Raises Conflict when it is no longer pending (nothing written). A replacing proposal
    whose target changed since it was proposed: a single-file proposal becomes
    `superseded` (Conflict, target untouched; `reapply` merges it into the current text);
    a batch stays pending and Conflict names the pages that changed — with `skip_stale`
    the other pages apply and those are recorded as superseded pages (a batch never
    strands on one page). Atomic: the row moves to `approved` only if every file was
    written. Other pending replacing proposals whose base this approval changed are
    superseded (they could only be 409 now); their ids are in `decision["superseded"]`.
    """
    # What to write comes from the row as stored (never changed after propose), not from
    # the caller's copy.
    row = _stored_or_404(proposal)
    if row.status != PENDING:
        raise Conflict(f"Proposal {row.pk} was already decided ({row.status}).", status=row.status)
    if appends(row) and texts is None:
        return _approve_append(row, by=by, payload=_edited_lines(row, lines, heading), extra=extra)
    if lines is not None or heading is not None:
        _edited_lines(row, lines, heading)  # InvalidInput: this kind adds no lines
    writes, decision = _chosen_writes(row, paths=paths, texts=texts, hunks=hunks)
    decision.update(extra or {})
    # Lock order everywhere: files first, then the database (consolidation proposes while
    # holding MEMORY.md's lock). The locks are held until after the commit, so nobody can
    # slip a write between the hash check and the commit.
    with _decision_attributed(row, "approval", by), _locked_all(list(writes)):
        with transaction.atomic():
            current = {path: workspace.file_hash(path) for path in writes}
            if appends(row):
                _refuse_stale_edit(row, current)
            writes, stale = _without_stale(row, writes, current, decision, skip=skip_stale)
            _claim(proposal, SUPERSEDED if stale else APPROVED, by=by, now=timezone.now())
            if not stale:
                _write_approved(row, writes, current, decision)
    proposal.refresh_from_db()
    if stale:
        raise Conflict(
            f"Proposal {proposal.pk} is superseded: {', '.join(sorted(stale))} changed since "
            "it was proposed.",
            status=proposal.status,
        )
    _after_write(proposal)
    return proposal


def _refuse_stale_edit(row: Proposal, current: dict[str, str]) -> None:
    """A whole edited text of an append replaces the file: only over the text it was
    proposed on. Conflict otherwise, the proposal left pending (its lines still apply)."""
    bases = _base_hashes(row)
    changed = sorted(path for path, value in current.items() if value != bases.get(path))
    if changed:
        raise Conflict(
            f"{', '.join(changed)} changed since proposal {row.pk} was made, so an edited "
            "whole text would undo that change: edit its lines instead, or approve it as "
            "it is.",
            status=PENDING,
        )


def _approve_append(row: Proposal, *, by: str, payload: dict, extra: dict | None) -> Proposal:
    """Approve an append: its text computed against the file as it is now, under the
    file's lock, then written like any approval (exactly once, row first, file last).

    Before writing, the row says so (`decision["applying"]`, committed on its own): an
    approval killed after its write but before its commit leaves that mark, and the retry
    finds the lines on disk — written by the killed one — and records them instead of
    adding them twice, whatever was written to the file since."""
    kind = get_kind(row.kind)
    paths = list(planned_writes(row))
    decision = dict(extra or {})
    if payload != {k: v for k, v in (row.payload or {}).items() if k != "writes"}:
        decision["edited"] = paths
    with _decision_attributed(row, "approval", by), _locked_all(paths):
        before = {path: workspace.read(path) for path in paths}
        current = {path: workspace.hash_text(text) for path, text in before.items()}
        found = _written_by_a_killed_approval(row, before, current, payload, decision)
        if found is not None:
            writes, before = found
        else:
            writes = kind.changes(agent=row.agent, payload=payload)
            Proposal.objects.filter(pk=row.pk, status=PENDING).update(
                decision={"applying": {p: workspace.hash_text(t) for p, t in writes.items()}}
            )
        with transaction.atomic():
            _claim(row, APPROVED, by=by, now=timezone.now())
            _write_approved(row, writes, current, decision, replaced=before)
    row.refresh_from_db()
    _after_write(row)
    return row


def _written_by_a_killed_approval(
    row: Proposal,
    before: dict[str, str | None],
    current: dict[str, str],
    payload: dict,
    decision: dict,
) -> tuple[dict[str, str | None], dict[str, str | None]] | None:
    """(what is on disk, what it replaced) when an approval of this append was killed after
    writing it: the planned text is on disk, or — the row marked as being applied — its
    lines stand together in the file. None otherwise."""
    if decision.get("edited"):
        return None
    planned = planned_writes(row)
    bases = _base_hashes(row)
    if all(current[p] == workspace.hash_text(planned[p]) for p in planned) and any(
        current[p] != bases.get(p) for p in planned
    ):
        return dict(planned), previous_texts(row)
    if not (row.decision or {}).get("applying"):
        return None
    run = [f"{line}\n" for line in payload.get("lines") or []]
    replaced: dict[str, str | None] = {}
    for path, text in before.items():
        lines = textdiff.lines_of(text)
        at = textdiff.find_run(lines, run, near=len(lines))
        if at is None:
            return None
        replaced[path] = "".join(lines[:at] + lines[at + len(run) :])
    return dict(before), replaced


def _without_stale(
    row: Proposal,
    writes: dict[str, str | None],
    current: dict[str, str],
    decision: dict,
    *,
    skip: bool,
) -> tuple[dict[str, str | None], list[str]]:
    """(what to write, the targets changed since the proposal). A target already holding
    the planned bytes was written by an approval that died before its commit (see the
    module docstring): it counts as applied. In a batch with some pages changed, those
    pages are left out and recorded in `decision` when `skip`, else Conflict (pending).
    An append is never stale (its edited text was checked by `_refuse_stale_edit`)."""
    if appends(row):
        return writes, []
    bases = _base_hashes(row)
    stale = [
        path
        for path, text in writes.items()
        if current[path] not in (bases.get(path), workspace.hash_text(text))
    ]
    batch = _is_batch(_KINDS.get(row.kind)) or len(planned_writes(row)) > 1
    if not (stale and batch and len(stale) < len(writes)):
        return writes, stale
    if not skip:
        raise Conflict(
            f"Proposal {row.pk}: {', '.join(sorted(stale))} changed since it was "
            "proposed. Apply the other pages (they mark these superseded), or "
            "reject the batch.",
            status=PENDING,
            stale=sorted(stale),
        )
    decision["superseded_pages"] = sorted(stale)
    return {path: text for path, text in writes.items() if path not in stale}, []


def _write_approved(
    row: Proposal,
    writes: dict[str, str | None],
    current: dict[str, str],
    decision: dict,
    *,
    replaced: dict[str, str | None] | None = None,
) -> None:
    """Record what the approval writes on its (claimed) row, then write it — last, so a
    failing write raises out of the caller's atomic block and rolls the row back — and
    supersede the pending proposals it made impossible. `replaced`: what the files held
    when that is not the proposal's base (an append, a re-apply), kept for undo."""
    planned = {path: workspace.hash_text(text) for path, text in writes.items()}
    own = {} if writes == planned_writes(row) else writes
    kept = {} if replaced is None or replaced == previous_texts(row) else replaced
    Proposal.objects.filter(pk=row.pk).update(
        applied_hashes=planned, applied_writes=own, decision=decision, replaced_body=kept
    )
    _write_texts({p: t for p, t in writes.items() if current[p] != planned[p]})
    for path in writes:
        if current[path] == planned[path]:
            # Already on disk: its version is this approval's, not an "edited outside the
            # app" one.
            workspace.adopt(path)
    superseded = _supersede_siblings(row, written=planned)
    if superseded:
        decision["superseded"] = superseded
        Proposal.objects.filter(pk=row.pk).update(decision=decision)


def _supersede_siblings(row: Proposal, *, written: dict[str, str]) -> list[int]:
    """Supersede the other pending single-file proposals that replace content on a path
    just written, whose base is not the new text: approving them could only be 409 now.
    Appends are never superseded: they apply to the file as it is."""
    ids = []
    for other in Proposal.objects.filter(status=PENDING, target__in=list(written)).exclude(
        pk=row.pk
    ):
        other_writes = planned_writes(other)
        if len(other_writes) != 1 or _is_batch(_KINDS.get(other.kind)) or appends(other):
            continue
        (path,) = other_writes
        if path in written and _base_hashes(other).get(path) != written[path]:
            ids.append(other.pk)
    if ids:
        Proposal.objects.filter(pk__in=ids, status=PENDING).update(
            status=SUPERSEDED, decided_at=timezone.now(), decided_by=f"superseded by #{row.pk}"
        )
    return ids


def apply_now(proposal: Proposal, *, by: str, extra: dict | None = None) -> Proposal:
    """Auto-apply (autonomous agents, standing rules): `approve` with the same stale-base
    check; nobody is there to choose pages, so a batch with a changed page is superseded
    whole (Conflict), nothing of it written."""
    try:
        return approve(proposal, by=by, extra=extra)
    except Conflict as exc:
        if exc.extra.get("stale") is None:
            raise
        Proposal.objects.filter(pk=proposal.pk, status=PENDING).update(
            status=SUPERSEDED, decided_at=timezone.now(), decided_by=by
        )
        proposal.refresh_from_db()
        raise Conflict(
            f"Proposal {proposal.pk} is superseded: {', '.join(exc.extra['stale'])} changed "
            "since it was proposed.",
            status=proposal.status,
        ) from None


def reject(proposal: Proposal, *, by: str) -> Proposal:
    """Reject a pending proposal; writes nothing. Conflict when no longer pending, and
    when its change is already on disk (every changed target holds exactly its planned
    bytes: an approval died before its commit) — rejecting would leave history saying
    "not applied" over an applied change; approve it to record it, then undo."""
    row = _stored_or_404(proposal)
    writes = planned_writes(row)
    bases = _base_hashes(row)
    with _locked_all(list(writes)):
        with transaction.atomic():
            _claim(proposal, REJECTED, by=by, now=timezone.now())
            changing = [
                path
                for path, text in writes.items()
                if workspace.hash_text(text) != bases.get(path)
            ]
            if changing and all(
                workspace.file_hash(path) == workspace.hash_text(writes[path]) for path in changing
            ):
                raise Conflict(
                    f"Proposal {proposal.pk}'s change is already on disk (an approval was "
                    "interrupted before it was recorded): approve it to record it, then undo "
                    "it if it is not wanted.",
                    status=PENDING,
                )
    proposal.refresh_from_db()
    return proposal


@dataclass(frozen=True)
class Outcome:
    """How one proposal of a bulk decision went: `decided`, its status now, why it was
    refused (`detail`, "" when decided), and the proposals its approval superseded."""

    id: int
    decided: bool
    status: str
    detail: str = ""
    superseded: tuple[int, ...] = ()


def decide_each(ids: list[int], *, approve_it: bool, by: str) -> list[Outcome]:
    """Approve (or reject) several proposals, oldest first — each exactly as `approve` /
    `reject` alone would, in its own transaction, so one refusal never stops the others.
    One Outcome per id asked for (an unknown id: not decided, status ""), in that order:
    appends of one file all apply, each to the file as the one before left it."""
    rows = list(Proposal.objects.filter(pk__in=ids).order_by("created_at", "id"))
    outcomes: dict[int, Outcome] = {}
    for row in rows:
        try:
            if approve_it:
                done = approve(row, by=by, extra={"bulk": True})
            else:
                done = reject(row, by=by)
        except (Conflict, InvalidInput, NotFound) as exc:
            status = Proposal.objects.filter(pk=row.pk).values_list("status", flat=True).first()
            outcomes[row.pk] = Outcome(row.pk, False, status or "", exc.message)
        else:
            others = tuple((done.decision or {}).get("superseded") or ())
            outcomes[row.pk] = Outcome(row.pk, True, done.status, "", others)
    return [
        outcomes.get(number) or Outcome(number, False, "", f"No proposal {number}.")
        for number in dict.fromkeys(ids)
    ]


def decide_many(
    ids: list[int], *, approve_it: bool, by: str
) -> tuple[list[int], list[tuple[int, str]]]:
    """`decide_each`, as (ids decided oldest first, [(id, why it was refused)])."""
    outcomes = decide_each(ids, approve_it=approve_it, by=by)
    order = {
        row: n
        for n, row in enumerate(
            Proposal.objects.filter(pk__in=ids)
            .order_by("created_at", "id")
            .values_list("pk", flat=True)
        )
    }
    done = sorted((o.id for o in outcomes if o.decided), key=lambda n: order.get(n, 0))
    refused = [(o.id, o.detail) for o in outcomes if not o.decided]
    return done, refused


def decide(proposal: Proposal, *, approve_it: bool, by: str) -> Proposal:
    """approve() or reject(), for interfaces that take the decision as a flag."""
    return approve(proposal, by=by) if approve_it else reject(proposal, by=by)


def undo(proposal: Proposal, *, by: str) -> Proposal:
    """Put back exactly what an applied proposal replaced (byte for byte; a file that did
    not exist is removed again), once. Returns it, refreshed.

    An append whose file changed since (later appends, a chat line) is undone by taking
    out exactly the lines it added, where they now stand; everything written since stays.

    Conflict (nothing written) when the proposal was not applied (pending, rejected,
    superseded), was already undone, or any target changed since it was applied (an
    append: its lines were changed or removed since). The Conflict names the files, so a
    page can offer their history (restore a version instead).
    """
    row = _stored_or_404(proposal)
    # Only what the approval wrote is put back (a batch approved in part: its pages).
    writes = {path: text for path, text in planned_writes(row).items()}
    if row.applied_hashes:
        writes = {path: text for path, text in writes.items() if path in row.applied_hashes}
    previous = {path: text for path, text in replaced_texts(row).items() if path in writes}
    with _decision_attributed(row, "undo", by), _locked_all(list(writes)):
        with transaction.atomic():
            updated = Proposal.objects.filter(
                pk=proposal.pk, status=APPROVED, undone_at__isnull=True
            ).update(undone_at=timezone.now(), undone_by=by)
            if updated != 1:
                current = Proposal.objects.filter(pk=proposal.pk).first()
                if current is None:
                    raise NotFound(f"No proposal {proposal.pk}.")
                if current.status != APPROVED:
                    raise Conflict(
                        f"Proposal {proposal.pk} is {current.status}: nothing of it was applied.",
                        status=current.status,
                    )
                raise Conflict(f"Proposal {proposal.pk} was already undone.", status=current.status)
            # applied_hashes is written once, by the approval that committed before this
            # claim could succeed; re-read it now that the row is ours.
            applied = dict(
                Proposal.objects.filter(pk=proposal.pk).values_list("applied_hashes", flat=True)[0]
                or {}
            )
            changed = [path for path in writes if workspace.file_hash(path) != applied.get(path)]
            if changed and appends(row):
                previous = _without_added_lines(row, previous, changed)
            elif changed:
                # Raising inside the block rolls back the undone_at claim.
                raise Conflict(
                    f"Cannot undo proposal {proposal.pk}: {', '.join(sorted(changed))} changed "
                    "since it was applied.",
                    status=APPROVED,
                    paths=sorted(changed),
                )
            _write_texts(previous)
    proposal.refresh_from_db()
    _after_write(proposal)
    return proposal


def _without_added_lines(
    row: Proposal, previous: dict[str, str | None], changed: list[str]
) -> dict[str, str | None]:
    """For each changed file of an append: its current text less the lines the approval
    added (each run of added lines found where it now stands, nearest to where it was
    put). Conflict when a run is no longer there as it was added."""
    out = dict(previous)
    written = applied_writes(row)
    for path in changed:
        before = textdiff.lines_of(previous.get(path))
        after = textdiff.lines_of(written.get(path))
        current = textdiff.lines_of(workspace.read(path))
        runs = [
            (j1, after[j1:j2], before[i1:i2])
            for tag, i1, i2, j1, j2 in textdiff.line_opcodes(before, after)
            if tag != "equal"
        ]
        for start, added, original in reversed(runs):
            at = textdiff.find_run(current, added, near=start)
            if at is None:
                raise Conflict(
                    f"Cannot undo proposal {row.pk}: the lines it added to {path} were "
                    "changed or removed since.",
                    status=APPROVED,
                    paths=[path],
                )
            current[at : at + len(added)] = original
        out[path] = "".join(current)
    return out


def expire(proposal: Proposal, *, by: str = "expiry") -> Proposal:
    """A pending proposal that waited too long becomes `expired`: nothing is written, and
    deciding it afterwards is 409. Conflict when it is no longer pending."""
    with transaction.atomic():
        _claim(proposal, EXPIRED, by=by, now=timezone.now())
    proposal.refresh_from_db()
    return proposal


def supersede_pending(
    kind: str, *, agent: Any, except_id: int | None = None, target: str | None = None
) -> int:
    """Mark the pending proposals of `kind` for `agent` (None: the user scope) superseded —
    a newer one replaces them. `target` narrows to one file (e.g. one fact). Returns how
    many were superseded; approving one of them afterwards is 409."""
    rows = Proposal.objects.filter(kind=kind, status=PENDING)
    rows = rows.filter(agent__isnull=True) if agent is None else rows.filter(agent=agent)
    if target is not None:
        rows = rows.filter(target=target)
    if except_id is not None:
        rows = rows.exclude(pk=except_id)
    return rows.update(status=SUPERSEDED, decided_at=timezone.now(), decided_by="superseded")


def can_undo(proposal: Proposal) -> bool:
    """Whether `undo` may be tried: the proposal was applied and not undone yet (undo may
    still be 409 when a target changed since)."""
    return proposal.status == APPROVED and proposal.undone_at is None


def pending_count(*, agent: Any = None) -> int:
    """How many proposals wait for a person (the badge, `GET /api/stats`); with `agent`,
    only that agent's."""
    pending = Proposal.objects.filter(status=PENDING)
    if agent is not None:
        pending = pending.filter(agent=agent)
    return pending.count()


# --- stale is a step: re-apply on the current text ------------------------------------------


@dataclass(frozen=True)
class FileMerge:
    """One file of a re-apply: the text the proposal was made on, the file now (and its
    hash: what the owner saw, sent back to re-apply), what the proposal wrote, and its
    changes merged into the current text (None for a file it deletes: nothing to merge)."""

    path: str
    base: str | None
    current: str | None
    current_hash: str
    proposed: str | None
    merged: textdiff.Merged | None

    @property
    def stale(self) -> bool:
        return self.merged is not None and self.current != self.base


def reapply_plan(proposal: Proposal) -> list[FileMerge]:
    """What re-applying the proposal on the current text would write, per file, in path
    order (reads the files; writes nothing). InvalidInput when it cannot be re-applied:
    an append (it always applies to the file as it is), a proposal neither pending nor
    superseded, one whose files did not change since (approve it), or one that deletes a
    file that changed since."""
    row = _stored_or_404(proposal)
    if appends(row):
        raise InvalidInput(
            f"Proposal {row.pk} adds lines: it applies to the file as it is, nothing to re-apply."
        )
    if row.status not in (PENDING, SUPERSEDED):
        raise InvalidInput(
            f"Proposal {row.pk} is {row.status}: only a pending or superseded proposal is "
            "re-applied."
        )
    base = previous_texts(row)
    out = []
    for path, proposed in sorted(planned_writes(row).items()):
        current, current_hash = workspace.read_with_hash(path)
        if current == base.get(path) or current == proposed:
            out.append(FileMerge(path, base.get(path), current, current_hash, proposed, None))
            continue
        if proposed is None:
            raise InvalidInput(
                f"Proposal {row.pk} deletes {path}, which changed since it was proposed: "
                "there is nothing to merge; reject it, or delete the file yourself."
            )
        merged = textdiff.merge3(base.get(path), proposed, current)
        out.append(FileMerge(path, base.get(path), current, current_hash, proposed, merged))
    if row.status == PENDING and not any(item.stale for item in out):
        raise InvalidInput(f"Proposal {row.pk} applies as it is: nothing changed since.")
    return out


def reapply(
    proposal: Proposal,
    *,
    by: str,
    seen: dict[str, str],
    texts: dict[str, str] | None = None,
) -> tuple[Proposal, bool]:
    """Re-apply a stale proposal on the current text, exactly once: its changes merged
    into each changed file (`reapply_plan`; conflicting hunks left out), or the owner's
    resolution of a file in `texts`. `seen`: {path: hash} of every file as the owner saw
    it — a file changed again since is Conflict (409), nothing done.

    Pending: an approval of the merged texts (edited), recorded in `decision["reapplied"]`
    → (the proposal, False). Superseded: a new pending proposal of the merged texts based
    on the current files, pointing at this one (`reapplies`; a second re-apply is
    Conflict) → (the new proposal, True)."""
    plan = reapply_plan(proposal)
    row = _stored_or_404(proposal)
    _check_seen_and_texts(row, plan, seen, texts)
    chosen = {
        item.path: (texts or {}).get(item.path, item.merged.text) if item.stale else item.proposed
        for item in plan
    }
    record = {
        item.path: {
            "dropped": len(item.merged.conflicts),
            "edited": item.path in (texts or {}),
        }
        for item in plan
        if item.stale
    }
    paths = [item.path for item in plan]
    with _decision_attributed(row, "re-apply", by), _locked_all(paths):
        with transaction.atomic():
            before = {path: workspace.read(path) for path in paths}
            current = {path: workspace.hash_text(text) for path, text in before.items()}
            moved = sorted(path for path in paths if current[path] != seen.get(path))
            if moved:
                raise Conflict(
                    f"{', '.join(moved)} changed again since you looked: reload to merge "
                    "with the newest text.",
                    status=row.status,
                )
            if row.status == PENDING:
                _claim(row, APPROVED, by=by, now=timezone.now())
                decision = {"reapplied": record, "edited": sorted(record)}
                _write_approved(row, chosen, current, decision, replaced=before)
                made, created = row, False
            else:
                made, created = _reapplied_as_new(row, chosen, before, by=by), True
    made.refresh_from_db()
    if not created:
        _after_write(made)
    return made, created


def _check_seen_and_texts(
    row: Proposal, plan: list[FileMerge], seen: object, texts: dict | None
) -> None:
    if not isinstance(seen, dict) or any(item.path not in seen for item in plan):
        raise InvalidInput(
            "`base_hashes` names every file of the proposal with the hash you saw "
            "(GET …/reapply answers them)."
        )
    _check_texts(row, texts)
    stale = {item.path for item in plan if item.stale}
    for path in texts or {}:
        if path not in stale:
            raise InvalidInput(f"{path} did not change since the proposal: nothing to resolve.")


def _reapplied_as_new(
    row: Proposal, writes: dict[str, str | None], before: dict[str, str | None], *, by: str
) -> Proposal:
    """The merged texts as a new pending proposal based on the files as they are now.
    The database's unique `reapplies` makes it once: a second is Conflict."""
    payload = {key: value for key, value in (row.payload or {}).items() if key != "writes"}
    hashes = {path: workspace.hash_text(text) for path, text in before.items()}
    single = len(writes) == 1 and not _is_batch(_KINDS.get(row.kind))
    try:
        with transaction.atomic():
            made = Proposal.objects.create(
                kind=row.kind,
                agent=row.agent,
                target=row.target,
                payload={**payload, "writes": writes},
                previous_body=next(iter(before.values())) if single else before,
                base_hash=next(iter(hashes.values())) if single else "",
                base_hashes=hashes,
                reasons=[*row.reasons, f"Re-applied from #{row.pk} on the current text by {by}."],
                reason=row.reason,
                source=row.source,
                requested_by=row.requested_by,
                run=row.run,
                reapplies=row,
                shape=shape_of(
                    row.kind, row.agent_id, row.target, {**payload, "reapplies": row.pk}
                ),
            )
    except IntegrityError:
        other = Proposal.objects.filter(reapplies=row).values_list("pk", flat=True).first()
        raise Conflict(
            f"Proposal {row.pk} was already re-applied as #{other}.", status=row.status
        ) from None
    for name, hook in list(_PROPOSED_HOOKS.items()):
        transaction.on_commit(lambda hook=hook, name=name: _call_hook(name, hook, made))
    return made


def current_texts(proposal: Proposal) -> dict[str, str | None]:
    """{path: text or None} of every file the proposal changes, as it is now (for a card:
    what changed since it was proposed)."""
    return {path: workspace.read(path) for path in sorted(planned_writes(proposal))}


def reapplied_as(proposal: Proposal) -> int | None:
    """The id of the proposal that re-applied this one on the current text, if any."""
    return Proposal.objects.filter(reapplies=proposal).values_list("pk", flat=True).first()
