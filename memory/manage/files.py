"""Every Markdown file of an agent's memory on the pages (SPEC §3): the list — notes,
hand-kept files and subfolders, wiki pages, the extra paths — and one file, shown and
edited by the path memory_get reads it with (memory.reading: the same path rules)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _

from memory import notes, reading
from memory.errors import Conflict, DomainError
from memory.listing import Listing, Pages
from memory.manage.forms import FileForm
from memory.manage.layout import agent_or_404, owner_required, page, report_error
from memory.manage.paging import paginate
from memory.manage.rendering import render_markdown


@owner_required
def memory_files(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    counts: dict[str, int] = {}

    def fetch(offset: int, limit: int | None) -> Listing:
        listing, found = reading.memory_files_listing(agent, offset=offset, limit=limit)
        counts.update(found)
        return listing

    pager = paginate(request, Pages(fetch), label=_("files"))
    return page(
        request,
        "memory/memory_files.html",
        {"files": pager.items, "pager": pager, "counts": counts},
        tab="memory",
        agent=agent,
        switch="memory-pages:memory-files",
    )


@owner_required
def memory_file(request: HttpRequest, agent_id: str, path: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    try:
        kind, editable = reading.file_kind(agent, path)
        text, text_hash = reading.read_with_hash(agent, path)
    except DomainError as exc:
        raise Http404(exc.message) from None
    status = 200
    form = FileForm(initial={"body": text, "base_hash": text_hash})
    if request.method == "POST":
        if not editable:
            report_error(request, DomainError(_("This file is not edited here.")))
            return redirect("memory-pages:memory-file", agent_id=agent.pk, path=path)
        form = FileForm(request.POST)
        if form.is_valid():
            try:
                notes.write_memory_file(
                    agent,
                    path,
                    form.cleaned_data["body"],
                    base_hash=form.cleaned_data["base_hash"] or None,
                )
            except DomainError as exc:
                if isinstance(exc, Conflict):
                    exc = Conflict(
                        _(
                            "%(path)s changed since you opened it. Your text is below; copy "
                            "what you need, reload, and edit again."
                        )
                        % {"path": path}
                    )
                report_error(request, exc)
                status = 409 if isinstance(exc, Conflict) else 422
            else:
                messages.success(request, _("%(path)s saved.") % {"path": path})
                return redirect("memory-pages:memory-file", agent_id=agent.pk, path=path)
    return page(
        request,
        "memory/memory_file.html",
        {
            "path": path,
            "kind": kind,
            "editable": editable,
            "form": form,
            "body_html": render_markdown(text),
        },
        tab="memory",
        agent=agent,
        status=status,
    )
