"""Proposal operations (SPEC §7): the only code that changes a proposal's status.

Every interface — REST, admin, management pages, tasks — calls these functions, so every
way in obeys the same rules:

- **Exactly once.** A decision is a conditional update on `status='pending'` inside
  `transaction.atomic()`; whoever updates zero rows lost the race and gets `Conflict`
  (409). This holds across threads and processes because the database decides.
- **Stale base.** Before writing, under the file lock of every path it changes, each
  file's current hash is compared with the hash it had when the proposal was made. Any
  mismatch: the proposal becomes `superseded` (committed), `Conflict` is raised and no
  file is touched.
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
from typing import Any, Protocol, runtime_checkable

from django.db import transaction
from django.utils import timezone

from memory import textdiff, workspace
from memory.attribution import attributed
from memory.errors import Conflict, InvalidInput, NotFound
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
    """

    name: str

    def changes(self, *, agent: Any, payload: dict) -> dict[str, str | None]: ...

    def after_write(self, proposal: Proposal) -> None: ...


class BaseKind(ABC):
    """Convenience base: a single-path kind with nothing to do after writing."""

    name: str = ""
    batch: bool = False

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


def stale_paths(proposal: Proposal) -> set[str]:
    """The paths the proposal writes whose file changed since it was proposed: its
    recorded base hash no longer matches the file (what approving them would refuse)."""
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
) -> Proposal:
    """Create a pending proposal; nothing under MY_AGENT_HOME is written.

    The kind computes the new texts against the files as they are now; those texts are
    stored in `payload["writes"]` ({path: text or None}) so the diff shows exactly what
    approving would write and approving writes exactly that. The previous text and hash of
    every path are snapshotted under the paths' file locks (single-path kinds: text or None
    in `previous_body` and its hash in `base_hash`; batches: `{path: text or None}`).
    Every path's hash is also kept in `base_hashes`.

    Raises InvalidInput for an unknown kind, and whatever the kind raises for a bad payload.
    """
    kind = get_kind(kind_name)
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
            source=source,
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


def _chosen_writes(
    row: Proposal,
    *,
    paths: list[str] | None,
    texts: dict[str, str | None] | None,
    hunks: dict[str, list] | None,
) -> tuple[dict[str, str | None], dict]:
    """What this decision writes, and how it differs from the plan (for `decision`)."""
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
        if text is not None and not isinstance(text, str):
            raise InvalidInput("An edited text must be text.")
        if text != writes[path]:
            out[path] = text
            decision.setdefault("edited", []).append(path)
    return out, decision


def approve(
    proposal: Proposal,
    *,
    by: str,
    paths: list[str] | None = None,
    texts: dict[str, str | None] | None = None,
    hunks: dict[str, list] | None = None,
    skip_stale: bool = False,
    extra: dict | None = None,
) -> Proposal:
    """Apply a pending proposal exactly once. Returns it, refreshed.

    The owner may apply part of it — `paths`: only these pages of a batch; `hunks`:
    {path: [[i1, i2, j1, j2], …]} the changes of a rewrite to keep (the others keep the
    old text) — and may change what is written — `texts`: {path: edited text}. History
    keeps both: the plan in `payload["writes"]`, what was written in `applied_writes`.

    Raises Conflict when it is no longer pending (nothing written). A target changed since
    it was proposed: a single-file proposal becomes `superseded` (Conflict, target
    untouched); a batch stays pending and Conflict names the pages that changed — with
    `skip_stale` the other pages apply and those are recorded as superseded pages (a
    batch never strands on one page). Atomic: the row moves to `approved` only if every
    file was written. Other pending single-file proposals whose base this approval changed
    are superseded (they could only be 409 now); their ids are in `decision["superseded"]`.
    """
    # What to write comes from the row as stored (never changed after propose), not from
    # the caller's copy.
    row = _stored_or_404(proposal)
    if row.status != PENDING:
        raise Conflict(f"Proposal {row.pk} was already decided ({row.status}).", status=row.status)
    writes, decision = _chosen_writes(row, paths=paths, texts=texts, hunks=hunks)
    decision.update(extra or {})
    # Lock order everywhere: files first, then the database (consolidation proposes while
    # holding MEMORY.md's lock). The locks are held until after the commit, so nobody can
    # slip a write between the hash check and the commit.
    with _decision_attributed(row, "approval", by), _locked_all(list(writes)):
        with transaction.atomic():
            current = {path: workspace.file_hash(path) for path in writes}
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
    pages are left out and recorded in `decision` when `skip`, else Conflict (pending)."""
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
    row: Proposal, writes: dict[str, str | None], current: dict[str, str], decision: dict
) -> None:
    """Record what the approval writes on its (claimed) row, then write it — last, so a
    failing write raises out of the caller's atomic block and rolls the row back — and
    supersede the pending proposals it made impossible."""
    planned = {path: workspace.hash_text(text) for path, text in writes.items()}
    own = {} if writes == planned_writes(row) else writes
    Proposal.objects.filter(pk=row.pk).update(
        applied_hashes=planned, applied_writes=own, decision=decision
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
    """Supersede the other pending single-file proposals on a path just written, whose
    base is not the new text: approving them could only be 409 now."""
    ids = []
    for other in Proposal.objects.filter(status=PENDING, target__in=list(written)).exclude(
        pk=row.pk
    ):
        other_writes = planned_writes(other)
        if len(other_writes) != 1 or _is_batch(_KINDS.get(other.kind)):
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


def decide_many(
    ids: list[int], *, approve_it: bool, by: str
) -> tuple[list[int], list[tuple[int, str]]]:
    """Approve (or reject) several proposals, oldest first — each exactly as `approve` /
    `reject` alone would, in its own transaction, so one refusal never stops the others.
    Returns (ids decided, [(id, why it was refused)])."""
    done: list[int] = []
    refused: list[tuple[int, str]] = []
    rows = list(Proposal.objects.filter(pk__in=ids).order_by("created_at", "id"))
    found = {row.pk for row in rows}
    refused += [(number, f"No proposal {number}.") for number in ids if number not in found]
    for row in rows:
        try:
            if approve_it:
                approve(row, by=by, extra={"bulk": True})
            else:
                reject(row, by=by)
        except (Conflict, InvalidInput, NotFound) as exc:
            refused.append((row.pk, exc.message))
        else:
            done.append(row.pk)
    return done, refused


def decide(proposal: Proposal, *, approve_it: bool, by: str) -> Proposal:
    """approve() or reject(), for interfaces that take the decision as a flag."""
    return approve(proposal, by=by) if approve_it else reject(proposal, by=by)


def undo(proposal: Proposal, *, by: str) -> Proposal:
    """Put back exactly what an applied proposal replaced (byte for byte; a file that did
    not exist is removed again), once. Returns it, refreshed.

    Conflict (nothing written) when the proposal was not applied (pending, rejected,
    superseded), was already undone, or any target changed since it was applied.
    """
    row = _stored_or_404(proposal)
    # Only what the approval wrote is put back (a batch approved in part: its pages).
    writes = {path: text for path, text in planned_writes(row).items()}
    if row.applied_hashes:
        writes = {path: text for path, text in writes.items() if path in row.applied_hashes}
    previous = {path: text for path, text in previous_texts(row).items() if path in writes}
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
            if changed:
                # Raising inside the block rolls back the undone_at claim.
                raise Conflict(
                    f"Cannot undo proposal {proposal.pk}: {', '.join(sorted(changed))} changed "
                    "since it was applied.",
                    status=APPROVED,
                )
            _write_texts(previous)
    proposal.refresh_from_db()
    _after_write(proposal)
    return proposal


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
