"""What the memory API's views share: the default source, input validation, the 202 of a
proposal, who wrote."""

from __future__ import annotations

from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api.serializers import ProposalSerializer
from memory.auth import agent_id_of
from proposals.models import Proposal

# A REST call that does not say where it comes from is a person over HTTP (§5).
DEFAULT_SOURCE = "http"


def written_by(request: Request) -> str:
    return agent_id_of(request) or "owner"


def valid(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def proposal_answer(proposal: Proposal) -> Response:
    return Response(
        {"proposal": ProposalSerializer(proposal).data}, status=status.HTTP_202_ACCEPTED
    )
