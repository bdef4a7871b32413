"""The triage queue (SPEC §7, §15): the Proposals page as one compact row per pending
proposal — its kind in words, agent, reason, age, size, whether its file changed since —
filtered (agent, kind, age, stale, file), selectable a page at a time for bulk decisions,
with keys (j/k, a, r, e, ?) and "approve & next". The full card opens in place under its
row (`?open=<id>`: a link, so it works without JavaScript); approving and rejecting post
to the same views as the card (memory.manage.proposals → proposals.actions). The pager
counts proposals.

Below the queue: proposals asked again after a rejection, the standing rules and the
history of decisions with undo."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, QueryDict
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from memory import textdiff
from memory.manage.layout import owner_required, page
from memory.manage.paging import paginate
from memory.manage.proposals import proposal_card
from proposals import actions, rules
from proposals.diff import KIND_LABELS, kind_label, reason_text
from proposals.models import Proposal

PER_PAGE = 20
REASON_CHARS = 140
SIZE_SECONDS = 0.05  # a row's size is a bounded line diff
AGES = {
    "new": (gettext_lazy("less than a day"), None, dt.timedelta(days=1)),
    "day": (gettext_lazy("more than a day"), dt.timedelta(days=1), None),
    "week": (gettext_lazy("more than a week"), dt.timedelta(days=7), None),
}
STALE = {
    "yes": gettext_lazy("changed since proposed"),
    "no": gettext_lazy("unchanged since proposed"),
}


@dataclass(frozen=True)
class QueueFilters:
    agent: str = ""
    kind: str = ""
    age: str = ""
    stale: str = ""
    target: str = ""

    @classmethod
    def read(cls, query: QueryDict) -> QueueFilters:
        """The filters a query string asks for; a value the page does not offer is
        ignored (the form only offers valid ones)."""
        age = query.get("age", "")
        stale = query.get("stale", "")
        return cls(
            agent=query.get("agent", "")[:64],
            kind=query.get("kind", "")[:30],
            age=age if age in AGES else "",
            stale=stale if stale in STALE else "",
            target=query.get("target", "")[:500],
        )

    @property
    def any(self) -> bool:
        return bool(self.agent or self.kind or self.age or self.stale or self.target)


def pending_queue(filters: QueueFilters, *, now: dt.datetime | None = None) -> QuerySet | list:
    """The pending proposals the filters keep, oldest first (the order they are decided
    in), each annotated with `same_file`: how many other pending proposals change its
    target. The stale filter reads the files, so it answers a list."""
    now = now or timezone.now()
    rows = Proposal.objects.filter(status=Proposal.Status.PENDING)
    if filters.agent:
        rows = rows.filter(agent_id=filters.agent)
    if filters.kind:
        rows = rows.filter(kind=filters.kind)
    if filters.target:
        rows = rows.filter(target=filters.target)
    if filters.age:
        _label, older_than, newer_than = AGES[filters.age]
        if older_than is not None:
            rows = rows.filter(created_at__lte=now - older_than)
        if newer_than is not None:
            rows = rows.filter(created_at__gt=now - newer_than)
    same = (
        Proposal.objects.filter(status=Proposal.Status.PENDING, target=OuterRef("target"))
        .order_by()
        .values("target")
        .annotate(n=Count("pk"))
        .values("n")
    )
    rows = (
        rows.select_related("agent")
        .annotate(same_file=Coalesce(Subquery(same), 1) - 1)
        .order_by("created_at", "id")
    )
    if filters.stale:
        wanted = filters.stale == "yes"
        return [p for p in rows if bool(actions.stale_paths(p)) == wanted]
    return rows


def _size(proposal: Proposal) -> dict:
    """How much a proposal changes: lines added and removed over its files (a bounded
    diff of each), and how many files."""
    planned = actions.planned_writes(proposal)
    before = actions.previous_texts(proposal)
    added = removed = 0
    for path, text in planned.items():
        old, new = textdiff.lines_of(before.get(path)), textdiff.lines_of(text)
        gone, come = textdiff.changed_line_count(
            textdiff.line_opcodes(old, new, seconds=SIZE_SECONDS)
        )
        removed, added = removed + gone, added + come
    return {"added": added, "removed": removed, "files": len(planned)}


def _reason(proposal: Proposal) -> str:
    """The proposal's own words, when it has them (a `reason` the writer gave), else the
    first of its reasons; cut to REASON_CHARS."""
    text = getattr(proposal, "reason", "") or ""
    if not text and proposal.reasons:
        text = reason_text(proposal.reasons[0])
    text = " ".join(str(text).split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def queue_row(proposal: Proposal) -> dict:
    return {
        "p": proposal,
        "kind_label": kind_label(proposal.kind),
        "reason": _reason(proposal),
        # The writer's own words (a `reason` it gave) are labelled as such, never a rule.
        "own_words": bool(getattr(proposal, "reason", "")),
        "size": _size(proposal),
        "stale": sorted(actions.stale_paths(proposal)),
    }


def _url(request: HttpRequest, **changes: str | None) -> str:
    """This page's address with some query parameters changed (None: removed)."""
    query = request.GET.copy()
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    encoded = query.urlencode()
    return f"{request.path}?{encoded}" if encoded else request.path


def _link_rows(request: HttpRequest, rows: list[dict]) -> None:
    """Each row's links: open in place, close, and where "approve & next" returns to
    (the next row opened, or the queue when it was the last)."""
    for n, row in enumerate(rows):
        following = rows[n + 1]["p"].pk if n + 1 < len(rows) else None
        row["open_url"] = _url(request, open=str(row["p"].pk)) + f"#row-{row['p'].pk}"
        row["next_pk"] = following
        row["stay_url"] = _url(request, open=None) + (f"#row-{following}" if following else "")
        row["next_url"] = (
            _url(request, open=str(following)) + f"#row-{following}"
            if following
            else _url(request, open=None)
        )


@owner_required
def proposals(request: HttpRequest) -> HttpResponse:
    filters = QueueFilters.read(request.GET)
    queue = pending_queue(filters)
    pager = paginate(request, queue, per_page=PER_PAGE, label=_("pending proposals"))
    rows = [queue_row(p) for p in pager.items]
    _link_rows(request, rows)
    wanted = request.GET.get("open", "")
    opened = None
    for row in rows:
        if str(row["p"].pk) == wanted:
            opened = row
            row["card"] = proposal_card(row["p"], review=True)
    history = (
        Proposal.objects.exclude(status=Proposal.Status.PENDING)
        .select_related("agent")
        .order_by("-decided_at", "-id")
    )
    history_pager = paginate(request, history, param="hpage", label=_("history"))
    return page(
        request,
        "memory/proposals.html",
        {
            "rows": rows,
            "opened": opened,
            "pending_total": actions.pending_count(),
            "pager": pager,
            "filters": filters,
            "kinds": [(kind, str(label)) for kind, label in KIND_LABELS.items()],
            "ages": [(key, label) for key, (label, _older, _newer) in AGES.items()],
            "stale_choices": list(STALE.items()),
            "select_all": request.GET.get("select") == "page",
            "select_url": _url(request, select="page"),
            "unselect_url": _url(request, select=None),
            "history": [(p, kind_label(p.kind)) for p in history_pager.items],
            "history_pager": history_pager,
            "repeated": list(
                Proposal.objects.filter(status=Proposal.Status.REJECTED, repeats__gt=0).order_by(
                    "-repeated_at"
                )[:20]
            ),
            "rules": rules.rules_with_counts(),
        },
        tab="memory",
    )
