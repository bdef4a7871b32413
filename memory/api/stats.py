"""REST for the counts the pages' badge reads (SPEC §7): `GET /api/stats`. Counted without listing:
one directory listing of names per scope, no file read or stat'ed (docs/decisions.md, "Facts, notes
and the prompt")."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import facts, notes
from memory.api.serializers import StatsSerializer
from memory.auth import agent_id_of
from memory.errors import PathRefused
from memory.models import Agent
from proposals import actions


def _note_count(agent: Agent) -> int:
    try:
        return notes.count_notes(agent)
    except PathRefused:  # an agent dir that cannot be used (a link) holds no notes here
        return 0


class StatsView(APIView):
    @extend_schema(responses=StatsSerializer)
    def get(self, request: Request) -> Response:
        """The owner sees every count; an agent token only its own agent's (its pending
        proposals, its notes) and the shared facts it can read anyway."""
        own = agent_id_of(request)
        if own is None:
            agents = list(Agent.objects.all())
            pending = actions.pending_count()
        else:
            agents = list(Agent.objects.filter(pk=own))
            pending = actions.pending_count(agent=own)
        return Response(
            {
                "pending_proposals": pending,
                "agents": len(agents),
                "facts": facts.count_facts(),
                "notes": sum(_note_count(agent) for agent in agents),
            }
        )
