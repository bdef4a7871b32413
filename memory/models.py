"""Rows for what is not memory itself (SPEC §0): agents, tokens, cursors, runs, script store.

Memory content lives in Markdown files under MY_AGENT_HOME and is never authoritative here.
"""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

AGENT_ID_VALIDATOR = RegexValidator(
    r"^[a-z0-9]+(?:-[a-z0-9]+)*\Z", "An agent id is lowercase letters, digits and hyphens."
)


class Agent(models.Model):
    id = models.CharField(primary_key=True, max_length=64, validators=[AGENT_ID_VALIDATOR])
    name = models.CharField(max_length=200)
    is_default = models.BooleanField(default=False)
    autonomous = models.BooleanField(default=False)
    memory_consolidate = models.CharField(
        max_length=100,
        blank=True,
        default="",
        help_text=_("Cron expression of the nightly consolidation, e.g. 0 3 * * *"),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("agent")
        verbose_name_plural = _("agents")
        ordering = ["-is_default", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"], condition=Q(is_default=True), name="one_default_agent"
            )
        ]

    def __str__(self) -> str:
        return self.id

    @property
    def dir(self) -> str:
        """The agent dir, workspace-relative: "" for the default agent (MY_AGENT_HOME
        itself), "agents/<id>" for every other (SPEC §1)."""
        return "" if self.is_default else f"agents/{self.id}"

    def path(self, rel: str) -> str:
        """A workspace-relative path inside this agent's dir."""
        return f"{self.dir}/{rel}" if self.dir else rel


def hash_token(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class ApiToken(models.Model):
    """`Authorization: Token <key>` (or `Bearer <key>`). Only the sha256 of the key is
    stored. An owner token (user set) may do everything; an agent token (agent set) only
    reaches its own agent. An agent token with a `job` speaks for that scheduled job:
    every write made with it is a `job:<job>` write (SPEC §5), whatever a request says."""

    key_hash = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE)
    job = models.CharField(max_length=160, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, agent__isnull=True)
                | Q(user__isnull=True, agent__isnull=False),
                name="token_is_owner_or_agent",
            ),
            models.CheckConstraint(
                condition=Q(job="") | Q(agent__isnull=False), name="job_token_is_an_agent_token"
            ),
        ]

    def __str__(self) -> str:
        if self.job:
            return f"job token for {self.agent_id} ({self.job})"
        return f"agent token for {self.agent_id}" if self.agent_id else "owner token"

    @classmethod
    def issue(cls, *, user=None, agent: Agent | None = None, job: str = "") -> tuple[ApiToken, str]:
        """Create a token and return it with its key; the key is shown once, never stored.
        `job` (agent tokens only) makes it a job token."""
        key = secrets.token_hex(24)
        token = cls.objects.create(key_hash=hash_token(key), user=user, agent=agent, job=job)
        return token, key


class NoteCursor(models.Model):
    """What a conversation has been shown of one daily note (SPEC §4.2): the first
    `shown_size` bytes, whose sha256 is `shown_hash`."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE)
    conversation = models.CharField(max_length=200)
    # e.g. "2026-11-30.md", "2026-11-30-evening.md": any note's file name (255 bytes at most)
    note = models.CharField(max_length=255)
    shown_size = models.PositiveBigIntegerField(default=0)
    shown_hash = models.CharField(max_length=64, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("note cursor")
        verbose_name_plural = _("note cursors")
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "conversation", "note"], name="one_cursor_per_note"
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}/{self.conversation}/{self.note}"


class ContextTurn(models.Model):
    """The pre-turn block a conversation was last answered, and for which turn id (SPEC
    §4.2): a retried request for the same turn gets the same block, and only a new turn
    advances the note cursors. One row per conversation (the last turn)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE)
    conversation = models.CharField(max_length=200)
    turn = models.CharField(max_length=200, default="")
    pre_turn = models.TextField(blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("context turn")
        verbose_name_plural = _("context turns")
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "conversation"], name="one_turn_per_conversation"
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}/{self.conversation}@{self.turn}"


class Run(models.Model):
    """One consolidation, fact review or compile (SPEC §12), shown in Activity."""

    class Kind(models.TextChoices):
        CONSOLIDATE = "consolidate", _("consolidation")
        FACT_REVIEW = "fact_review", _("fact review")
        COMPILE = "compile", _("wiki compile")

    class Status(models.TextChoices):
        RUNNING = "running", _("running")
        SUCCEEDED = "succeeded", _("succeeded")
        SKIPPED = "skipped", _("skipped")
        FAILED = "failed", _("failed")
        HELD = "held", _("held")

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="runs")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING)
    trigger = models.CharField(max_length=50, blank=True, default="")  # "api", "schedule"…
    task_key = models.CharField(max_length=100, null=True, blank=True, unique=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    model = models.CharField(max_length=200, blank=True, default="")
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    summary = models.TextField(blank=True, default="")
    reasons = models.JSONField(default=list, blank=True)
    # {note file name: sha256 of its text} of the notes this run read (SPEC §8): a later
    # run skips when no note in its window is new or changed since the last run that read
    # it — judged by content, since a clone or a sync gives every file a new mtime.
    notes_read = models.JSONField(default=dict, blank=True)

    class Meta:
        verbose_name = _("run")
        verbose_name_plural = _("runs")
        ordering = ["-started_at", "-id"]
        constraints = [
            # At most one consolidation or compile runs per agent, across every worker
            # and machine that shares the database (SPEC §12).
            models.UniqueConstraint(
                fields=["agent"],
                condition=Q(status="running", kind__in=["consolidate", "compile"]),
                name="one_running_rewrite_per_agent",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.agent_id} #{self.pk} ({self.status})"


class ScriptEntry(models.Model):
    """What an agent's scripts keep with store(key, value) (SPEC §11)."""

    class Scope(models.TextChoices):
        SCHEDULE = "schedule", _("schedule")
        CONVERSATION = "conversation", _("conversation")

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="script_entries")
    scope = models.CharField(max_length=20, choices=Scope.choices)
    scope_id = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    value = models.JSONField(null=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("script-store entry")
        verbose_name_plural = _("script-store entries")
        ordering = ["scope", "scope_id", "key"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "scope", "scope_id", "key"], name="one_script_entry_per_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}/{self.scope}/{self.scope_id}/{self.key}"


class WorkerBeat(models.Model):
    """A django-q2 cluster under its supervisor (memory.jobs.cluster), alive: renewed every few
    seconds while its guard loop runs, removed when it stops. `GET /healthz` reads the
    newest one."""

    name = models.CharField(max_length=200, unique=True)  # "<host>:<supervisor pid>"
    host = models.CharField(max_length=200)
    pid = models.PositiveIntegerField()
    broker = models.CharField(max_length=50, blank=True, default="")
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField()
    restarts = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = _("worker heartbeat")
        verbose_name_plural = _("worker heartbeats")
        ordering = ["-beat_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.beat_at:%H:%M:%S})"


class WorkspaceBinding(models.Model):
    """The workspace this database serves (memory.binding): one row, claimed by the first
    start. Rows describe files of one workspace, so another one is refused. `time_zone` is
    the owner's zone recorded with it (SPEC §4.2): the day every process writes a note to,
    whatever its own environment says."""

    path = models.CharField(max_length=1000)
    claimed_at = models.DateTimeField()
    time_zone = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        verbose_name = _("workspace of this database")
        verbose_name_plural = _("workspace of this database")

    def __str__(self) -> str:
        return self.path


class FileVersion(models.Model):
    """One version of one memory file (SPEC §7, memory.history): every change the app makes
    to a file under MY_AGENT_HOME, and every change made by hand outside it, noticed at the
    next write. The file on disk stays the truth; these rows are its past.

    `seq` counts the versions of one path from 1. What the file held after this version is
    kept compactly in `data` (zlib): the whole text (`full`), the part that differs from
    the previous version (`delta`: common prefix and suffix lengths, then the new middle),
    the bytes appended (`append`), or nothing (`none`: the file was deleted). `base_seq` is
    the version whose `full` (or `none`) text the chain up to this one starts from. The
    text a version replaced is the previous version's text."""

    class Op(models.TextChoices):
        WRITE = "write"
        APPEND = "append"
        DELETE = "delete"
        OUTSIDE = "outside"  # changed outside the app (noticed at the next write)
        RESTORE = "restore"
        ADOPT = "adopt"  # found already on disk (an approval interrupted before its commit)

    path = models.CharField(max_length=500)
    seq = models.PositiveIntegerField()
    agent = models.CharField(max_length=64, blank=True, default="")  # "" = user scope
    op = models.CharField(max_length=10, choices=Op.choices)
    actor = models.CharField(max_length=200, blank=True, default="")
    source = models.CharField(max_length=200, blank=True, default="")
    via = models.CharField(max_length=30, blank=True, default="")
    note = models.CharField(max_length=300, blank=True, default="")
    proposal = models.ForeignKey(
        "proposals.Proposal",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="versions",
    )
    run = models.ForeignKey(
        Run,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="versions",
    )
    restored_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False
    )
    created_at = models.DateTimeField(db_index=True)
    exists = models.BooleanField(default=True)
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True, default="")  # "" not computed
    fingerprint = models.CharField(max_length=100, blank=True, default="")
    storage = models.CharField(max_length=10)
    base_seq = models.PositiveIntegerField()
    data = models.BinaryField(default=b"")
    lines_added = models.PositiveIntegerField(default=0)
    lines_removed = models.PositiveIntegerField(default=0)
    # The feed of what the assistants remembered (SPEC §7, memory.feed), decided when the
    # version is recorded: whether an agent or a job made it (an attended write, or an
    # approved proposal), which agent, and what kind of file it changed.
    in_feed = models.BooleanField(default=False)
    by_agent = models.CharField(max_length=64, blank=True, default="")
    kind = models.CharField(max_length=10, blank=True, default="")
    # The version this one reverted (the feed's one-click revert), if it is a revert.
    reverts = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="reverted_by",
    )

    class Meta:
        ordering = ["path", "-seq"]
        constraints = [models.UniqueConstraint(fields=["path", "seq"], name="one_version_per_seq")]
        indexes = [
            models.Index(fields=["agent", "-created_at"], name="version_agent_time"),
            # The feed, newest first, whole or for one agent: an index walk, not a sort.
            models.Index(fields=["in_feed", "-created_at", "-id"], name="version_feed_time"),
            models.Index(
                fields=["in_feed", "by_agent", "-created_at", "-id"], name="version_feed_agent"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.path} v{self.seq} ({self.op})"


class RestoreIntent(models.Model):
    """A restore under way (memory.history.restore): written before the file, removed once
    its version is recorded. One left behind was cut short by a killed process; the next
    start-up (or restore of the path) settles it under the file's lock, so the file and its
    history agree at any point of a kill: the text written → its version recorded as the
    restore; not written → nothing."""

    path = models.CharField(max_length=500, db_index=True)
    version = models.ForeignKey(
        FileVersion, on_delete=models.CASCADE, db_constraint=False, related_name="+"
    )
    sha256 = models.CharField(max_length=64)  # of the bytes the restore writes
    actor = models.CharField(max_length=200, blank=True, default="")
    via = models.CharField(max_length=30, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"restore of {self.path} to version {self.version_id}"


class Delivery(models.Model):
    """One notification sent, or tried (SPEC §7, memory.jobs.notify): a digest or a test,
    by email or webhook, with what came of it — the Settings page lists the last ones."""

    class Channel(models.TextChoices):
        EMAIL = "email", _("email")
        WEBHOOK = "webhook", _("webhook")

    sent_at = models.DateTimeField(auto_now_add=True, db_index=True)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    what = models.CharField(max_length=10, default="digest")  # "digest" or "test"
    target = models.CharField(max_length=300, blank=True, default="")  # address or host
    payload_format = models.CharField(max_length=10, blank=True, default="")  # json, text
    ok = models.BooleanField(default=False)
    result = models.CharField(max_length=500, blank=True, default="")
    attempts = models.PositiveSmallIntegerField(default=1)
    by = models.CharField(max_length=200, blank=True, default="")  # who asked for a test

    class Meta:
        verbose_name = _("notification delivery")
        verbose_name_plural = _("notification deliveries")
        ordering = ["-sent_at", "-id"]

    def __str__(self) -> str:
        return f"{self.channel} {self.what} {self.sent_at:%Y-%m-%d %H:%M} ({self.result})"
