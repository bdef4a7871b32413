"""REST for the script store (SPEC §11, §14.1). An agent token reaches only its own agent."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import scripts
from memory.api.pagination import page_parameters, page_schema, paged
from memory.api.serializers import EntrySerializer, ValueSerializer
from memory.auth import agent_for


class ScriptStoreList(APIView):
    @extend_schema(
        operation_id="agents_script_store_list",
        parameters=[
            OpenApiParameter("schedule", str),
            OpenApiParameter("conversation", str),
            *page_parameters(),
        ],
        responses=page_schema(EntrySerializer),
    )
    def get(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        entries = scripts.list_entries(
            agent,
            schedule=request.query_params.get("schedule") or None,
            conversation=request.query_params.get("conversation") or None,
        )
        return paged(request, entries, lambda page: EntrySerializer(page, many=True).data)


class ScriptStoreEntry(APIView):
    @extend_schema(responses=EntrySerializer)
    def get(self, request: Request, agent_id: str, scope: str, scope_id: str, key: str):
        agent = agent_for(request, agent_id)
        return Response(EntrySerializer(scripts.get_entry_or_404(agent, scope, scope_id, key)).data)

    @extend_schema(request=ValueSerializer, responses=EntrySerializer)
    def put(self, request: Request, agent_id: str, scope: str, scope_id: str, key: str):
        agent = agent_for(request, agent_id)
        scripts.validate_scope(scope)
        data = ValueSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        entry = scripts.store(agent, scope, scope_id, key, data.validated_data["value"])
        return Response(EntrySerializer(entry).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, agent_id: str, scope: str, scope_id: str, key: str):
        agent = agent_for(request, agent_id)
        scripts.delete_entry(agent, scope, scope_id, key)
        return Response(status=204)
