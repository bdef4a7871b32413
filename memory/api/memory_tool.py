"""`POST /api/agents/{id}/memory-tool`: Anthropic's client-side memory tool
(`memory_20250818`) on the agent's memory (memory/memory_tool.py).

The body is one command exactly as Claude sends it in a `tool_use` block's `input`. 200 →
`{"result": "<text for the tool_result>"}`; 202 → `{"result", "proposal"}` when a job
token's edit of MEMORY.md became a proposal; a refused command is 4xx with the text
Claude expects in `detail` (send it back as a tool_result with `is_error: true`).
Presence is the caller's (memory.presence), as for every write.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ParseError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import memory_tool
from memory.auth import agent_for, caller_of
from memory.errors import InvalidInput


class MemoryToolView(APIView):
    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 202: OpenApiTypes.OBJECT},
        summary="Run one command of Anthropic's memory tool (memory_20250818)",
    )
    def post(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        try:
            command = request.data
        except ParseError:
            raise InvalidInput("The body is not valid JSON.") from None
        source = caller_of(request).source()
        answer = memory_tool.run_command(agent, command, source=source)
        if answer.proposal is None:
            return Response({"result": answer.text})
        proposal = answer.proposal
        return Response(
            {
                "result": answer.text,
                "proposal": {"id": proposal.pk, "kind": proposal.kind, "status": proposal.status},
            },
            status=status.HTTP_202_ACCEPTED,
        )
