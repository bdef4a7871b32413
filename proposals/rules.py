"""Standing rules (SPEC §7): "proposals of this kind from this source, for this agent,
apply at once" — the owner's choice instead of the same click again and again.

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
    """A standing rule for (kind, source, agent). Forbidden (403) for a kind that may never
    be automatic; InvalidInput (422) without a job source (a person present needs none);
    Conflict (409) when an active rule of that shape exists."""
    actions.get_kind(kind)
    if not may_be_ruled(kind):
        raise Forbidden(f"{kind} proposals always wait for you: fact hygiene is never automatic.")
    if not isinstance(source, str) or not source.startswith("job:"):
        raise InvalidInput("A standing rule names the job it trusts (a source `job:<id>`).")
    try:
        with transaction.atomic():
            return StandingRule.objects.create(kind=kind, source=source, agent=agent, created_by=by)
    except IntegrityError:
        raise Conflict("A standing rule for exactly this exists already.") from None


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
    """The active rule for this proposal's shape, if it may be ruled at all."""
    if not may_be_ruled(proposal.kind, list(actions.planned_writes(proposal))):
        return None
    rules = StandingRule.objects.filter(
        kind=proposal.kind, source=proposal.source, revoked_at__isnull=True
    )
    rules = (
        rules.filter(agent__isnull=True)
        if proposal.agent_id is None
        else rules.filter(agent_id=proposal.agent_id)
    )
    return rules.first()


def apply_rule(proposal: Proposal) -> Proposal | None:
    """Apply a pending proposal when a standing rule covers it. Returns it applied, or None
    (no rule, not pending, or refused: a changed base leaves it superseded, as any
    approval would)."""
    proposal.refresh_from_db()
    if proposal.status != Proposal.Status.PENDING:
        return None
    rule = matching_rule(proposal)
    if rule is None:
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
    approved = Proposal.objects.filter(
        kind=proposal.kind,
        source=proposal.source,
        agent_id=proposal.agent_id,
        status=Proposal.Status.APPROVED,
        undone_at__isnull=True,
    ).exclude(Q(decided_by__startswith=RULE_PREFIX) | Q(decided_by__startswith="auto:"))
    count = approved.count()
    return count if count >= needed else None
