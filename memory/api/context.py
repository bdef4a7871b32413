"""REST for the prompt context (SPEC §4): `{"system", "pre_turn"}` for a conversation."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import context
from memory.api.serializers import ContextSerializer
from memory.auth import agent_for


class ContextView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("conversation", str, description="omit for the preview"),
            OpenApiParameter(
                "turn",
                str,
                description="this turn's id: the same turn answers the same block (a retry "
                "is safe); only a new turn advances what the conversation has seen",
            ),
            OpenApiParameter("chat", str, enum=list(context.CHAT_KINDS)),
            OpenApiParameter(
                "runtime",
                str,
                enum=sorted(context.RUNTIMES),
                description="a runtime that injects USER.md and MEMORY.md itself (OpenClaw): "
                "their sections are left out of `system`",
            ),
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
                turn=request.query_params.get("turn") or None,
                runtime=request.query_params.get("runtime") or None,
            )
        )
