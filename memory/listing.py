"""One page of a listing (docs/decisions.md, "Facts, notes and the prompt"): the items of the page
and how many there are in all.

A listing costs what its page costs: the operations that return a Listing find and sort
names without reading or stat-ing each file, and read only the page's files. The API's
and the pages' pagination sit on top of `offset` and `limit`.
"""

from __future__ import annotations

from typing import Generic, NamedTuple, TypeVar

from memory.errors import InvalidInput

T = TypeVar("T")


class Listing(NamedTuple, Generic[T]):
    """`items`: the page, in the listing's order; `total`: how many items the whole
    listing holds (for "page 3 of 40"). Unpacks as `items, total = ...`."""

    items: list[T]
    total: int


def page_bounds(offset: object, limit: object) -> slice:
    """The slice of one page. `offset` ≥ 0; `limit` ≥ 0 or None for everything from
    `offset` on. InvalidInput (422) for anything else."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInput(f"offset must be a whole number ≥ 0, not {offset!r}.")
    if limit is None:
        return slice(offset, None)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidInput(f"limit must be a whole number ≥ 0, not {limit!r}.")
    return slice(offset, offset + limit)
