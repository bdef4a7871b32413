"""REST for runs and the consolidation trigger (SPEC §8, §12, §14.1).

- `POST /api/agents/{id}/memory/consolidate` → 202 `{"run": {"id", "status", …}}`; 409
  while a consolidation or compile runs for that agent (the database decides).
- `GET /api/runs?agent=&kind=&status=&limit=&offset=` → newest first, a page.
- `GET /api/runs/{id}`.

The owner sees every run; an agent token only its own agent's (another agent's is 403).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.api.pagination import page_parameters, page_schema, paged
from memory.api.serializers import RunAnswerSerializer, RunSerializer
from memory.auth import agent_for, agent_id_of, require_agent_access
from memory.errors import InvalidInput
from memory.jobs.nightly import start_consolidation
from memory.jobs.runs import get_run_or_404
from memory.models import Run


class ConsolidateView(APIView):
    @extend_schema(
        request=None,
        responses={202: RunAnswerSerializer},
    )
    def post(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        run = start_consolidation(agent, trigger="api")
        return Response({"run": RunSerializer(run).data}, status=status.HTTP_202_ACCEPTED)


class RunListView(APIView):
    @extend_schema(
        operation_id="runs_list",
        parameters=[
            OpenApiParameter("agent", str),
            OpenApiParameter("kind", str, enum=Run.Kind.values),
            OpenApiParameter("status", str, enum=Run.Status.values),
            *page_parameters(),
        ],
        responses=page_schema(RunSerializer),
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        rows = Run.objects.prefetch_related("proposals").order_by("-started_at", "-id")
        own = agent_id_of(request)
        wanted = params.get("agent") or None
        if own is not None:
            if wanted is not None:
                require_agent_access(request, wanted)
            wanted = own
        if wanted:
            rows = rows.filter(agent_id=wanted)
        for key, choices in (("kind", Run.Kind.values), ("status", Run.Status.values)):
            value = params.get(key)
            if value:
                if value not in choices:
                    raise InvalidInput(f"Unknown run {key} {value!r}: one of {', '.join(choices)}.")
                rows = rows.filter(**{key: value})
        return paged(request, rows, lambda page: RunSerializer(page, many=True).data)


class RunDetailView(APIView):
    @extend_schema(responses=RunSerializer)
    def get(self, request: Request, run_id: int) -> Response:
        run = get_run_or_404(run_id)
        require_agent_access(request, run.agent_id)
        return Response(RunSerializer(run).data)
