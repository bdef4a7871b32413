"""REST views of the memory core (SPEC §14). Thin: check who may, validate the JSON's
shape, call one operation, shape the answer. Domain errors become 4xx in
memoryproject.api.exception_handler.

Routes (all under /api/, see memory/urls.py):

    GET/POST   agents                              list / create (create: owner only)
    GET/PATCH  agents/{id}                         one agent / edit (edit: owner only)
    GET/PUT    memory/user                         USER.md with the facts and INDEX.md
    GET/PUT/DELETE memory/user/facts/{name}        one fact (PUT/DELETE obey §5)
    GET/PUT    agents/{id}/memory                  MEMORY.md
    POST       agents/{id}/memory/lines            add durable lines (§5: job → proposal)
    POST       agents/{id}/memory/save             memory_save: a line in today's note
    GET        agents/{id}/memory/notes            the daily notes, newest first
    GET/PUT    agents/{id}/memory/notes/{name}     one note
    GET        agents/{id}/memory/context          §4: {"system", "pre_turn"}
    GET        stats                               counts, with pending_proposals
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import context, facts, notes, workspace, writes
from memory.agents import get_agent_or_404
from memory.auth import agent_for, agent_id_of, require_owner
from memory.errors import Conflict, Forbidden
from memory.models import Agent
from memory.serializers import (
    AgentSerializer,
    AgentUpdateSerializer,
    BodyInputSerializer,
    ContextSerializer,
    FactInputSerializer,
    FactSerializer,
    FileBodySerializer,
    LinesInputSerializer,
    NoteBodySerializer,
    NoteSerializer,
    SaveInputSerializer,
    SaveResultSerializer,
    StatsSerializer,
    UserSerializer,
)
from memory.text import parse_note_name
from proposals.models import Proposal
from proposals.serializers import ProposalSerializer

# A REST call that does not say where it comes from is a person over HTTP (§5).
DEFAULT_SOURCE = "http"


def _written_by(request: Request) -> str:
    return agent_id_of(request) or "owner"


def _valid(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _proposal_answer(proposal: Proposal) -> Response:
    return Response(
        {"proposal": ProposalSerializer(proposal).data}, status=status.HTTP_202_ACCEPTED
    )


def _note_json(info: notes.NoteInfo) -> dict:
    return NoteSerializer(
        {
            "day": info.day.isoformat() if info.day else None,
            "name": info.name,
            "size": info.size,
            "modified": info.modified,
        }
    ).data


# --- agents ---------------------------------------------------------------------------


class AgentListView(APIView):
    @extend_schema(responses=AgentSerializer(many=True))
    def get(self, request: Request) -> Response:
        agents = Agent.objects.all()
        own = agent_id_of(request)
        if own is not None:
            agents = agents.filter(pk=own)
        return Response(AgentSerializer(agents, many=True).data)

    @extend_schema(request=AgentSerializer, responses={201: AgentSerializer})
    def post(self, request: Request) -> Response:
        require_owner(request)
        data = _valid(AgentSerializer, request.data)
        if Agent.objects.filter(pk=data["id"]).exists():
            raise Conflict(f"Agent {data['id']!r} exists.")
        try:
            with transaction.atomic():
                agent = Agent.objects.create(**data, is_default=False)
        except IntegrityError:
            raise Conflict(f"Agent {data['id']!r} exists.") from None
        return Response(AgentSerializer(agent).data, status=status.HTTP_201_CREATED)


class AgentDetailView(APIView):
    @extend_schema(responses=AgentSerializer)
    def get(self, request: Request, agent_id: str) -> Response:
        return Response(AgentSerializer(agent_for(request, agent_id)).data)

    @extend_schema(request=AgentUpdateSerializer, responses=AgentSerializer)
    def patch(self, request: Request, agent_id: str) -> Response:
        require_owner(request)
        agent = get_agent_or_404(agent_id)
        serializer = AgentUpdateSerializer(agent, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        agent = serializer.save()
        return Response(AgentSerializer(agent).data)


# --- user scope -----------------------------------------------------------------------


def _user_json() -> dict:
    return UserSerializer(
        {
            "body": facts.read_user(),
            "facts": [fact.as_dict() for fact in facts.list_facts()],
            "index": facts.read_index(),
            "hash": workspace.file_hash(facts.USER_PATH),
        }
    ).data


class UserView(APIView):
    @extend_schema(responses=UserSerializer)
    def get(self, request: Request) -> Response:
        return Response(_user_json())

    @extend_schema(request=BodyInputSerializer, responses=UserSerializer)
    def put(self, request: Request) -> Response:
        data = _valid(BodyInputSerializer, request.data)
        source = data.get("source", DEFAULT_SOURCE)
        if writes.is_job_source(source):
            # No proposal kind rewrites USER.md: a job proposes facts instead (§0, §5).
            raise Forbidden("A scheduled job may not rewrite USER.md; propose a fact instead.")
        facts.write_user(data["body"], base_hash=data.get("base_hash"))
        return Response(_user_json())


class FactView(APIView):
    @extend_schema(responses=FactSerializer)
    def get(self, request: Request, name: str) -> Response:
        return Response(FactSerializer(facts.get_fact_or_404(name).as_dict()).data)

    @extend_schema(
        request=FactInputSerializer,
        responses={200: FactSerializer, 201: FactSerializer, 202: ProposalSerializer},
    )
    def put(self, request: Request, name: str) -> Response:
        facts.fact_path(name)  # a bad name is 422 whatever the body says
        data = _valid(FactInputSerializer, request.data)
        existed = facts.get_fact(name) is not None
        fact, proposal = writes.save_fact_or_propose(
            name,
            description=data["description"],
            type=data["type"],
            body=data["body"],
            source=data.get("source", DEFAULT_SOURCE),
            written_by=_written_by(request),
        )
        if proposal is not None:
            return _proposal_answer(proposal)
        return Response(
            FactSerializer(fact.as_dict()).data,
            status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED,
        )

    @extend_schema(
        parameters=[OpenApiParameter("source", str, description="e.g. web, job:<id>")],
        responses={204: None, 202: ProposalSerializer},
    )
    def delete(self, request: Request, name: str) -> Response:
        proposal = writes.forget_fact_or_propose(
            name,
            source=request.query_params.get("source", DEFAULT_SOURCE),
            written_by=_written_by(request),
        )
        if proposal is not None:
            return _proposal_answer(proposal)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- agent scope ----------------------------------------------------------------------


def _memory_json(agent: Agent) -> dict:
    return {
        "body": notes.read_memory(agent),
        "hash": workspace.file_hash(notes.memory_path(agent)),
    }


class MemoryView(APIView):
    @extend_schema(responses=FileBodySerializer)
    def get(self, request: Request, agent_id: str) -> Response:
        return Response(_memory_json(agent_for(request, agent_id)))

    @extend_schema(request=BodyInputSerializer, responses=FileBodySerializer)
    def put(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        data = _valid(BodyInputSerializer, request.data)
        if "source" in data:
            writes.validate_source(data["source"])
        notes.write_memory(agent, data["body"], base_hash=data.get("base_hash"))
        return Response(_memory_json(agent))


class MemoryLinesView(APIView):
    @extend_schema(request=LinesInputSerializer, responses={200: None, 202: ProposalSerializer})
    def post(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        data = _valid(LinesInputSerializer, request.data)
        body, proposal = writes.add_memory_lines_or_propose(
            agent, data["lines"], source=data["source"]
        )
        if proposal is not None:
            return _proposal_answer(proposal)
        return Response({"body": body})


class MemorySaveView(APIView):
    @extend_schema(request=SaveInputSerializer, responses=SaveResultSerializer)
    def post(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        data = _valid(SaveInputSerializer, request.data)
        # memory_save needs no approval (§5), but a nonsense source is still refused.
        writes.validate_source(data.get("source", DEFAULT_SOURCE))
        line = notes.memory_save(agent, data["text"])
        day = notes.today()
        return Response({"day": day.isoformat(), "name": notes.plain_note_name(day), "line": line})


class NoteListView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("all", bool, description="also hand-kept files")],
        responses=NoteSerializer(many=True),
    )
    def get(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        include_other = request.query_params.get("all", "") in ("1", "true", "yes")
        return Response(
            [_note_json(info) for info in notes.list_notes(agent, include_other=include_other)]
        )


def _note_answer(name: str, body: str, *, code: int = status.HTTP_200_OK) -> Response:
    day, _suffix = parse_note_name(name)
    return Response(
        {
            "day": day.isoformat(),
            "name": notes.note_file_name(name),
            "body": body,
            "hash": workspace.hash_text(body),
        },
        status=code,
    )


class NoteView(APIView):
    @extend_schema(responses=NoteBodySerializer)
    def get(self, request: Request, agent_id: str, name: str) -> Response:
        agent = agent_for(request, agent_id)
        return _note_answer(name, notes.read_note(agent, name))

    @extend_schema(
        request=BodyInputSerializer, responses={200: NoteBodySerializer, 201: NoteBodySerializer}
    )
    def put(self, request: Request, agent_id: str, name: str) -> Response:
        agent = agent_for(request, agent_id)
        notes.note_path(agent, name)  # a bad name is 422 before the body is looked at
        data = _valid(BodyInputSerializer, request.data)
        if "source" in data:
            writes.validate_source(data["source"])
        created = notes.write_note(agent, name, data["body"], base_hash=data.get("base_hash"))
        return _note_answer(
            name,
            notes.read_note(agent, name),
            code=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class ContextView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("conversation", str, description="omit for the preview"),
            OpenApiParameter("chat", str, enum=list(context.CHAT_KINDS)),
        ],
        responses=ContextSerializer,
    )
    def get(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        return Response(
            context.build_context(
                agent,
                request.query_params.get("conversation") or None,
                request.query_params.get("chat") or "direct",
            )
        )


class StatsView(APIView):
    @extend_schema(responses=StatsSerializer)
    def get(self, request: Request) -> Response:
        agents = list(Agent.objects.all())
        return Response(
            {
                "pending_proposals": Proposal.objects.filter(
                    status=Proposal.Status.PENDING
                ).count(),
                "agents": len(agents),
                "facts": facts.count_facts(),
                "notes": sum(len(notes.list_notes(agent)) for agent in agents),
            }
        )
