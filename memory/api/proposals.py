"""REST for proposals (SPEC §7, §14). Owner only: deciding what becomes shared memory is
the person's job, so agent tokens get 403 on every route here, listing included."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.api.pagination import page_parameters, page_schema, paged
from memory.api.serializers import DecisionSerializer, ProposalSerializer
from memory.auth import IsOwner, actor_name
from memory.errors import InvalidInput, NotFound
from proposals import actions
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
        proposal = actions.decide(
            proposal, approve_it=decision.validated_data["approve"], by=actor_name(request)
        )
        return Response(ProposalSerializer(proposal).data)


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
        proposal = actions.undo(get_proposal_or_404(proposal_id), by=actor_name(request))
        return Response(ProposalSerializer(proposal).data)
