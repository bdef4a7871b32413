"""REST for an agent's daily notes (SPEC §3, §14.1): the list, newest first, and one note."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import notes
from memory.api.common import source_of, valid
from memory.api.pagination import page_parameters, page_schema, paged
from memory.api.serializers import BodyInputSerializer, NoteBodySerializer, NoteSerializer
from memory.auth import agent_for
from memory.errors import NotFound
from memory.listing import Pages
from memory.text import note_day


def _note_json(info: notes.NoteInfo) -> dict:
    return NoteSerializer(
        {
            "day": info.day.isoformat() if info.day else None,
            "name": info.name,
            "size": info.size,
            "modified": info.modified,
        }
    ).data


class NoteListView(APIView):
    @extend_schema(
        operation_id="agents_memory_notes_list",
        parameters=[
            OpenApiParameter("all", bool, description="also hand-kept files"),
            *page_parameters(),
        ],
        responses=page_schema(NoteSerializer),
    )
    def get(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        include_other = request.query_params.get("all", "") in ("1", "true", "yes")
        listed = Pages(
            lambda offset, limit: notes.notes_listing(
                agent, offset=offset, limit=limit, include_other=include_other
            )
        )
        return paged(request, listed, lambda page: [_note_json(info) for info in page])


def _note_answer(agent, name: str, *, code: int = status.HTTP_200_OK) -> Response:
    day, _suffix = note_day(name) or (None, "")
    # Text and hash from one read: a PUT with this hash is 409 over anything written since.
    found = notes.read_note_with_hash(agent, name)
    if found is None:
        raise NotFound(f"No note {notes.note_file_name(name)} for agent {agent.id}.")
    return Response(
        {
            "day": day.isoformat() if day else None,
            "name": notes.note_file_name(name),
            "body": found.text,
            "hash": found.hash,
            "invalid_utf8": found.invalid_utf8,
        },
        status=code,
    )


class NoteView(APIView):
    @extend_schema(responses=NoteBodySerializer)
    def get(self, request: Request, agent_id: str, name: str) -> Response:
        agent = agent_for(request, agent_id)
        return _note_answer(agent, name)

    @extend_schema(
        request=BodyInputSerializer, responses={200: NoteBodySerializer, 201: NoteBodySerializer}
    )
    def put(self, request: Request, agent_id: str, name: str) -> Response:
        agent = agent_for(request, agent_id)
        notes.existing_note_path(agent, name)  # a bad name is 422 before the body is read
        data = valid(BodyInputSerializer, request.data)
        source_of(request, data.get("source"))  # a nonsense source is refused
        created = notes.write_note(agent, name, data["body"], base_hash=data.get("base_hash"))
        return _note_answer(
            agent, name, code=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )
