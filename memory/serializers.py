"""Input and output shapes of the memory API (SPEC §14.1). Validation of names, types and
lines lives in the operations; serializers only check the JSON's shape."""

from __future__ import annotations

from rest_framework import serializers

from memory.errors import InvalidInput
from memory.models import AGENT_ID_VALIDATOR, Agent
from memory.schedules import validate_cron


def _body_field(**kwargs) -> serializers.CharField:
    # Memory text is stored exactly as sent: no trimming, empty allowed.
    return serializers.CharField(allow_blank=True, trim_whitespace=False, **kwargs)


class AgentSerializer(serializers.ModelSerializer):
    """`{"id", "name", "is_default", "autonomous", "memory_consolidate"}`. The id is set on
    creation only; `is_default` is read-only (the master agent exists after migrate)."""

    id = serializers.CharField(max_length=64, validators=[AGENT_ID_VALIDATOR])
    memory_consolidate = serializers.CharField(
        max_length=100, allow_blank=True, required=False, default=""
    )

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

    description = serializers.CharField(allow_blank=True, trim_whitespace=False)
    type = serializers.CharField(allow_blank=True)
    body = _body_field(required=False, default="")
    source = serializers.CharField(required=False, trim_whitespace=False)


class UserSerializer(serializers.Serializer):
    body = serializers.CharField()
    facts = FactSerializer(many=True)
    index = serializers.CharField()


class BodyInputSerializer(serializers.Serializer):
    body = _body_field()
    source = serializers.CharField(required=False, trim_whitespace=False)


class NoteSerializer(serializers.Serializer):
    day = serializers.CharField(allow_null=True)
    name = serializers.CharField()
    size = serializers.IntegerField()
    modified = serializers.DateTimeField()


class SaveInputSerializer(serializers.Serializer):
    """Body of `POST /api/agents/{id}/memory/save` (what the `memory_save` tool does)."""

    text = serializers.CharField(allow_blank=True, trim_whitespace=False)
    source = serializers.CharField(required=False, trim_whitespace=False)


class LinesInputSerializer(serializers.Serializer):
    """Body of `POST /api/agents/{id}/memory/lines`."""

    lines = serializers.ListField(child=serializers.CharField(allow_blank=True), allow_empty=True)
    source = serializers.CharField(trim_whitespace=False)


class NoteBodySerializer(serializers.Serializer):
    """One note: `{"day", "name", "body"}`."""

    day = serializers.CharField()
    name = serializers.CharField()
    body = serializers.CharField()


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
