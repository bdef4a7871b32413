"""REST for an agent's MEMORY.md (SPEC §3, §5): read, replace, add durable lines (a job's
become a proposal), and `memory_save` into today's note."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import notes, writes
from memory.api.common import proposal_answer, source_of, valid
from memory.api.serializers import (
    FileBodySerializer,
    LinesInputSerializer,
    MemoryBodyInputSerializer,
    ProposalAnswerSerializer,
    SaveInputSerializer,
    SaveResultSerializer,
)
from memory.auth import agent_for
from memory.models import Agent


def _memory_json(agent: Agent) -> dict:
    # Text and hash from one read: a PUT with this hash is 409 over anything written since.
    found = notes.read_memory_with_hash(agent)
    return {"body": found.text, "hash": found.hash, "invalid_utf8": found.invalid_utf8}


class MemoryView(APIView):
    @extend_schema(responses=FileBodySerializer)
    def get(self, request: Request, agent_id: str) -> Response:
        return Response(_memory_json(agent_for(request, agent_id)))

    @extend_schema(
        request=MemoryBodyInputSerializer,
        responses={200: FileBodySerializer, 202: ProposalAnswerSerializer},
    )
    def put(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        data = valid(MemoryBodyInputSerializer, request.data)
        proposal = writes.write_memory_or_propose(
            agent,
            data["body"],
            source=source_of(request, data.get("source")),
            base_hash=data.get("base_hash"),
            reason=data.get("reason"),
        )
        if proposal is not None:
            return proposal_answer(proposal)
        return Response(_memory_json(agent))


class MemoryLinesView(APIView):
    @extend_schema(
        request=LinesInputSerializer, responses={200: None, 202: ProposalAnswerSerializer}
    )
    def post(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        data = valid(LinesInputSerializer, request.data)
        body, proposal = writes.add_memory_lines_or_propose(
            agent,
            data["lines"],
            source=source_of(request, data.get("source")),
            heading=data.get("heading"),
            reason=data.get("reason"),
        )
        if proposal is not None:
            return proposal_answer(proposal)
        return Response({"body": body})


class MemorySaveView(APIView):
    @extend_schema(request=SaveInputSerializer, responses=SaveResultSerializer)
    def post(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        data = valid(SaveInputSerializer, request.data)
        # memory_save needs no approval (§5), but a nonsense source is still refused.
        source_of(request, data.get("source"))
        saved = notes.memory_save(agent, data["text"])
        return Response({"day": saved.day.isoformat(), "name": saved.name, "line": saved.line})
