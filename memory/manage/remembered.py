"""What the assistants remembered (SPEC §7, §15): the feed of every write an agent or a
job made — attended, or an approved proposal — newest first, filtered by agent, kind,
source and day, each with its diff and a one-click revert (memory.feed, which the API
calls too)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from memory import feed
from memory.errors import DomainError
from memory.manage.layout import actor, back, owner_required, page, report_error
from memory.manage.paging import paginate
from memory.manage.wording import FILE_KINDS
from proposals import diff

PER_PAGE = 20


@owner_required
def remembered(request: HttpRequest) -> HttpResponse:
    params = request.GET
    filter_error = ""
    try:
        filters = feed.parse_filters(
            agent=params.get("agent"),
            kind=params.get("kind"),
            source=params.get("source"),
            day=params.get("day"),
        )
    except DomainError as exc:
        filter_error, filters = exc.message, feed.Filters()
    pager = paginate(request, feed.writes(filters), per_page=PER_PAGE, label=_("writes"))
    entries = []
    for version in pager.items:
        before, after = feed.texts(version)
        entries.append(
            {
                "v": version,
                "diff_html": diff.render_file_diffs([diff.file_diff(version.path, before, after)]),
            }
        )
    return page(
        request,
        "memory/remembered.html",
        {
            "entries": entries,
            "pager": pager,
            "filters": filters,
            "filter_error": filter_error,
            "kinds": list(FILE_KINDS.items()),
            "sources": feed.sources(),
            "this_week": feed.count_this_week(),
        },
        tab="activity",
    )


@owner_required
@require_POST
def revert_write(request: HttpRequest, version_id: int) -> HttpResponse:
    """Revert one write: memory.feed.revert (409 when the file changed since, as a
    message naming what to do instead)."""
    try:
        version = feed.get_write_or_404(version_id)
    except DomainError as exc:
        raise Http404(exc.message) from None
    try:
        made = feed.revert(version, by=actor(request), via="pages")
    except DomainError as exc:
        report_error(request, exc)
    else:
        messages.success(
            request,
            _("Reverted: %(path)s is as it was before version %(seq)s (now version %(new)s).")
            % {"path": version.path, "seq": version.seq, "new": made.seq},
        )
    return back(request, reverse("memory-pages:remembered"))
