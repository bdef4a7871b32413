"""GET /api/memory/search (SPEC §6.2): search across scopes. Thin: check who may, validate
the query string, call memory.search, shape the answer."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import search
from memory.agents import get_agent_or_404
from memory.api.serializers import ExplainSerializer, HitSerializer, SearchQuerySerializer
from memory.auth import agent_id_of, require_agent_access


class MemorySearchView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("q", str, required=True, description="the words to find"),
            OpenApiParameter(
                "agent_id",
                str,
                description="that agent's files and the user scope; without it (owner "
                "only), every agent's and the user scope's results, interleaved by rank. "
                "An agent token without it searches its own agent.",
            ),
            OpenApiParameter("limit", int, description="1–100, default 12"),
            OpenApiParameter(
                "explain",
                bool,
                description="also say how each query word counted: its rule, in how many "
                "entries of the scope it stands, its weight",
            ),
        ],
        responses=inline_serializer(
            "SearchResults",
            {"results": HitSerializer(many=True), "explain": ExplainSerializer(required=False)},
        ),
    )
    def get(self, request: Request) -> Response:
        params = SearchQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        agent_id = data.get("agent_id") or agent_id_of(request)
        if agent_id:
            # Access first: another agent's token learns nothing, not even whether it exists.
            require_agent_access(request, agent_id)
            get_agent_or_404(agent_id)
        hits = search.search_all(data["q"], agent_id=agent_id, limit=data["limit"])
        body = {"results": HitSerializer(hits, many=True).data}
        if data["explain"]:
            agent = get_agent_or_404(agent_id) if agent_id else None
            body["explain"] = ExplainSerializer(search.explain(data["q"], agent=agent)).data
        return Response(body)
