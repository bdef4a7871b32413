"""The one place where errors become HTTP answers for the API."""

from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from memory.errors import DomainError


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, DomainError):
        return Response(
            {"detail": exc.message, "code": exc.code, **exc.extra}, status=exc.status_code
        )
    if isinstance(exc, RequestDataTooBig):
        return Response(
            {"detail": "Request body is too large.", "code": "too_large"},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    response = drf_exception_handler(exc, context)
    # Malformed fields are 422 across the API (SPEC §17), not DRF's default 400.
    if isinstance(exc, exceptions.ValidationError) and response is not None:
        response.status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    return response
