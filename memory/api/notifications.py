"""REST for the notices that proposals wait (SPEC §7, memory.jobs.notify). Owner only.

- `GET /api/memory/notifications` — each channel's status (configured from the
  environment or not, and how) and the digest's language.
- `GET /api/memory/notifications/deliveries` — every delivery, newest first, a page.
- `POST /api/memory/notifications/test` — the digest, marked as a test, to every configured
  channel: 200 → `{"deliveries": […]}` (each with its result); 422 when none is configured.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.api.pagination import page_parameters, page_schema, paged
from memory.api.serializers import DeliverySerializer
from memory.auth import IsOwner, actor_name
from memory.jobs import notify
from memory.models import Delivery


class NotificationStatus(APIView):
    permission_classes = [IsOwner]

    @extend_schema(operation_id="notifications_status", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        return Response(notify.status())


class DeliveryList(APIView):
    permission_classes = [IsOwner]

    @extend_schema(
        operation_id="notifications_deliveries",
        parameters=page_parameters(),
        responses=page_schema(DeliverySerializer),
    )
    def get(self, request: Request) -> Response:
        rows = Delivery.objects.order_by("-sent_at", "-id")
        return paged(
            request, rows, lambda page: DeliverySerializer(page, many=True).data, view=self
        )


class NotificationTest(APIView):
    permission_classes = [IsOwner]

    @extend_schema(
        operation_id="notifications_test",
        request=None,
        responses={200: DeliverySerializer(many=True), 422: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request) -> Response:
        done = notify.send_test(by=actor_name(request))
        return Response({"deliveries": DeliverySerializer(done, many=True).data})
