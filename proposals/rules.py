"""Standing rules (SPEC §7): "proposals of this kind from this job of this agent apply at
once" — the owner's choice instead of the same click again and again.

- **Scoped to where it was made.** A rule names the agent that asked on the card it was
  made on (`Proposal.requested_by`, also for user-scope kinds such as facts, whose
  `agent` is null) and its job (`source`): it never applies to another agent's job of the
  same name. It never overwrites or deletes a fact that the same agent's same job did not
  write last (the kind's `may_apply_unattended`): the owner's facts are always asked about.

- A rule is created only by the owner (`create_rule`); the code never makes one. After the
  owner approved the same shape (kind, source, agent) RULE_OFFER_AFTER times, the card
  offers it (`offer_for`).
- **Never automatic:** fact hygiene (`fact_review`, SPEC §9) and anything touching
  USER.md. Refused when a rule is made, and again when one would apply.
- A matching rule applies a new proposal through proposals.actions.apply_now (the same
  stale-base check, exactly once), decided by `rule:<id>`; each rule's hits and how many
  of them were undone are counted from the proposals themselves.
- Revoking is one click and keeps the row (`revoked_at`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from memory.errors import Conflict, Forbidden, InvalidInput
from proposals import actions
from proposals.models import Proposal, StandingRule

NEVER_AUTOMATIC_KINDS = frozenset({"fact_review"})
USER_MD = "users/owner/USER.md"
RULE_PREFIX = "rule:"


def may_be_ruled(kind: str, paths: list[str] | None = None) -> bool:
    """False for fact hygiene and anything that writes USER.md."""
    if kind in NEVER_AUTOMATIC_KINDS:
        return False
    # users/owner/USER.md, or the root USER.md of an OpenClaw workspace.
    return not any(path.rsplit("/", 1)[-1] == "USER.md" for path in paths or [])


def create_rule(*, kind: str, source: str, agent: Any, by: str) -> StandingRule:
    """A standing rule for (kind, source, agent): the agent whose job it trusts. Forbidden
    (403) for a kind that may never be automatic; InvalidInput (422) without a job source
    (a person present needs none) or without an agent; Conflict (409) when an active rule
    of that shape exists."""
    actions.get_kind(kind)
    if not may_be_ruled(kind):
        raise Forbidden(f"{kind} proposals always wait for you: fact hygiene is never automatic.")
    if not isinstance(source, str) or not source.startswith("job:"):
        raise InvalidInput("A standing rule names the job it trusts (a source `job:<id>`).")
    if agent is None:
        raise InvalidInput("A standing rule names the agent whose job it trusts.")
    try:
        with transaction.atomic():
            return StandingRule.objects.create(kind=kind, source=source, agent=agent, created_by=by)
    except IntegrityError:
        raise Conflict("A standing rule for exactly this exists already.") from None


def rule_from(proposal: Proposal, *, by: str) -> StandingRule:
    """A standing rule made on a proposal's card: its kind, its job and the agent that
    asked (never every agent's job of that name). InvalidInput when no agent asked."""
    # The agent model through the rule's own field: proposals import nothing of memory
    # above its core (tests/test_layout.py).
    agents = StandingRule._meta.get_field("agent").related_model.objects
    agent = agents.filter(pk=proposal.requested_by).first() if proposal.requested_by else None
    if agent is None:
        raise InvalidInput(
            f"Proposal {proposal.pk} names no agent that asked: a rule needs one to stay scoped."
        )
    return create_rule(kind=proposal.kind, source=proposal.source, agent=agent, by=by)


def revoke_rule(rule: StandingRule, *, by: str) -> StandingRule:
    """Revoke once (Conflict when already revoked); the row is kept."""
    updated = StandingRule.objects.filter(pk=rule.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_by=by
    )
    if updated != 1:
        raise Conflict(f"Rule {rule.pk} was already revoked.")
    rule.refresh_from_db()
    return rule


def matching_rule(proposal: Proposal) -> StandingRule | None:
    """The active rule for this proposal's kind, job and asking agent, if it may be ruled
    at all. A rule with no agent (made before rules were scoped) matches nothing."""
    if not may_be_ruled(proposal.kind, list(actions.planned_writes(proposal))):
        return None
    if not proposal.requested_by:
        return None
    return StandingRule.objects.filter(
        kind=proposal.kind,
        source=proposal.source,
        agent_id=proposal.requested_by,
        revoked_at__isnull=True,
    ).first()


def apply_rule(proposal: Proposal) -> Proposal | None:
    """Apply a pending proposal when a standing rule covers it. Returns it applied, or None
    (no rule, not pending, or refused: a changed base leaves it superseded, as any
    approval would)."""
    proposal.refresh_from_db()
    if proposal.status != Proposal.Status.PENDING:
        return None
    rule = matching_rule(proposal)
    if rule is None or not actions.may_apply_unattended(proposal):
        return None
    try:
        return actions.apply_now(proposal, by=f"{RULE_PREFIX}{rule.pk}", extra={"rule": rule.pk})
    except Conflict:
        return None


def rules_with_counts() -> list[dict]:
    """Every rule, newest first, with its hits and how many of those were undone."""
    out = []
    for rule in StandingRule.objects.select_related("agent"):
        decided = Proposal.objects.filter(decided_by=f"{RULE_PREFIX}{rule.pk}")
        counts = decided.aggregate(
            hits=Count("id", filter=Q(status=Proposal.Status.APPROVED)),
            undone=Count("id", filter=Q(undone_at__isnull=False)),
        )
        hits = counts["hits"] or 0
        out.append(
            {
                "rule": rule,
                "hits": hits,
                "undone": counts["undone"] or 0,
                "undo_rate": (counts["undone"] or 0) / hits if hits else 0.0,
            }
        )
    return out


def offer_for(proposal: Proposal) -> int | None:
    """How many times the owner approved this proposal's shape (kind, source, agent),
    when that is at least MEMORY_RULE_OFFER_AFTER and no rule covers it yet — the card
    then offers a rule. None otherwise."""
    needed = settings.MEMORY_RULE_OFFER_AFTER
    if needed <= 0 or not proposal.source.startswith("job:"):
        return None
    if not may_be_ruled(proposal.kind, list(actions.planned_writes(proposal))):
        return None
    if matching_rule(proposal) is not None:
        return None
    if not proposal.requested_by:
        return None
    approved = Proposal.objects.filter(
        kind=proposal.kind,
        source=proposal.source,
        requested_by=proposal.requested_by,
        status=Proposal.Status.APPROVED,
        undone_at__isnull=True,
    ).exclude(Q(decided_by__startswith=RULE_PREFIX) | Q(decided_by__startswith="auto:"))
    count = approved.count()
    return count if count >= needed else None
