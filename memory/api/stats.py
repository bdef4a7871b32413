"""REST for the counts the pages' badge reads (SPEC §7): `GET /api/stats`. Counted without
listing: one directory listing of names per scope, no file read or stat'ed (issue 17.5)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import facts, notes
from memory.api.serializers import StatsSerializer
from memory.models import Agent
from proposals import actions


class StatsView(APIView):
    @extend_schema(responses=StatsSerializer)
    def get(self, request: Request) -> Response:
        agents = list(Agent.objects.all())
        return Response(
            {
                "pending_proposals": actions.pending_count(),
                "agents": len(agents),
                "facts": facts.count_facts(),
                "notes": sum(notes.count_notes(agent) for agent in agents),
            }
        )
