"""Proposals (SPEC §7): writes a job asked for, waiting for a person.

Only proposals/actions.py changes a proposal's status.
"""

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Proposal(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        APPROVED = "approved", _("approved")
        REJECTED = "rejected", _("rejected")
        SUPERSEDED = "superseded", _("superseded")
        EXPIRED = (
            "expired",
            _("expired"),
        )  # waited longer than MEMORY_PROPOSAL_EXPIRE_DAYS; nothing written

    kind = models.CharField(max_length=30, db_index=True)
    agent = models.ForeignKey(
        "memory.Agent", null=True, blank=True, on_delete=models.CASCADE, related_name="proposals"
    )
    # Workspace-relative path of the file it changes (a batch: the vault directory).
    target = models.CharField(max_length=500)
    payload = models.JSONField(default=dict, blank=True)
    # What it replaces: the text (None when the file did not exist), or for a batch a
    # {path: text or None} mapping.
    previous_body = models.JSONField(null=True, blank=True)
    # Hash of the target when proposed (a batch: {path: hash} in base_hashes).
    base_hash = models.CharField(max_length=64, blank=True, default="")
    base_hashes = models.JSONField(default=dict, blank=True)
    # Hash of what approving wrote (a batch: per path), checked before an undo.
    applied_hashes = models.JSONField(default=dict, blank=True)
    reasons = models.JSONField(default=list, blank=True)
    # The caller's own words on why (a tool's or a REST write's `reason`): shown on the card
    # labelled as the model's words, never read by any rule (SPEC §5).
    reason = models.TextField(blank=True, default="")
    source = models.CharField(max_length=200, blank=True, default="")
    # The agent that asked (its job token's agent, a fact's `written_by`, the run's agent):
    # what a standing rule is scoped to, also for user-scope kinds whose `agent` is null.
    requested_by = models.CharField(max_length=80, blank=True, default="", db_index=True)
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=200, blank=True, default="")
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.CharField(max_length=200, blank=True, default="")
    run = models.ForeignKey(
        "memory.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals"
    )
    # What approving actually wrote, when the owner changed it ({path: text or None}): an
    # edited text, the kept hunks of a rewrite, the chosen pages of a batch. Empty: the
    # plan (payload["writes"]) as proposed.
    applied_writes = models.JSONField(default=dict, blank=True)
    # What approving replaced when that is not `previous_body` ({path: text or None}): an
    # append applied to the file as it was when approved, a re-apply on the current text.
    # Undo puts this back.
    replaced_body = models.JSONField(default=dict, blank=True)
    # A stale proposal re-applied on the current text as a new proposal: the new one points
    # at the one it re-applies, once (unique: two clicks make one).
    reapplies = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reapplied_as"
    )
    # How it was decided: {"edited": [paths], "hunks": {path: [[i1, i2, j1, j2], …]},
    # "pages": [paths], "superseded_pages": [paths], "rule": id, "bulk": true,
    # "reapplied": {path: {"dropped": n}}, "superseded": [ids]}.
    decision = models.JSONField(default=dict, blank=True)
    # The same ask again (kind, agent, target and payload): a job repeating exactly what
    # the owner rejected is counted on the rejected row instead of queued anew.
    shape = models.CharField(max_length=64, blank=True, default="", db_index=True)
    repeats = models.PositiveIntegerField(default=0)
    repeated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("proposal")
        verbose_name_plural = _("proposals")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.kind} {self.target} ({self.status})"


class StandingRule(models.Model):
    """ "Proposals of this kind from this job of this agent apply at once" — set by the
    owner on a card, never by the code (proposals.rules). Scoped to the agent that asked
    (`agent`, also for user-scope kinds) and its job (`source`). Fact hygiene and anything
    touching USER.md can never be ruled automatic. Revoked rows are kept (history)."""

    kind = models.CharField(max_length=30)
    source = models.CharField(max_length=200)  # exact, e.g. "job:morning-brief"
    # The agent whose job it trusts. Null only on rules made before rules were scoped to an
    # agent: those were revoked by migration and match nothing.
    agent = models.ForeignKey(
        "memory.Agent", null=True, blank=True, on_delete=models.CASCADE, related_name="rules"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200, blank=True, default="")
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "source", "agent"],
                condition=models.Q(revoked_at__isnull=True),
                name="one_active_rule_per_shape",
            )
        ]

    def __str__(self) -> str:
        return f"rule #{self.pk}: {self.kind} from {self.source} ({self.agent_id or 'user'})"


class Notice(models.Model):
    """One notification that proposals wait (memory.jobs.notify): when, through which
    channels, and the newest proposal it told of — the next notice needs a newer one."""

    # The moment notify_pending decided on (now, unless a caller says when): the next
    # notice is due by the same clock.
    sent_at = models.DateTimeField(default=timezone.now)
    reason = models.CharField(max_length=30)  # "time of day", "pending count"
    pending = models.PositiveIntegerField(default=0)
    newest_proposal = models.PositiveBigIntegerField(default=0)
    channels = models.JSONField(default=dict, blank=True)  # {"email": "sent", "webhook": …}

    class Meta:
        ordering = ["-sent_at", "-id"]

    def __str__(self) -> str:
        return f"notice {self.sent_at:%Y-%m-%d %H:%M} ({self.pending} pending)"
