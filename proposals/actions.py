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
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from django.db import transaction
from django.utils import timezone

from memory import workspace
from memory.errors import Conflict, InvalidInput, NotFound
from proposals.models import Proposal

logger = logging.getLogger(__name__)

PENDING = Proposal.Status.PENDING
APPROVED = Proposal.Status.APPROVED
REJECTED = Proposal.Status.REJECTED
SUPERSEDED = Proposal.Status.SUPERSEDED


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
    re-raise, so a batch is all or nothing on disk as well. Caller holds the locks."""
    done: dict[str, str | None] = {}
    try:
        for path, text in texts.items():
            done[path] = workspace.read(path)
            if text is None:
                workspace.delete(path)
            else:
                workspace.write(path, text)
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
    return Proposal.objects.create(
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
    )


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


def approve(proposal: Proposal, *, by: str) -> Proposal:
    """Apply a pending proposal exactly once. Returns it, refreshed.

    Raises Conflict when it is no longer pending (nothing written), and Conflict after
    marking it `superseded` when any target changed since it was proposed (target
    untouched). Atomic: the row moves to `approved` only if every file was written.
    """
    # What to write comes from the row as stored (never changed after propose), not from
    # the caller's copy.
    row = _stored_or_404(proposal)
    writes = planned_writes(row)
    bases = _base_hashes(row)
    stale: list[str] = []
    # Lock order everywhere: files first, then the database (consolidation proposes while
    # holding MEMORY.md's lock). The locks are held until after the commit, so nobody can
    # slip a write between the hash check and the commit.
    planned = {path: workspace.hash_text(text) for path, text in writes.items()}
    with _locked_all(list(writes)):
        with transaction.atomic():
            _claim(proposal, APPROVED, by=by, now=timezone.now())
            current = {path: workspace.file_hash(path) for path in writes}
            # A target already holding the planned bytes was written by an approval that
            # died before its commit (see the module docstring): it counts as applied.
            stale = [
                path for path in writes if current[path] not in (bases.get(path), planned[path])
            ]
            if stale:
                Proposal.objects.filter(pk=proposal.pk).update(status=SUPERSEDED)
            else:
                Proposal.objects.filter(pk=proposal.pk).update(applied_hashes=planned)
                # Last: a failing write raises out of the atomic block and rolls back.
                _write_texts({p: t for p, t in writes.items() if current[p] != planned[p]})
    proposal.refresh_from_db()
    if stale:
        raise Conflict(
            f"Proposal {proposal.pk} is superseded: {', '.join(sorted(stale))} changed since "
            "it was proposed.",
            status=proposal.status,
        )
    _after_write(proposal)
    return proposal


def apply_now(proposal: Proposal, *, by: str) -> Proposal:
    """Auto-apply for autonomous agents: exactly `approve`, with the same stale-base check."""
    return approve(proposal, by=by)


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
    writes = planned_writes(row)
    previous = previous_texts(row)
    with _locked_all(list(writes)):
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
