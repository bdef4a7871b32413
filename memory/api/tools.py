"""REST for the agent tool surface (SPEC §14.1, §16).

`GET /api/agents/{id}/tools` lists the tools (name, description, JSON schema);
`POST /api/agents/{id}/tools/{tool}` calls one with the body as its arguments (plus
`source`). An agent token reaches only its own agent's tools; the owner reaches every
agent's.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ParseError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import tools
from memory.api.serializers import ProposalSerializer
from memory.auth import agent_for
from memory.errors import InvalidInput


class ToolListView(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT, summary="The agent's tools")
    def get(self, request: Request, agent_id: str) -> Response:
        agent_for(request, agent_id)
        return Response(tools.list_tools())


class ToolCallView(APIView):
    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 202: OpenApiTypes.OBJECT},
        summary="Call a tool as the agent",
        description=(
            'Body: the tool\'s arguments plus "source". 200 → {"result"}; 202 → '
            '{"result", "proposal"} when a job\'s write became a proposal.'
        ),
    )
    def post(self, request: Request, agent_id: str, tool: str) -> Response:
        agent = agent_for(request, agent_id)
        try:
            arguments = request.data
        except ParseError:
            raise InvalidInput("The body is not valid JSON.") from None
        if hasattr(arguments, "dict"):  # a form-encoded body (QueryDict)
            arguments = arguments.dict()
        if not isinstance(arguments, dict):
            raise InvalidInput("The body must be a JSON object of the tool's arguments.")
        result = tools.call_tool_result(agent, tool, arguments)
        if result.proposal is None:
            return Response({"result": result.text})
        return Response(
            {"result": result.text, "proposal": ProposalSerializer(result.proposal).data},
            status=status.HTTP_202_ACCEPTED,
        )
