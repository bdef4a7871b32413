"""Pages of the management pages' lists (SPEC §15): facts, notes, search results,
proposals, history, Activity, the vault, the script store.

`paginate(request, items)` takes any sequence with `len()` and slicing — a queryset, a
list an operation returned, or a lazy sequence of an operation that counts without
reading everything — and answers the window to show with its count ("41–60 of 305") and
the links to the other pages, which keep every other query parameter (a filter, the other
list's page). `memory/pager.html` renders it, once a page (`pager.html`) however often
the page shows it (above and below its list).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from django.core.paginator import Paginator
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

PER_PAGE = 20


@dataclass(frozen=True)
class PageLink:
    number: int | None  # None: the "…" between distant pages
    url: str
    current: bool


@dataclass(frozen=True)
class Pager:
    items: list
    count: int
    start: int  # 1-based index of the first item shown (0 when there is none)
    end: int
    number: int
    pages: int
    previous_url: str
    next_url: str
    links: list[PageLink]
    label: str  # what the list is, for the navigation's accessible name

    @property
    def summary(self) -> str:
        """ "41–60 of 305" (in the page's language)."""
        if not self.count:
            return _("none")
        return _("%(start)s–%(end)s of %(count)s") % {
            "start": self.start,
            "end": self.end,
            "count": self.count,
        }

    @property
    def several(self) -> bool:
        return self.pages > 1

    @cached_property
    def html(self) -> SafeString:
        """memory/pager.html for this pager, rendered the first time a page shows it."""
        return render_to_string("memory/pager.html", {"pager": self})


def page_url(request: HttpRequest, param: str, number: int) -> str:
    query = request.GET.copy()
    if number <= 1:
        query.pop(param, None)
    else:
        query[param] = str(number)
    encoded = query.urlencode()
    return f"{request.path}?{encoded}" if encoded else request.path


def wanted_page(request: HttpRequest, param: str = "page") -> int:
    """The page number the request asks for; 1 for anything that is not a whole number."""
    try:
        return max(1, int(request.GET.get(param, "1")))
    except ValueError:
        return 1


def paginate(
    request: HttpRequest,
    items: Sequence,
    *,
    per_page: int = PER_PAGE,
    param: str = "page",
    label: str = "",
) -> Pager:
    """The page of `items` that `?<param>=` asks for (a number past the end shows the last
    page; anything else the first)."""
    paginator = Paginator(items, per_page, allow_empty_first_page=True)
    current = paginator.get_page(request.GET.get(param))
    links = [
        PageLink(
            None if number == Paginator.ELLIPSIS else number,
            "" if number == Paginator.ELLIPSIS else page_url(request, param, number),
            number == current.number,
        )
        for number in paginator.get_elided_page_range(current.number, on_each_side=2, on_ends=1)
    ]
    count = paginator.count
    return Pager(
        items=list(current.object_list),
        count=count,
        start=current.start_index() if count else 0,
        end=current.end_index() if count else 0,
        number=current.number,
        pages=paginator.num_pages,
        previous_url=page_url(request, param, current.number - 1) if current.has_previous() else "",
        next_url=page_url(request, param, current.number + 1) if current.has_next() else "",
        links=links,
        label=label,
    )


class Counted(Sequence):
    """A window already cut by the operation (search), seen by the Paginator as the
    whole list: `len()` is the total, and slicing answers the rows it holds when the
    slice is the window's own."""

    def __init__(self, rows: list, total: int, offset: int) -> None:
        self.rows, self.total, self.offset = rows, total, offset

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            start = (index.start or 0) - self.offset
            stop = (index.stop if index.stop is not None else self.total) - self.offset
            return self.rows[max(start, 0) : max(stop, 0)]
        return self.rows[index - self.offset]
