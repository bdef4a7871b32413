"""Proposals (SPEC §7): writes a job asked for, waiting for a person.

Only proposals/actions.py changes a proposal's status.
"""

from django.db import models
from django.utils.translation import gettext_lazy as _


class Proposal(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        APPROVED = "approved", _("approved")
        REJECTED = "rejected", _("rejected")
        SUPERSEDED = "superseded", _("superseded")

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
    source = models.CharField(max_length=200, blank=True, default="")
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

    class Meta:
        verbose_name = _("proposal")
        verbose_name_plural = _("proposals")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.kind} {self.target} ({self.status})"
