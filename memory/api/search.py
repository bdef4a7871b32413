"""GET /api/memory/search (SPEC §6.2): search across scopes. Thin: check who may, validate
the query string, call memory.search, shape the answer."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param
from rest_framework.views import APIView

from memory import search
from memory.agents import get_agent_or_404
from memory.api.serializers import (
    ExplainSerializer,
    HitSerializer,
    SearchQuerySerializer,
    hit_json,
)
from memory.auth import agent_id_of, require_agent_access
from memory.query import Query


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
            OpenApiParameter("offset", int, description="results to skip (default 0)"),
        ],
        responses=inline_serializer(
            "SearchResults",
            {
                "count": serializers.IntegerField(
                    help_text=f"results found, counted up to {search.COUNT_CAP}"
                ),
                "count_capped": serializers.BooleanField(
                    help_text="true when there may be more than `count`"
                ),
                "next": serializers.URLField(allow_null=True),
                "previous": serializers.URLField(allow_null=True),
                "offset": serializers.IntegerField(),
                "limit": serializers.IntegerField(),
                "results": HitSerializer(many=True),
                "explain": ExplainSerializer(required=False),
            },
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
        query = Query.parse(data["q"])
        window = search.search_window(
            query, agent_id=agent_id, offset=data["offset"], limit=data["limit"]
        )
        body = {
            "count": window.total,
            "count_capped": window.capped,
            "next": _link(request, window.offset + window.limit)
            if window.offset + window.limit < window.total
            else None,
            "previous": _link(request, max(window.offset - window.limit, 0))
            if window.offset
            else None,
            "offset": window.offset,
            "limit": window.limit,
            "results": [hit_json(hit) for hit in window.hits],
        }
        if data["explain"]:
            agent = get_agent_or_404(agent_id) if agent_id else None
            body["explain"] = ExplainSerializer(search.explain(query, agent=agent)).data
        return Response(body)


def _link(request: Request, offset: int) -> str:
    url = request.build_absolute_uri()
    return (
        replace_query_param(url, "offset", offset) if offset else remove_query_param(url, "offset")
    )
