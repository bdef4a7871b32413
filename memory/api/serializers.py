"""Every input and output shape of the memory API (SPEC §14.1), in one place. Validation of
names, types and lines lives in the operations; serializers only check the JSON's shape.
Every 202 embeds `ProposalSerializer` or `RunSerializer`, whoever answers it."""

from __future__ import annotations

from rest_framework import serializers

from memory import feed, search
from memory.errors import InvalidInput
from memory.jobs.schedules import validate_cron
from memory.models import AGENT_ID_VALIDATOR, Agent, Delivery, FileVersion, Run, ScriptEntry
from proposals.diff import CHANGE, diff_rows
from proposals.models import Proposal


class TextField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of turning them into text:
    `{"body": 5}` is a malformed field (422), not the note "5"."""

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def _body_field(**kwargs) -> TextField:
    # Memory text is stored exactly as sent: no trimming, empty allowed.
    return TextField(allow_blank=True, trim_whitespace=False, **kwargs)


class AgentSerializer(serializers.ModelSerializer):
    """`{"id", "name", "is_default", "autonomous", "memory_consolidate"}`. The id is set on
    creation only; `is_default` is read-only (the master agent exists after migrate)."""

    # Not trimmed: "helper\n" is not the id "helper" (422), it is refused as it came.
    id = TextField(max_length=64, validators=[AGENT_ID_VALIDATOR], trim_whitespace=False)
    name = TextField(max_length=200)
    memory_consolidate = TextField(max_length=100, allow_blank=True, required=False, default="")

    class Meta:
        model = Agent
        fields = ["id", "name", "is_default", "autonomous", "memory_consolidate"]
        read_only_fields = ["is_default"]

    def validate_memory_consolidate(self, value: str) -> str:
        # The same rule the schedule applies (five fields), so the API never accepts a
        # cron that the schedule would then drop.
        try:
            return validate_cron(value)
        except InvalidInput as exc:
            raise serializers.ValidationError(exc.message) from None

    def update(self, instance: Agent, validated_data: dict) -> Agent:
        # An agent's id is its directory: it never changes.
        validated_data.pop("id", None)
        return super().update(instance, validated_data)


class AgentUpdateSerializer(AgentSerializer):
    id = serializers.CharField(read_only=True)


class FactSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    type = serializers.CharField()
    written_by = serializers.CharField()
    source = serializers.CharField()
    updated = serializers.CharField()
    body = serializers.CharField()
    stale = serializers.BooleanField()
    invalid_utf8 = serializers.BooleanField(default=False)  # bytes read as U+FFFD


def _reason_field() -> TextField:
    # The caller's own words on why (SPEC §5): validated by the operation (length, text).
    return TextField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False)


class FactInputSerializer(serializers.Serializer):
    """Body of `PUT /api/memory/user/facts/{name}`. Missing description → 422. `reason`: why,
    in the caller's words (shown on the card when the write becomes a proposal)."""

    description = TextField(allow_blank=True, trim_whitespace=False)
    type = TextField(allow_blank=True)
    body = _body_field(required=False, default="")
    source = TextField(required=False, trim_whitespace=False)
    reason = _reason_field()


class UserSerializer(serializers.Serializer):
    body = serializers.CharField()
    facts = FactSerializer(many=True)
    index = serializers.CharField()
    hash = serializers.CharField()  # of USER.md, for base_hash
    # USER.md has bytes that are not UTF-8: `body` shows them as U+FFFD, and a PUT
    # replaces them.
    invalid_utf8 = serializers.BooleanField(default=False)


class BodyInputSerializer(serializers.Serializer):
    body = _body_field()
    source = TextField(required=False, trim_whitespace=False)
    # The `hash` a GET answered: the write is 409 if the file changed since.
    base_hash = TextField(required=False, max_length=64)


class MemoryBodyInputSerializer(BodyInputSerializer):
    """Body of `PUT /api/agents/{id}/memory`: a job's rewrite becomes a proposal, with its
    `reason` on the card."""

    reason = _reason_field()


class FileBodySerializer(serializers.Serializer):
    body = serializers.CharField()
    hash = serializers.CharField()  # sha256 of the file ("absent" when missing)
    invalid_utf8 = serializers.BooleanField(default=False)  # bytes read as U+FFFD


class NoteSerializer(serializers.Serializer):
    day = serializers.CharField(allow_null=True)
    name = serializers.CharField()
    size = serializers.IntegerField()
    modified = serializers.DateTimeField()


class MemoryFileSerializer(serializers.Serializer):
    """One row of `GET /api/agents/{id}/memory/files` (memory.reading.MemoryFile)."""

    path = serializers.CharField()
    kind = serializers.ChoiceField(choices=["memory", "note", "file", "wiki", "extra"])
    day = serializers.CharField(allow_null=True)
    size = serializers.IntegerField()
    modified = serializers.DateTimeField()
    editable = serializers.BooleanField()


class MemoryFileBodySerializer(serializers.Serializer):
    """One file by its memory_get path: `{"path", "kind", "body", "hash", "editable"}`."""

    path = serializers.CharField()
    kind = serializers.CharField()
    body = serializers.CharField()
    hash = serializers.CharField()
    editable = serializers.BooleanField()


class SaveInputSerializer(serializers.Serializer):
    """Body of `POST /api/agents/{id}/memory/save` (what the `memory_save` tool does)."""

    text = TextField(allow_blank=True, trim_whitespace=False)
    source = TextField(required=False, trim_whitespace=False)


class LinesInputSerializer(serializers.Serializer):
    """Body of `POST /api/agents/{id}/memory/lines`: `heading` — the heading the lines belong
    under (created at the end when absent); `reason` — why, in the caller's words."""

    lines = serializers.ListField(child=TextField(allow_blank=True), allow_empty=True)
    source = TextField(required=False, trim_whitespace=False)
    heading = TextField(required=False, allow_null=True, allow_blank=True)
    reason = _reason_field()


class NoteBodySerializer(serializers.Serializer):
    """One note: `{"day", "name", "body"}`."""

    day = serializers.CharField()
    name = serializers.CharField()
    body = serializers.CharField()
    hash = serializers.CharField()
    invalid_utf8 = serializers.BooleanField(default=False)  # bytes read as U+FFFD


class SaveResultSerializer(serializers.Serializer):
    day = serializers.CharField()
    name = serializers.CharField()
    line = serializers.CharField()


class ContextSerializer(serializers.Serializer):
    system = serializers.CharField()
    pre_turn = serializers.CharField()


class StatsSerializer(serializers.Serializer):
    pending_proposals = serializers.IntegerField()
    agents = serializers.IntegerField()
    facts = serializers.IntegerField()
    notes = serializers.IntegerField()


# --- proposals ------------------------------------------------------------------------


class ProposalSerializer(serializers.ModelSerializer):
    """Read-only. `agent` is the agent id (null for the user scope), `run` the run id.
    `payload["writes"]` holds exactly what approving writes ({path: text or null})."""

    agent = serializers.CharField(source="agent_id", read_only=True, allow_null=True)
    run = serializers.IntegerField(source="run_id", read_only=True, allow_null=True)
    reapplies = serializers.IntegerField(source="reapplies_id", read_only=True, allow_null=True)
    reapplied_as = serializers.SerializerMethodField()

    class Meta:
        model = Proposal
        fields = [
            "id",
            "kind",
            "status",
            "agent",
            "requested_by",
            "target",
            "reasons",
            "reason",
            "payload",
            "previous_body",
            "base_hash",
            "source",
            "created_at",
            "decided_at",
            "decided_by",
            "undone_at",
            "undone_by",
            "run",
            "applied_writes",
            "decision",
            "repeats",
            "repeated_at",
            "replaced_body",
            "reapplies",
            "reapplied_as",
        ]
        read_only_fields = fields

    def get_reapplied_as(self, proposal: Proposal) -> int | None:
        """The proposal that re-applied this one on the current text, if any."""
        return Proposal.objects.filter(reapplies=proposal).values_list("pk", flat=True).first()


class DecisionSerializer(serializers.Serializer):
    """Body of `POST /api/memory/proposals/{id}`: `approve`, and for an approval in part or
    edited: `pages` (the paths of a batch to apply), `hunks` ({path: [[i1, i2, j1, j2], …]}
    the changes of a rewrite to keep, as `GET …/proposals/{id}/hunks` lists them), `texts`
    ({path: the owner's whole text}; a missing or null text is 422), `lines` / `heading`
    (the owner's lines for MEMORY.md and where they go), `skip_stale` (apply the pages
    that did not change)."""

    approve = serializers.BooleanField(required=True)
    pages = serializers.ListField(child=TextField(), required=False)
    hunks = serializers.DictField(
        child=serializers.ListField(
            child=serializers.ListField(
                child=serializers.IntegerField(min_value=0), min_length=4, max_length=4
            )
        ),
        required=False,
    )
    # Null is let through to the operation, which refuses it with its own message (422).
    texts = serializers.DictField(
        child=TextField(allow_blank=True, trim_whitespace=False, allow_null=True), required=False
    )
    lines = serializers.ListField(child=TextField(allow_blank=True), required=False)
    heading = TextField(required=False, allow_blank=True)
    skip_stale = serializers.BooleanField(required=False, default=False)


class ReapplySerializer(serializers.Serializer):
    """Body of `POST /api/memory/proposals/{id}/reapply`: `base_hashes` — {path: the
    `current_hash` GET …/reapply answered}; `texts` — {path: your resolution} for a file
    whose merge you changed (else the merge as shown, conflicting changes left out)."""

    base_hashes = serializers.DictField(child=TextField(max_length=64))
    texts = serializers.DictField(
        child=TextField(allow_blank=True, trim_whitespace=False, allow_null=True), required=False
    )


class BulkDecisionSerializer(serializers.Serializer):
    """Body of `POST /api/memory/proposals/bulk`."""

    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1), min_length=1, max_length=500
    )
    approve = serializers.BooleanField(required=True)


# --- runs -------------------------------------------------------------------------------


class RunSerializer(serializers.ModelSerializer):
    agent = serializers.CharField(source="agent_id")
    proposals = serializers.SerializerMethodField()
    duration_seconds = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = [
            "id", "agent", "kind", "status", "trigger", "summary", "reasons", "model",
            "tokens_in", "tokens_out", "cost", "proposals", "started_at", "finished_at",
            "heartbeat_at", "duration_seconds",
        ]  # fmt: skip

    def get_proposals(self, run: Run) -> list[dict]:
        return [
            {"id": p.pk, "kind": p.kind, "status": p.status, "target": p.target}
            for p in run.proposals.all().order_by("id")
        ]

    def get_duration_seconds(self, run: Run) -> float | None:
        if run.finished_at is None:
            return None
        return round((run.finished_at - run.started_at).total_seconds(), 3)


class RunAnswerSerializer(serializers.Serializer):
    """The 202 of every run started over the API (consolidate, compile)."""

    run = RunSerializer()


class ProposalAnswerSerializer(serializers.Serializer):
    """The 202 of every write that became a proposal."""

    proposal = ProposalSerializer()


# --- search -----------------------------------------------------------------------------


class SearchQuerySerializer(serializers.Serializer):
    q = serializers.CharField(max_length=1000)
    agent_id = serializers.CharField(required=False, max_length=64)
    limit = serializers.IntegerField(
        required=False, min_value=1, max_value=search.MAX_LIMIT, default=search.DEFAULT_LIMIT
    )
    offset = serializers.IntegerField(required=False, min_value=0, max_value=2**63 - 1, default=0)
    explain = serializers.BooleanField(required=False, default=False)


class HitSerializer(serializers.Serializer):
    scope = serializers.CharField()  # "user" or "agent:<id>"
    agent = serializers.CharField(allow_null=True)
    path = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)  # None for a fact (one entry)
    text = serializers.CharField()
    score = serializers.IntegerField()  # words of the query the entry matched
    end_line = serializers.IntegerField(allow_null=True)  # last line of a block; None: fact
    date = serializers.CharField(allow_null=True)  # a dated note's day, YYYY-MM-DD
    heading = serializers.CharField(allow_null=True)  # the heading line it sits under
    weight = serializers.FloatField()  # what the matched words weigh together (the rank)
    matched = serializers.ListField(child=serializers.CharField())  # which query words


_HIT_FIELDS = tuple(HitSerializer().fields)


def hit_json(hit: search.Hit) -> dict:
    """What HitSerializer makes of a hit (the schema's), read straight from it: its fields
    are already the types they are shown as, and DRF took 0.19 ms for a page of 12."""
    return {name: getattr(hit, name) for name in _HIT_FIELDS}


class WordWeightSerializer(serializers.Serializer):
    word = serializers.CharField()
    rule = serializers.CharField()  # "whole", "inside" or "anywhere"
    entries = serializers.IntegerField()  # entries of the scope holding it
    weight = serializers.FloatField()
    forms = serializers.ListField(child=serializers.CharField())  # words of the text it matched


class ExplainSerializer(serializers.Serializer):
    entries = serializers.IntegerField()  # entries in the scope searched
    words = WordWeightSerializer(many=True)


# --- script store -----------------------------------------------------------------------


class EntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = ScriptEntry
        fields = ["scope", "scope_id", "key", "value", "updated_at"]


class ValueSerializer(serializers.Serializer):
    # Any JSON at all, null included; only the key "value" must be present.
    value = serializers.JSONField(allow_null=True)


# --- file history -----------------------------------------------------------------------


class FileVersionSerializer(serializers.ModelSerializer):
    """One version of a memory file (memory.history), without its text."""

    proposal = serializers.IntegerField(source="proposal_id", read_only=True, allow_null=True)
    run = serializers.IntegerField(source="run_id", read_only=True, allow_null=True)
    restored_from = serializers.IntegerField(
        source="restored_from_id", read_only=True, allow_null=True
    )

    class Meta:
        model = FileVersion
        fields = [
            "id",
            "path",
            "seq",
            "agent",
            "op",
            "actor",
            "source",
            "via",
            "note",
            "proposal",
            "run",
            "restored_from",
            "created_at",
            "exists",
            "size",
            "lines_added",
            "lines_removed",
        ]
        read_only_fields = fields


class FileVersionTextSerializer(FileVersionSerializer):
    """A version with what the file held after it (`text`, null when deleted) and what it
    replaced (`replaced`, the previous version's text)."""

    text = serializers.CharField(read_only=True, allow_null=True)
    replaced = serializers.CharField(read_only=True, allow_null=True)
    sha256 = serializers.CharField(read_only=True)

    class Meta(FileVersionSerializer.Meta):
        fields = [*FileVersionSerializer.Meta.fields, "sha256", "text", "replaced"]
        read_only_fields = fields


class WriteSerializer(FileVersionSerializer):
    """One write of the feed of what was remembered (memory.feed): a version an agent or a
    job made, with who (`by_agent`), what kind of file, whether it was `attended` or an
    `approved` proposal, the version that reverted it, whether a revert can apply now
    (no later version of the file), and its diff as `[op, line]` rows (op `" "` same,
    `"+"` added, `"-"` removed, `"@"` a hunk header; none with `diff_too_large`)."""

    by_agent = serializers.CharField(read_only=True)
    kind = serializers.CharField(read_only=True)
    how = serializers.SerializerMethodField()
    reverted_by = serializers.IntegerField(source="reverted_by_id", read_only=True, allow_null=True)
    revertible = serializers.SerializerMethodField()
    diff = serializers.SerializerMethodField()
    diff_too_large = serializers.SerializerMethodField()

    class Meta(FileVersionSerializer.Meta):
        fields = [
            *FileVersionSerializer.Meta.fields,
            "by_agent",
            "kind",
            "how",
            "reverted_by",
            "revertible",
            "diff",
            "diff_too_large",
        ]
        read_only_fields = fields

    def get_how(self, row) -> str:
        return "approved" if row.proposal_id else "attended"

    def get_revertible(self, row) -> bool:
        return row.reverted_by_id is None and not row.superseded

    def _diff(self, row):
        if not hasattr(row, "_diff_rows"):
            before, after = feed.texts(row)
            rows, _removed, _added, _hunks, too_large = diff_rows(before, after)
            row._diff_rows = ([[r.op, r.text] for r in rows if r.op != CHANGE], too_large)
        return row._diff_rows

    def get_diff(self, row) -> list[list[str]]:
        return self._diff(row)[0]

    def get_diff_too_large(self, row) -> bool:
        return self._diff(row)[1]


class DeliverySerializer(serializers.ModelSerializer):
    """One notification sent or tried (memory.jobs.notify): `target` is an address, or a
    webhook's scheme and host only."""

    class Meta:
        model = Delivery
        fields = [
            "id",
            "sent_at",
            "channel",
            "what",
            "target",
            "payload_format",
            "ok",
            "result",
            "attempts",
            "by",
        ]
        read_only_fields = fields


class RestoreSerializer(serializers.Serializer):
    """Body of `POST /api/memory/history/{id}/restore`: the hash of the file as the caller
    saw it (what `GET …/history/{id}` or the file's editor answered as `current_hash`)."""

    base_hash = serializers.CharField(max_length=64)


class BlameLineSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    text = serializers.CharField()
    version = serializers.IntegerField(allow_null=True)
    seq = serializers.IntegerField(allow_null=True)
    proposal = serializers.IntegerField(allow_null=True)
    run = serializers.IntegerField(allow_null=True)
    date = serializers.DateTimeField(allow_null=True)
    actor = serializers.CharField(allow_blank=True)
    source = serializers.CharField(allow_blank=True)
    # Who made the line's version: owner, agent, job, rule, outside (edited outside the
    # app), app; "" when the line is in no recorded version. `who_name` names them.
    who = serializers.CharField(allow_blank=True)
    who_name = serializers.CharField(allow_blank=True)
