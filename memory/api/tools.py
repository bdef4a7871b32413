"""REST for the agent tool surface (SPEC §14.1, §16).

`GET /api/agents/{id}/tools[?format=openai|responses|anthropic|mcp]` lists the tools
(memory/tool_formats.py); `POST /api/agents/{id}/tools/{tool}` calls one with the body as
its arguments. The body is the model's arguments, so it never carries `source` (422): the
presence comes from the caller (a job token, or `X-Memory-Source`; memory.presence). An
agent token reaches only its own agent's tools; the owner reaches every agent's.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ParseError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import tool_formats, tools
from memory.api.serializers import ProposalSerializer
from memory.auth import agent_for, caller_of
from memory.errors import InvalidInput


class _FormatIsOurs(DefaultContentNegotiation):
    """`?format=` names a provider's tool shape here, not a DRF renderer: the answer is
    JSON whatever it says."""

    class settings:  # noqa: N801 - stands in for DRF's api_settings
        URL_FORMAT_OVERRIDE = None


class ToolListView(APIView):
    content_negotiation_class = _FormatIsOurs

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "format",
                str,
                enum=list(tool_formats.FORMATS),
                description="the list in a provider's shape; omitted: the registry's own",
            )
        ],
        responses=OpenApiTypes.OBJECT,
        summary="The agent's tools",
    )
    def get(self, request: Request, agent_id: str) -> Response:
        agent_for(request, agent_id)
        return Response(tool_formats.export_tools(request.query_params.get("format") or None))


class ToolCallView(APIView):
    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 202: OpenApiTypes.OBJECT},
        summary="Call a tool as the agent",
        description=(
            "Body: the tool's arguments (never `source`: a job token or the "
            'X-Memory-Source header states it). 200 → {"result"}; 202 → '
            '{"result", "proposal"} when a job\'s write became a proposal.'
        ),
    )
    def post(self, request: Request, agent_id: str, tool: str) -> Response:
        agent = agent_for(request, agent_id)
        try:
            arguments = request.data  # JSON only: another content type is 415
        except ParseError as exc:
            raise InvalidInput(f"The body is not valid JSON ({exc.detail}).") from None
        if not isinstance(arguments, dict):
            raise InvalidInput("The body must be a JSON object of the tool's arguments.")
        source = caller_of(request).source()
        result = tools.call_tool_result(agent, tool, arguments, source=source)
        answer = {"result": result.text}
        if result.proposal is None:
            return Response(answer)
        return Response(
            {**answer, "proposal": ProposalSerializer(result.proposal).data},
            status=status.HTTP_202_ACCEPTED,
        )
