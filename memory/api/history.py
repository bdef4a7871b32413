"""REST for the history of memory files (SPEC §7, memory.history). Owner only: history
holds every text a file ever had, another agent's and the owner's own included.

- `GET /api/memory/history?path=&agent=&limit=` — versions, newest first (no text).
- `GET /api/memory/history/{id}` — one version with its text, what it replaced, and the
  file's `current_hash` (send it back to restore).
- `POST /api/memory/history/{id}/restore` `{"base_hash"}` — write that version's text
  again as a new version: 200 → the new version; 409 when the file changed since
  `base_hash` was read (or already holds that text); 422 for a deleted-file version.
- `GET /api/memory/history/compare?from=&to=` — two versions of one file (`to` omitted
  or `current`: the file now) and the diff between them.
- `GET /api/memory/blame?path=` — for each line of the file, the version that brought it,
  who made it (`who`: owner, agent, job, rule, outside, app; `who_name`) and its source.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory import history
from memory.api.common import valid
from memory.api.serializers import (
    BlameLineSerializer,
    FileVersionSerializer,
    FileVersionTextSerializer,
    RestoreSerializer,
)
from memory.auth import IsOwner, actor_name
from memory.errors import InvalidInput
from proposals.diff import diff_lines

MAX_LIMIT = 1000


def _limit(request: Request) -> int:
    raw = request.query_params.get("limit") or "200"
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise InvalidInput(f"`limit` must be a whole number from 1 to {MAX_LIMIT}.")
    return int(raw)


class HistoryList(APIView):
    permission_classes = [IsOwner]

    @extend_schema(
        operation_id="history_list",
        parameters=[
            OpenApiParameter("path", OpenApiTypes.STR, description="a workspace path"),
            OpenApiParameter("agent", OpenApiTypes.STR, description="an agent id; '' = user"),
            OpenApiParameter("limit", OpenApiTypes.INT),
        ],
        responses=FileVersionSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        path = request.query_params.get("path")
        agent = request.query_params.get("agent")
        if path is None and agent is None:
            raise InvalidInput("Give `path` (a file) or `agent` (an agent id, '' = user scope).")
        rows = history.versions(path=path or None, agent=agent)[: _limit(request)]
        return Response(FileVersionSerializer(rows, many=True).data)


def version_with_text(version) -> dict:
    data = FileVersionTextSerializer(version).data
    data["text"] = history.text_of(history.content(version))
    data["replaced"] = history.text_of(history.replaced(version))
    data["current_hash"] = history.current_hash(version.path)
    return data


class HistoryDetail(APIView):
    permission_classes = [IsOwner]

    @extend_schema(operation_id="history_read", responses=FileVersionTextSerializer)
    def get(self, request: Request, version_id: int) -> Response:
        return Response(version_with_text(history.get_version_or_404(version_id)))


class HistoryRestore(APIView):
    permission_classes = [IsOwner]

    @extend_schema(
        operation_id="history_restore",
        request=RestoreSerializer,
        responses={200: FileVersionSerializer, 409: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request, version_id: int) -> Response:
        version = history.get_version_or_404(version_id)
        data = valid(RestoreSerializer, request.data)
        made = history.restore(version, base_hash=data["base_hash"], by=actor_name(request))
        return Response(FileVersionSerializer(made).data)


def blame_rows(path: str) -> list[dict]:
    rows = []
    for line in history.blame(path):
        version = line.version
        rows.append(
            {
                "line": line.number,
                "text": line.text,
                "version": version.pk if version else None,
                "seq": version.seq if version else None,
                "proposal": version.proposal_id if version else None,
                "run": version.run_id if version else None,
                "date": version.created_at if version else None,
                "actor": version.actor if version else "",
                "source": version.source if version else "",
                "who": history.who(version)[0],
                "who_name": history.who(version)[1],
            }
        )
    return rows


class Blame(APIView):
    permission_classes = [IsOwner]

    @extend_schema(
        operation_id="history_blame",
        parameters=[OpenApiParameter("path", OpenApiTypes.STR, required=True)],
        responses=BlameLineSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        path = request.query_params.get("path")
        if not path:
            raise InvalidInput("Give `path`, e.g. MEMORY.md or agents/<id>/MEMORY.md.")
        return Response(
            {"path": path, "lines": BlameLineSerializer(blame_rows(path), many=True).data}
        )


def _version_param(request: Request, name: str) -> int:
    raw = request.query_params.get(name) or ""
    if not raw.isdigit():
        raise InvalidInput(f"`{name}` is a version id (GET /api/memory/history lists them).")
    return int(raw)


class HistoryCompare(APIView):
    permission_classes = [IsOwner]

    @extend_schema(
        operation_id="history_compare",
        parameters=[
            OpenApiParameter("from", OpenApiTypes.INT, required=True),
            OpenApiParameter("to", OpenApiTypes.STR, description="a version id, or current"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request) -> Response:
        first = history.get_version_or_404(_version_param(request, "from"))
        to = request.query_params.get("to") or "current"
        second = (
            None if to == "current" else history.get_version_or_404(_version_param(request, "to"))
        )
        before, after = history.compared(first, second)
        return Response(
            {
                "path": first.path,
                "from": FileVersionSerializer(first).data,
                "to": FileVersionSerializer(second).data if second is not None else "current",
                "from_text": before,
                "to_text": after,
                "diff": [{"op": op, "text": text} for op, text in diff_lines(before, after)],
            }
        )
