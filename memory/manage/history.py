"""History pages (SPEC §7, memory.history): every version of one file, one version with
what it changed, any two versions compared, restore (asked to confirm with what it will
change; a forward change, 409 when the file changed since the page was shown; never
offered for the text the file holds), and the blame of a file line by line with who made
each line and from where."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _

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
    now = history.current_hash(path)
    return page(
        request,
        "memory/history.html",
        {
            "path": path,
            "versions": [
                {"v": row, "current": row.exists and row.sha256 == now, "who": history.who(row)}
                for row in rows
            ],
            "total": history.versions(path=path).count(),
            "shown": MAX_SHOWN,
            "current_hash": now,
            "unrecorded": latest is not None and not history.is_current(latest),
        },
        tab="memory",
    )


def _version_or_404(version_id: int | str):
    try:
        return history.get_version_or_404(int(version_id))
    except (DomainError, ValueError) as exc:
        raise Http404(str(getattr(exc, "message", exc))) from None


@owner_required
def compare_versions(request: HttpRequest) -> HttpResponse:
    """Any two versions of a file (`from`, `to`; `to=current`: the file now), as a diff."""
    first = _version_or_404(request.GET.get("from") or "")
    to = request.GET.get("to") or "current"
    second = None if to == "current" else _version_or_404(to)
    try:
        before, after = history.compared(first, second)
    except DomainError as exc:
        report_error(request, exc)
        return redirect(f"{reverse('memory-pages:history')}?{urlencode({'path': first.path})}")
    if second is not None and second.seq < first.seq:
        first, second = second, first
        before, after = after, before
    return page(
        request,
        "memory/compare.html",
        {
            "path": first.path,
            "first": first,
            "second": second,
            "diff_html": diff.render_file_diffs([diff.file_diff(first.path, before, after)]),
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
            "who": history.who(version),
            "text": after,
            "diff_html": diff.render_file_diffs([changes]),
            "current": history.is_current(version),
        },
        tab="memory",
    )


@owner_required
def restore_version(request: HttpRequest, version_id: int) -> HttpResponse:
    """GET: what restoring would change (the file now against the version's text) and a
    button to confirm; POST with `confirm`: the restore. The version the file holds has
    nothing to restore."""
    version = _version_or_404(version_id)
    if request.method != "POST" or request.POST.get("confirm") != "1":
        if not version.exists or history.is_current(version):
            messages.info(request, _("The file holds this version's text: nothing to restore."))
            return redirect("memory-pages:version", version_id=version.pk)
        now, then = history.compared(version, None)[::-1]
        return page(
            request,
            "memory/restore.html",
            {
                "version": version,
                "current_hash": history.current_hash(version.path),
                "diff_html": diff.render_file_diffs([diff.file_diff(version.path, now, then)]),
            },
            tab="memory",
        )
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
