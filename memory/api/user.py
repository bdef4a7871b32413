"""REST for the user scope (SPEC §2, §5): USER.md with the facts and INDEX.md, and one fact
(PUT/DELETE obey the presence rule)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import facts, writes
from memory.api.common import proposal_answer, source_of, valid, written_by
from memory.api.serializers import (
    BodyInputSerializer,
    FactInputSerializer,
    FactSerializer,
    ProposalAnswerSerializer,
    UserSerializer,
)


def _user_json() -> dict:
    # Text and hash from one read: a PUT with this hash is 409 over anything written since.
    found = facts.read_user_with_hash()
    return UserSerializer(
        {
            "body": found.text,
            "facts": [fact.as_dict() for fact in facts.list_facts()],
            "index": facts.read_index(),
            "hash": found.hash,
            "invalid_utf8": found.invalid_utf8,
        }
    ).data


class UserView(APIView):
    @extend_schema(responses=UserSerializer)
    def get(self, request: Request) -> Response:
        return Response(_user_json())

    @extend_schema(request=BodyInputSerializer, responses=UserSerializer)
    def put(self, request: Request) -> Response:
        data = valid(BodyInputSerializer, request.data)
        writes.replace_user(
            data["body"],
            written_by=written_by(request),
            source=source_of(request, data.get("source")),
            base_hash=data.get("base_hash"),
        )
        return Response(_user_json())


class FactView(APIView):
    @extend_schema(responses=FactSerializer)
    def get(self, request: Request, name: str) -> Response:
        return Response(FactSerializer(facts.get_fact_or_404(name).as_dict()).data)

    @extend_schema(
        request=FactInputSerializer,
        responses={200: FactSerializer, 201: FactSerializer, 202: ProposalAnswerSerializer},
    )
    def put(self, request: Request, name: str) -> Response:
        facts.fact_path(name)  # a bad name is 422 whatever the body says
        data = valid(FactInputSerializer, request.data)
        existed = facts.get_fact(name) is not None
        fact, proposal = writes.save_fact_or_propose(
            name,
            description=data["description"],
            type=data["type"],
            body=data["body"],
            source=source_of(request, data.get("source")),
            written_by=written_by(request),
            reason=data.get("reason"),
        )
        if proposal is not None:
            return proposal_answer(proposal)
        return Response(
            FactSerializer(fact.as_dict()).data,
            status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED,
        )

    @extend_schema(
        parameters=[
            OpenApiParameter("source", str, description="e.g. web, job:<id>"),
            OpenApiParameter("reason", str, description="why, in the caller's words"),
        ],
        responses={204: None, 202: ProposalAnswerSerializer},
    )
    def delete(self, request: Request, name: str) -> Response:
        proposal = writes.forget_fact_or_propose(
            name,
            source=source_of(request, request.query_params.get("source")),
            written_by=written_by(request),
            reason=request.query_params.get("reason"),
        )
        if proposal is not None:
            return proposal_answer(proposal)
        return Response(status=status.HTTP_204_NO_CONTENT)
