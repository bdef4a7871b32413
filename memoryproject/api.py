"""The one place where errors become HTTP answers for the API, and the one JSON parser."""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.db import OperationalError
from rest_framework import exceptions, parsers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from memory.auth import unauthorized
from memory.errors import DiskFull, DomainError
from memory.text import refuse_unstorable

MAX_JSON_DEPTH = 64  # arrays and objects inside each other; script-store values included


def _depth_exceeds(value: object, limit: int) -> bool:
    """Whether `value` nests arrays/objects deeper than `limit` (walked without recursion,
    so the check itself cannot overflow the stack)."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, with JSON nested deeper than MAX_JSON_DEPTH refused (400):
    Python's decoder raises RecursionError on deep nesting (a 500), and every later step
    (serializers, jsonschema, the database's JSON) recurses too. What no store can hold —
    NUL, a lone surrogate, an integer beyond 64 bits, anywhere in the body — is 422 here,
    once for every endpoint (SPEC §17), before any view, serializer or database sees it."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError(
                f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels."
            ) from None
        if _depth_exceeds(data, MAX_JSON_DEPTH):
            raise exceptions.ParseError(
                f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels."
            )
        refuse_unstorable(data, "body")
        return data


def _disk_full_database(exc: Exception) -> bool:
    """The database's disk is full: SQLite's "database or disk is full", PostgreSQL's
    SQLSTATE 53100 (disk_full)."""
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__
    if getattr(cause, "sqlstate", None) == "53100" or getattr(cause, "pgcode", None) == "53100":
        return True
    return "disk is full" in str(exc) or "No space left on device" in str(exc)


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if _disk_full_database(exc):
        exc = DiskFull("The database's disk is full: nothing was saved. Free some space.")
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
    if response is not None and response.status_code == status.HTTP_401_UNAUTHORIZED:
        # A missing or bad credential says how to get a good one (SPEC §14).

        detail = str(getattr(exc, "detail", "")) or "No valid token."
        if "memory_token" not in detail:
            detail = unauthorized(detail)[0]["detail"]
        response.data = {"error": "invalid_token", "error_description": detail, "detail": detail}
    return response
