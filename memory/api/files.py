"""REST for every Markdown file of an agent's memory (SPEC §3): the recursive listing
— notes, hand-kept files and subfolders, wiki pages, the extra paths — and one file by the
path memory_get reads it with (the same path rules), replaced whole where it may be."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import notes, reading
from memory.api.common import source_of, valid
from memory.api.serializers import (
    BodyInputSerializer,
    MemoryFileBodySerializer,
    MemoryFileSerializer,
)
from memory.auth import agent_for
from memory.errors import InvalidInput
from memory.models import Agent


def _file_json(agent: Agent, path: str) -> dict:
    body, body_hash = reading.read_with_hash(agent, path)
    kind, editable = reading.file_kind(agent, path)
    return {"path": path, "kind": kind, "body": body, "hash": body_hash, "editable": editable}


class MemoryFileListView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("extra", bool, description="include the extra paths")],
        responses=MemoryFileSerializer(many=True),
    )
    def get(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        include_extra = request.query_params.get("extra", "1") not in ("0", "false", "no")
        return Response(
            [
                MemoryFileSerializer(row.as_dict()).data
                for row in reading.memory_files(agent, include_extra=include_extra)
            ]
        )


class MemoryFileView(APIView):
    @extend_schema(responses=MemoryFileBodySerializer)
    def get(self, request: Request, agent_id: str, path: str) -> Response:
        agent = agent_for(request, agent_id)
        return Response(_file_json(agent, path))

    @extend_schema(request=BodyInputSerializer, responses=MemoryFileBodySerializer)
    def put(self, request: Request, agent_id: str, path: str) -> Response:
        agent = agent_for(request, agent_id)
        kind, editable = reading.file_kind(agent, path)
        if kind == "extra":
            reading.resolve_memory_path(agent, path)  # PathRefused: read-only, with why
        if kind == "memory":
            raise InvalidInput(f"{path} is written with PUT /api/agents/{agent.id}/memory.")
        if kind == "fact":
            raise InvalidInput("A fact is written with PUT /api/memory/user/facts/{name}.")
        if not editable:
            raise InvalidInput(f"{path} is a wiki page: write it with PUT …/memory/wiki/pages.")
        reading.resolve_memory_path(agent, path)  # a bad path is 422 before the body is read
        data = valid(BodyInputSerializer, request.data)
        source_of(request, data.get("source"))  # a nonsense source is refused
        notes.write_memory_file(agent, path, data["body"], base_hash=data.get("base_hash"))
        return Response(_file_json(agent, path))
