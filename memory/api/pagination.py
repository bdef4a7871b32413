"""Pages of the API's lists (SPEC §14): every list endpoint answers a DRF page,
`{"count", "next", "previous", "offset", "limit", "results"}`, chosen with `?limit=&offset=`.

DRF's LimitOffsetPagination, with two changes: a limit or offset that is not a whole number
is 422 (DRF would silently fall back to the default, so a typo would look like a short
list), and the envelope also says which window it is, so a client can print "41–60 of 305"
without parsing the `next` URL.

Lists are sequences with `len()` and slicing (a queryset, or a list an operation returned):
an operation that can count and slice without reading everything (memory.listing) plugs in by
returning such a sequence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

from memory.errors import InvalidInput
from memory.text import INT64_MAX

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


def _whole(value: str | None, name: str, *, default: int, low: int, high: int | None) -> int:
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise InvalidInput(f"`{name}` must be a whole number.", field=name) from None
    if number < low or number > (INT64_MAX if high is None else high):
        bound = f"from {low} to {high}" if high is not None else f"from {low} to 2^63 − 1"
        raise InvalidInput(f"`{name}` must be {bound}.", field=name)
    return number


class ListPages(LimitOffsetPagination):
    default_limit = DEFAULT_LIMIT
    max_limit = MAX_LIMIT

    def get_limit(self, request: Request) -> int:
        return _whole(
            request.query_params.get(self.limit_query_param),
            self.limit_query_param,
            default=self.default_limit,
            low=1,
            high=self.max_limit,
        )

    def get_offset(self, request: Request) -> int:
        return _whole(
            request.query_params.get(self.offset_query_param),
            self.offset_query_param,
            default=0,
            low=0,
            high=None,
        )

    def get_paginated_response(self, data: list) -> Response:
        return Response(
            {
                "count": self.count,
                "next": self.get_next_link(),
                "previous": self.get_previous_link(),
                "offset": self.offset,
                "limit": self.limit,
                "results": data,
            }
        )


def paged(
    request: Request,
    items: Sequence,
    serialize: Callable[[list], list],
    *,
    view: object = None,
    pages: type[ListPages] = ListPages,
) -> Response:
    """The page of `items` the request asks for, each row serialized by `serialize`."""
    paginator = pages()
    window = paginator.paginate_queryset(items, request, view)
    return paginator.get_paginated_response(serialize(list(window or [])))


def page_parameters(default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT) -> list:
    """The OpenAPI parameters of a paged list."""
    return [
        OpenApiParameter(
            "limit", int, description=f"rows per page, 1–{maximum} (default {default})"
        ),
        OpenApiParameter("offset", int, description="rows to skip (default 0)"),
    ]


_schemas: dict[str, object] = {}


def page_schema(row: type[serializers.Serializer], name: str | None = None):
    """The OpenAPI shape of a page of `row`s (one component per row type)."""
    name = name or f"Paginated{row.__name__.removesuffix('Serializer')}List"
    if name not in _schemas:
        _schemas[name] = inline_serializer(
            name,
            {
                "count": serializers.IntegerField(help_text="rows in the whole list"),
                "next": serializers.URLField(allow_null=True),
                "previous": serializers.URLField(allow_null=True),
                "offset": serializers.IntegerField(),
                "limit": serializers.IntegerField(),
                "results": row(many=True),
            },
        )
    return _schemas[name]
