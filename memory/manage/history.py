"""History pages (SPEC §7, memory.history): every version of one file, one version with
what it changed, restore (a forward change, 409 when the file changed since the page was
shown), and the blame of a file line by line."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from memory import history
from memory.errors import DomainError
from memory.manage.layout import actor, owner_required, page, report_error
from proposals import diff

MAX_SHOWN = 1000  # versions listed on one page (newest first)


def _path_or_404(request: HttpRequest) -> str:
    path = request.GET.get("path") or ""
    try:
        history.check_path(path)
    except DomainError as exc:
        raise Http404(exc.message) from None
    return path


@owner_required
def file_history(request: HttpRequest) -> HttpResponse:
    path = _path_or_404(request)
    rows = list(history.versions(path=path)[:MAX_SHOWN])
    latest = rows[0] if rows else None
    return page(
        request,
        "memory/history.html",
        {
            "path": path,
            "versions": rows,
            "total": history.versions(path=path).count(),
            "shown": MAX_SHOWN,
            "current_hash": history.current_hash(path),
            "unrecorded": latest is not None and not history.is_current(latest),
        },
        tab="memory",
    )


@owner_required
def version_detail(request: HttpRequest, version_id: int) -> HttpResponse:
    try:
        version = history.get_version_or_404(version_id)
    except DomainError as exc:
        raise Http404(exc.message) from None
    after = history.text_of(history.content(version))
    before = history.text_of(history.replaced(version))
    changes = diff.file_diff(version.path, before, after)
    return page(
        request,
        "memory/version.html",
        {
            "version": version,
            "text": after,
            "diff_html": diff.render_file_diffs([changes]),
            "current_hash": history.current_hash(version.path),
        },
        tab="memory",
    )


@owner_required
@require_POST
def restore_version(request: HttpRequest, version_id: int) -> HttpResponse:
    try:
        version = history.get_version_or_404(version_id)
    except DomainError as exc:
        raise Http404(exc.message) from None
    try:
        made = history.restore(
            version, base_hash=request.POST.get("base_hash", ""), by=actor(request), via="pages"
        )
    except DomainError as exc:
        report_error(request, exc)
        return redirect("memory-pages:version", version_id=version.pk)
    messages.success(
        request,
        _("Version %(seq)s of %(path)s restored as version %(new)s.")
        % {"seq": version.seq, "path": version.path, "new": made.seq},
    )
    return redirect(f"{reverse('memory-pages:history')}?{urlencode({'path': version.path})}")


@owner_required
def file_blame(request: HttpRequest) -> HttpResponse:
    path = _path_or_404(request)
    return page(
        request,
        "memory/blame.html",
        {"path": path, "lines": history.blame(path)},
        tab="memory",
    )
