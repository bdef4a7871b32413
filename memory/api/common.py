"""What the memory API's views share: the source of a write, input validation, the 202 of a
proposal, who wrote."""

from __future__ import annotations

from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api.serializers import ProposalSerializer
from memory.auth import agent_id_of, caller_of
from proposals.models import Proposal


def source_of(request: Request, stated: object = None) -> str:
    """The source of this request's write (memory.presence): a job token's job whatever
    was stated; else a stated or X-Memory-Source `job:<id>`, the stated source, the
    header, or `http` (a person over HTTP)."""
    return caller_of(request).source(stated)


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
