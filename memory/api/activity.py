"""REST for the feed of what the assistants remembered (SPEC §7, memory.feed). Owner only,
like history: it holds every text the agents wrote.

- `GET /api/memory/activity/writes?agent=&kind=&source=&day=&limit=&offset=` — every write
  an agent or a job made (attended, or an approved proposal), newest first, a page; each
  with its diff.
- `POST /api/memory/activity/writes/{id}/revert` — a new version restoring the text before
  that write (restore's rules): 200 → the new version; 409 when the file changed since
  (a later write would be undone too) or it was already reverted; 404 for a version that
  is not in the feed.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import feed
from memory.api.pagination import page_parameters, page_schema, paged
from memory.api.serializers import FileVersionSerializer, WriteSerializer
from memory.auth import IsOwner, actor_name


class WriteList(APIView):
    permission_classes = [IsOwner]

    @extend_schema(
        operation_id="activity_writes",
        parameters=[
            OpenApiParameter("agent", str, description="the agent that wrote, or whose job"),
            OpenApiParameter("kind", str, enum=list(feed.KINDS)),
            OpenApiParameter("source", str, description="exact, e.g. telegram, job:nightly"),
            OpenApiParameter("day", OpenApiTypes.DATE, description="in MEMORY_TIME_ZONE"),
            *page_parameters(),
        ],
        responses=page_schema(WriteSerializer),
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        filters = feed.parse_filters(
            agent=params.get("agent"),
            kind=params.get("kind"),
            source=params.get("source"),
            day=params.get("day"),
        )
        return paged(
            request,
            feed.writes(filters),
            lambda rows: WriteSerializer(rows, many=True).data,
            view=self,
        )


class WriteRevert(APIView):
    permission_classes = [IsOwner]

    @extend_schema(
        operation_id="activity_write_revert",
        request=None,
        responses={200: FileVersionSerializer, 409: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request, version_id: int) -> Response:
        version = feed.get_write_or_404(version_id)
        made = feed.revert(version, by=actor_name(request), via="api")
        return Response(FileVersionSerializer(made).data)
