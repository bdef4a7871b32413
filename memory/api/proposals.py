"""REST for proposals (SPEC §7, §14). Owner only: deciding what becomes shared memory is
the person's job, so agent tokens get 403 on every route here, listing included."""

from __future__ import annotations

from django.utils.http import urlencode
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.api.common import valid
from memory.api.pagination import page_parameters, page_schema, paged
from memory.api.serializers import (
    BulkDecisionSerializer,
    DecisionSerializer,
    ProposalSerializer,
    ReapplySerializer,
)
from memory.auth import IsOwner, actor_name
from memory.errors import Conflict, InvalidInput, NotFound
from proposals import actions, diff
from proposals.models import Proposal

STATUS_FILTERS = {choice.value for choice in Proposal.Status} | {"all"}


def get_proposal_or_404(proposal_id: int) -> Proposal:
    proposal = Proposal.objects.filter(pk=proposal_id).first()
    if proposal is None:
        raise NotFound(f"No proposal {proposal_id}.")
    return proposal


class ProposalList(APIView):
    """`GET /api/memory/proposals?status=&kind=&agent=` — default pending, `all` for
    every status; newest first."""

    permission_classes = [IsOwner]

    @extend_schema(
        operation_id="proposals_list",
        parameters=[
            OpenApiParameter("status", OpenApiTypes.STR, description="pending (default), all, …"),
            OpenApiParameter("kind", OpenApiTypes.STR),
            OpenApiParameter("agent", OpenApiTypes.STR),
            *page_parameters(),
        ],
        responses=page_schema(ProposalSerializer),
    )
    def get(self, request: Request) -> Response:
        status = request.query_params.get("status") or Proposal.Status.PENDING
        if status not in STATUS_FILTERS:
            raise InvalidInput(
                f"Unknown status {status!r}: use one of {', '.join(sorted(STATUS_FILTERS))}."
            )
        rows = Proposal.objects.select_related("agent", "run").order_by("-created_at", "-id")
        if status != "all":
            rows = rows.filter(status=status)
        if kind := request.query_params.get("kind"):
            rows = rows.filter(kind=kind)
        if agent := request.query_params.get("agent"):
            rows = rows.filter(agent_id=agent)
        return paged(request, rows, lambda page: ProposalSerializer(page, many=True).data)


class ProposalDetail(APIView):
    """`GET /api/memory/proposals/{id}`; `POST` `{"approve": true|false}` decides it once
    (200 → the proposal; 409 when already decided or when the target changed since)."""

    permission_classes = [IsOwner]

    @extend_schema(operation_id="proposals_read", responses=ProposalSerializer)
    def get(self, request: Request, proposal_id: int) -> Response:
        return Response(ProposalSerializer(get_proposal_or_404(proposal_id)).data)

    @extend_schema(
        operation_id="proposals_decide",
        request=DecisionSerializer,
        responses={200: ProposalSerializer, 409: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        proposal = get_proposal_or_404(proposal_id)
        decision = DecisionSerializer(data=request.data)
        decision.is_valid(raise_exception=True)
        data = decision.validated_data
        options = {
            key: data[key] for key in ("pages", "hunks", "texts", "lines", "heading") if key in data
        }
        if not data["approve"]:
            if options:
                raise InvalidInput(
                    "`pages`, `hunks`, `texts`, `lines` and `heading` go with an approval."
                )
            proposal = actions.reject(proposal, by=actor_name(request))
        else:
            if "pages" in options:
                options["paths"] = options.pop("pages")
            proposal = actions.approve(
                proposal, by=actor_name(request), skip_stale=data["skip_stale"], **options
            )
        return Response(ProposalSerializer(proposal).data)


class ProposalHunks(APIView):
    """`GET /api/memory/proposals/{id}/hunks` — each change of each file as
    `{"path", "hunk": [i1, i2, j1, j2], "removed": [...], "added": [...]}`: old lines i1:i2
    become new lines j1:j2; send the ones to keep as `hunks` when approving."""

    permission_classes = [IsOwner]

    @extend_schema(operation_id="proposals_hunks", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, proposal_id: int) -> Response:
        proposal = get_proposal_or_404(proposal_id)
        before = actions.previous_texts(proposal)
        after = actions.planned_writes(proposal)
        out = []
        for path, hunks in diff.hunks_of(proposal).items():
            old = (before.get(path) or "").splitlines(keepends=True)
            new = (after.get(path) or "").splitlines(keepends=True)
            for i1, i2, j1, j2 in hunks:
                out.append(
                    {
                        "path": path,
                        "hunk": [i1, i2, j1, j2],
                        "removed": old[i1:i2],
                        "added": new[j1:j2],
                    }
                )
        return Response({"hunks": out})


class ProposalBulk(APIView):
    """`POST /api/memory/proposals/bulk` `{"ids": [...], "approve": bool}` — each decided
    exactly once, oldest first (lines for one MEMORY.md all apply, each on the file the one
    before left): 200 → `{"decided": [ids], "refused": [{"id", "detail"}], "results":
    [{"id", "decided", "status", "detail", "superseded"}]}` — one result per id asked for,
    in that order, naming the proposals each approval superseded."""

    permission_classes = [IsOwner]

    @extend_schema(
        operation_id="proposals_bulk", request=BulkDecisionSerializer, responses=OpenApiTypes.OBJECT
    )
    def post(self, request: Request) -> Response:
        data = BulkDecisionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        outcomes = actions.decide_each(
            data.validated_data["ids"],
            approve_it=data.validated_data["approve"],
            by=actor_name(request),
        )
        return Response(
            {
                "decided": [o.id for o in outcomes if o.decided],
                "refused": [{"id": o.id, "detail": o.detail} for o in outcomes if not o.decided],
                "results": [
                    {
                        "id": o.id,
                        "decided": o.decided,
                        "status": o.status,
                        "detail": o.detail,
                        "superseded": list(o.superseded),
                    }
                    for o in outcomes
                ],
            }
        )


class ProposalUndo(APIView):
    """`POST /api/memory/proposals/{id}/undo` — 200 → the proposal; 409 when it was not
    applied, was already undone, or its target changed since."""

    permission_classes = [IsOwner]

    @extend_schema(
        operation_id="proposals_undo",
        request=None,
        responses={200: ProposalSerializer, 409: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        try:
            proposal = actions.undo(get_proposal_or_404(proposal_id), by=actor_name(request))
        except Conflict as exc:
            paths = exc.extra.get("paths") or []
            if paths:
                # What to do instead: restore a version, from the file's history.
                exc.extra["instead"] = (
                    "Undo only puts back a text nobody changed since. Restore an earlier "
                    "version from the file's history instead (what was written since stays "
                    "in the history)."
                )
                exc.extra["history"] = [
                    f"/api/memory/history?{urlencode({'path': p})}" for p in paths
                ]
            raise
        return Response(ProposalSerializer(proposal).data)


def reapply_json(proposal: Proposal) -> dict:
    """What re-applying would write, per file: the text now and its hash (send it back as
    `base_hashes`), the merge, and each change of the proposal with whether it applied."""
    files = []
    for item in actions.reapply_plan(proposal):
        merged = item.merged
        files.append(
            {
                "path": item.path,
                "changed_since": item.stale,
                "current_hash": item.current_hash,
                "current": item.current,
                "merged": merged.text if merged is not None else item.proposed,
                "hunks": [
                    {
                        "hunk": list(hunk.hunk),
                        "removed": hunk.removed,
                        "added": hunk.added,
                        "applied": hunk.applied,
                        "current": hunk.current,
                    }
                    for hunk in (merged.hunks if merged is not None else [])
                ],
                "conflicts": len(merged.conflicts) if merged is not None else 0,
            }
        )
    return {"proposal": proposal.pk, "status": proposal.status, "files": files}


class ProposalReapply(APIView):
    """`GET /api/memory/proposals/{id}/reapply` — a stale proposal merged into the current
    text (SPEC §7): per file the text now, its `current_hash`, the `merged` text and every
    change with `applied` (false: it conflicts with what changed since, left out).
    `POST` `{"base_hashes": {path: current_hash}, "texts"?: {path: your resolution}}` —
    pending: approved with the merged (or your) texts → 200; superseded: a new pending
    proposal of them → 201. 409 when a file changed again since, or it was already
    re-applied; 422 when there is nothing to re-apply."""

    permission_classes = [IsOwner]

    @extend_schema(operation_id="proposals_reapply_plan", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, proposal_id: int) -> Response:
        return Response(reapply_json(get_proposal_or_404(proposal_id)))

    @extend_schema(
        operation_id="proposals_reapply",
        request=ReapplySerializer,
        responses={200: ProposalSerializer, 201: ProposalSerializer, 409: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        proposal = get_proposal_or_404(proposal_id)
        data = valid(ReapplySerializer, request.data)
        made, created = actions.reapply(
            proposal, by=actor_name(request), seen=data["base_hashes"], texts=data.get("texts")
        )
        return Response(ProposalSerializer(made).data, status=201 if created else 200)
