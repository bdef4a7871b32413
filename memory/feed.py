"""What the assistants remembered (SPEC §7): every write an agent or a job made — attended
(a tool call, REST with an agent's token) or an approved proposal — newest first, from the
file versions history already records (memory.history), never a second log.

A version is in the feed when it was recorded (`FileVersion.in_feed`, with `by_agent` and
`kind`), so a page of the feed is one walk of an index, whatever the number of versions.
Reverting one is `memory.history.revert`: a new version restoring the one before, under
restore's rules.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.utils import timezone

from memory import clock, history
from memory.errors import InvalidInput, NotFound
from memory.models import FileVersion

KINDS = history.KINDS
WEEK = dt.timedelta(days=7)
MAX_SOURCE = 200


@dataclass(frozen=True)
class Filters:
    """The feed's filters; empty strings / None: any."""

    agent: str = ""
    kind: str = ""
    source: str = ""
    day: dt.date | None = None

    @property
    def any(self) -> bool:
        return bool(self.agent or self.kind or self.source or self.day)


def parse_filters(
    *,
    agent: str | None = None,
    kind: str | None = None,
    source: str | None = None,
    day: str | None = None,
) -> Filters:
    """The filters as given by a query string. InvalidInput (422) for a kind that is not
    one of KINDS, a day that is not YYYY-MM-DD, or an over-long agent or source."""
    agent, kind, source, day = ((value or "").strip() for value in (agent, kind, source, day))
    if kind and kind not in KINDS:
        raise InvalidInput(f"`kind` must be one of {', '.join(KINDS)}.", field="kind")
    if len(agent) > 64:
        raise InvalidInput("`agent` is an agent id (at most 64 characters).", field="agent")
    if len(source) > MAX_SOURCE:
        raise InvalidInput(f"`source` is at most {MAX_SOURCE} characters.", field="source")
    parsed = None
    if day:
        try:
            parsed = dt.date.fromisoformat(day)
        except ValueError:
            raise InvalidInput("`day` must be a date, YYYY-MM-DD.", field="day") from None
    return Filters(agent=agent, kind=kind, source=source, day=parsed)


def day_bounds(day: dt.date) -> tuple[dt.datetime, dt.datetime]:
    """The owner's day (MEMORY_TIME_ZONE) as a [start, end) pair of aware datetimes."""
    start = dt.datetime.combine(day, dt.time.min, tzinfo=clock.local_tz())
    return start, start + dt.timedelta(days=1)


def writes(filters: Filters | None = None) -> QuerySet[FileVersion]:
    """The feed, newest first, without the versions' stored text; each row annotated with
    `reverted_by_seq` (the version that reverted it, or None) and `superseded` (a later
    version of the same file exists: reverting it would undo that too)."""
    filters = filters or Filters()
    rows = FileVersion.objects.filter(in_feed=True)
    if filters.agent:
        rows = rows.filter(by_agent=filters.agent)
    if filters.kind:
        rows = rows.filter(kind=filters.kind)
    if filters.source:
        rows = rows.filter(source=filters.source)
    if filters.day:
        start, end = day_bounds(filters.day)
        rows = rows.filter(created_at__gte=start, created_at__lt=end)
    reverts = FileVersion.objects.filter(reverts=OuterRef("pk")).order_by("seq")
    later = FileVersion.objects.filter(path=OuterRef("path"), seq__gt=OuterRef("seq"))
    return (
        rows.defer("data")
        .annotate(
            reverted_by_seq=Subquery(reverts.values("seq")[:1]),
            reverted_by_id=Subquery(reverts.values("pk")[:1]),
            superseded=Exists(later),
        )
        .order_by("-created_at", "-id")
    )


def get_write_or_404(version_id: int) -> FileVersion:
    """A version of the feed (NotFound 404 for any other, or none)."""
    row = writes().filter(pk=version_id).first()
    if row is None:
        raise NotFound(f"No write {version_id} in the feed of what was remembered.")
    return row


def texts(version: FileVersion) -> tuple[str | None, str | None]:
    """What the file held before and after the write (None: absent)."""
    before, after = history.before_and_after(version)
    return history.text_of(before), history.text_of(after)


def revert(version: FileVersion, *, by: str, via: str = "") -> FileVersion:
    """Revert one write of the feed: memory.history.revert (its rules, its errors)."""
    return history.revert(version, by=by, via=via)


def count_since(since: dt.datetime, *, agent: str = "") -> int:
    """How many writes the assistants (or one agent) made since `since`."""
    rows = FileVersion.objects.filter(in_feed=True, created_at__gte=since)
    return (rows.filter(by_agent=agent) if agent else rows).count()


def count_this_week(now: dt.datetime | None = None, *, agent: str = "") -> int:
    """The digest's and the agent screen's "this week": the last 7 days."""
    return count_since((now or timezone.now()) - WEEK, agent=agent)


def sources(limit: int = 100) -> list[str]:
    """The sources the feed holds, for the page's filter (in order)."""
    rows = FileVersion.objects.filter(in_feed=True).exclude(source="")
    return list(rows.order_by("source").values_list("source", flat=True).distinct()[:limit])
