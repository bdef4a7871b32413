"""One page of a listing (docs/decisions.md, "Facts, notes and the prompt"): the items of the page
and how many there are in all.

A listing costs what its page costs: the operations that return a Listing find and sort
names without reading or stat-ing each file, and read only the page's files. The API's
and the pages' pagination sit on top of `offset` and `limit`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


class Pages(Sequence[T]):
    """A listing operation as a sequence for the paginators (the API's and the pages'):
    `len()` is the listing's total, and a slice asks the operation for that page only.
    `fetch(offset, limit)` is the operation, e.g. `lambda offset, limit:
    notes.notes_listing(agent, offset=offset, limit=limit)`."""

    def __init__(self, fetch: Callable[[int, int | None], Listing[T]]) -> None:
        self._fetch = fetch
        self._total: int | None = None

    def __len__(self) -> int:
        if self._total is None:
            self._total = self._fetch(0, 0).total
        return self._total

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return list(self)[index]
            page = self._fetch(start, max(stop - start, 0))
            self._total = page.total
            return page.items
        items = self._fetch(index if index >= 0 else len(self) + index, 1).items
        if not items:
            raise IndexError(index)
        return items[0]
