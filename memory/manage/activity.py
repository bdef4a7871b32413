"""The Activity tab (SPEC §12): runs with status, timings, tokens, cost and summary."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _

from memory.manage.layout import owner_required, page
from memory.manage.paging import paginate
from memory.models import Run
from proposals.diff import reason_text


@owner_required
def activity(request: HttpRequest) -> HttpResponse:
    runs = Run.objects.select_related("agent").prefetch_related("proposals")
    agent_filter = request.GET.get("agent") or ""
    if agent_filter:
        runs = runs.filter(agent_id=agent_filter)
    pager = paginate(request, runs.order_by("-started_at", "-id"), label=_("runs"))
    rows = []
    for run in pager.items:
        duration = (run.finished_at - run.started_at).total_seconds() if run.finished_at else None
        rows.append(
            {
                "run": run,
                "duration": duration,
                "reasons": [reason_text(reason) for reason in run.reasons or []],
            }
        )
    return page(
        request,
        "memory/activity.html",
        {"rows": rows, "agent_filter": agent_filter, "pager": pager},
        tab="activity",
    )
