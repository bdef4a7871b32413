"""The proposal as the API shows it (SPEC §14.1). Other apps embed it in their 202
answers: `{"proposal": ProposalSerializer(p).data}`."""

from __future__ import annotations

from rest_framework import serializers

from proposals.models import Proposal


class ProposalSerializer(serializers.ModelSerializer):
    """Read-only. `agent` is the agent id (null for the user scope), `run` the run id.
    `payload["writes"]` holds exactly what approving writes ({path: text or null})."""

    agent = serializers.CharField(source="agent_id", read_only=True, allow_null=True)
    run = serializers.IntegerField(source="run_id", read_only=True, allow_null=True)

    class Meta:
        model = Proposal
        fields = [
            "id",
            "kind",
            "status",
            "agent",
            "target",
            "reasons",
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
        ]
        read_only_fields = fields


class DecisionSerializer(serializers.Serializer):
    """Body of `POST /api/memory/proposals/{id}`."""

    approve = serializers.BooleanField(required=True)
