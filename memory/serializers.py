"""Input and output shapes of the memory API (SPEC §14.1). Validation of names, types and
lines lives in the operations; serializers only check the JSON's shape."""

from __future__ import annotations

from rest_framework import serializers

from memory.errors import InvalidInput
from memory.models import AGENT_ID_VALIDATOR, Agent
from memory.schedules import validate_cron


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

    id = TextField(max_length=64, validators=[AGENT_ID_VALIDATOR])
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


class FactInputSerializer(serializers.Serializer):
    """Body of `PUT /api/memory/user/facts/{name}`. Missing description → 422."""

    description = TextField(allow_blank=True, trim_whitespace=False)
    type = TextField(allow_blank=True)
    body = _body_field(required=False, default="")
    source = TextField(required=False, trim_whitespace=False)


class UserSerializer(serializers.Serializer):
    body = serializers.CharField()
    facts = FactSerializer(many=True)
    index = serializers.CharField()
    hash = serializers.CharField()  # of USER.md, for base_hash


class BodyInputSerializer(serializers.Serializer):
    body = _body_field()
    source = TextField(required=False, trim_whitespace=False)
    # The `hash` a GET answered: the write is 409 if the file changed since.
    base_hash = TextField(required=False, max_length=64)


class FileBodySerializer(serializers.Serializer):
    body = serializers.CharField()
    hash = serializers.CharField()  # sha256 of the file ("absent" when missing)


class NoteSerializer(serializers.Serializer):
    day = serializers.CharField(allow_null=True)
    name = serializers.CharField()
    size = serializers.IntegerField()
    modified = serializers.DateTimeField()


class SaveInputSerializer(serializers.Serializer):
    """Body of `POST /api/agents/{id}/memory/save` (what the `memory_save` tool does)."""

    text = TextField(allow_blank=True, trim_whitespace=False)
    source = TextField(required=False, trim_whitespace=False)


class LinesInputSerializer(serializers.Serializer):
    """Body of `POST /api/agents/{id}/memory/lines`."""

    lines = serializers.ListField(child=TextField(allow_blank=True), allow_empty=True)
    source = TextField(trim_whitespace=False)


class NoteBodySerializer(serializers.Serializer):
    """One note: `{"day", "name", "body"}`."""

    day = serializers.CharField()
    name = serializers.CharField()
    body = serializers.CharField()
    hash = serializers.CharField()


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
