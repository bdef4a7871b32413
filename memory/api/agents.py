"""REST for agents (SPEC §12, §14.1): list and create (create: owner only), read and edit."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.agents import create_agent, get_agent_or_404
from memory.api.common import valid
from memory.api.pagination import page_parameters, page_schema, paged
from memory.api.serializers import AgentSerializer, AgentUpdateSerializer
from memory.auth import agent_for, agent_id_of, require_owner
from memory.models import Agent


class AgentListView(APIView):
    @extend_schema(
        operation_id="agents_list",
        parameters=page_parameters(),
        responses=page_schema(AgentSerializer),
    )
    def get(self, request: Request) -> Response:
        agents = Agent.objects.all()
        own = agent_id_of(request)
        if own is not None:
            agents = agents.filter(pk=own)
        return paged(request, agents, lambda rows: AgentSerializer(rows, many=True).data)

    @extend_schema(request=AgentSerializer, responses={201: AgentSerializer})
    def post(self, request: Request) -> Response:
        require_owner(request)
        agent = create_agent(**valid(AgentSerializer, request.data))
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
