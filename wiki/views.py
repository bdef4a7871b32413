"""The Wiki tab of the management pages (SPEC §10, §15): the vault grouped by folder,
search, one page rendered with its sources and questions, edit, delete, the lint report
and "compile now". Every button calls wiki.pages / wiki.lint / wiki.compile — the same
functions as the API and the tools."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from memory.errors import DomainError, InvalidInput
from memory.manage.forms import attach_error
from memory.manage.layout import (
    agent_or_404,
    current_agent,
    owner_required,
    page,
    report_error,
    report_started,
)
from memory.manage.paging import paginate
from memory.manage.rendering import highlight, render_markdown
from memory.query import Query
from memory.text import parse_note_name
from wiki import compile as wiki_compile
from wiki import pages
from wiki.forms import WikiPageForm
from wiki.vault import FOLDERS


def page_url(agent_id: str, key: str) -> str:
    """The address of the page `key` (`folder/slug`)."""
    folder, _, slug = key.partition("/")
    return reverse("wiki-pages:page", args=[agent_id, folder, slug])


def link_url(agent_id: str, resolve):
    """The address a `[[link]]` goes to (`resolve`: pages.link_resolver): the page it
    opens, or — for a page nobody wrote yet — the form that writes it, its title filled
    in; None for a link that names no possible page (left as written)."""

    def url(target: str) -> str | None:
        key, ref = resolve(target)
        if key is not None:
            return page_url(agent_id, key)
        if ref is None:
            return None
        title = ref.rpartition("/")[2].replace("-", " ") if "/" in ref else target
        return reverse("wiki-pages:new", args=[agent_id]) + "?" + urlencode({"title": title})

    return url


def source_links(agent, sources: list[str]) -> list[dict]:
    """Each source with the address of its note (`note:YYYY-MM-DD[-suffix]`), if any."""
    rows = []
    for source in sources:
        url = ""
        kind, _sep, ref = source.partition(":")
        if kind == "note":
            try:
                parse_note_name(ref)
            except InvalidInput:
                pass
            else:
                url = reverse("memory-pages:note", args=[agent.pk, ref])
        rows.append({"source": source, "url": url})
    return rows


@owner_required
def vault_current(request: HttpRequest) -> HttpResponse:
    return redirect("wiki-pages:vault", agent_id=current_agent(request).pk)


@owner_required
def vault(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    query = (request.GET.get("q") or "").strip()
    rank = {folder: index for index, folder in enumerate(FOLDERS)}
    entries = sorted(
        pages.list_pages(agent),
        key=lambda entry: (rank.get(entry.folder, len(rank)), entry.title.casefold(), entry.slug),
    )
    pager = paginate(request, entries, per_page=60, label=_("wiki pages"))
    groups = {folder: [] for folder in FOLDERS}
    for entry in pager.items:
        groups.setdefault(entry.folder, []).append(entry)
    counts = {folder: 0 for folder in FOLDERS}
    for entry in entries:
        counts[entry.folder] = counts.get(entry.folder, 0) + 1
    results = None
    results_pager = None
    if query:
        try:
            parsed = Query.parse(query)
            found = pages.search_pages(agent, parsed, limit=max(len(entries), 1))
        except DomainError as exc:
            report_error(request, exc)
        else:
            results_pager = paginate(request, found, param="rpage", label=_("results"))
            results = [
                {"entry": hit, "html": highlight(hit.text, parsed)} for hit in results_pager.items
            ]
    try:
        report = pages.report(agent)
    except DomainError as exc:
        report_error(request, exc)
        report = None
    return page(
        request,
        "wiki/vault.html",
        {
            "groups": [(folder, items, counts.get(folder, 0)) for folder, items in groups.items()],
            "total": len(entries),
            "pager": pager,
            "results_pager": results_pager,
            "query": query,
            "results": results,
            "report": _report(report),
        },
        tab="wiki",
        agent=agent,
        switch="wiki-pages:vault",
    )


def _report(report: dict | None) -> dict | None:
    """The lint report (wiki.pages.report) grouped by issue kind for the page."""
    if report is None:
        return None
    by_kind: dict[str, list[dict]] = {}
    for issue in report.get("issues") or []:
        by_kind.setdefault(issue.get("kind") or "issue", []).append(issue)
    for row in [*(report.get("issues") or []), *(report.get("open_questions") or [])]:
        row["folder"] = (row.get("key") or "").partition("/")[0]
    return {
        "by_kind": sorted(by_kind.items()),
        "count": sum(len(items) for items in by_kind.values()),
        "questions": report.get("open_questions") or [],
    }


def _page_or_404(agent, folder: str, slug: str) -> pages.Page:
    try:
        return pages.get_page(agent, f"{folder}/{slug}")
    except DomainError as exc:
        raise Http404(exc.message) from None


@owner_required
def page_by_slug(request: HttpRequest, agent_id: str, slug: str) -> HttpResponse:
    """An address by slug alone: the page of that slug when one folder holds it; 404,
    naming the pages, when several do."""
    agent = agent_or_404(request, agent_id)
    try:
        item = pages.get_page(agent, slug)
    except DomainError as exc:
        raise Http404(exc.message) from None
    return redirect("wiki-pages:page", agent_id=agent.pk, folder=item.folder, slug=item.slug)


@owner_required
def page_detail(request: HttpRequest, agent_id: str, folder: str, slug: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    item = _page_or_404(agent, folder, slug)
    return page(
        request,
        "wiki/page.html",
        {
            "page": item,
            "body_html": render_markdown(
                item.body, wiki_url=link_url(agent.pk, pages.link_resolver(agent))
            ),
            "sources": source_links(agent, item.sources),
            "links_out": item.links_out,
            "links_in": item.links_in,
        },
        tab="wiki",
        agent=agent,
    )


@owner_required
def page_edit(
    request: HttpRequest, agent_id: str, folder: str | None = None, slug: str | None = None
) -> HttpResponse:
    """Edit a page (folder and slug given) or write a new one. Sources are shown and
    required, so an edit can never silently drop them."""
    agent = agent_or_404(request, agent_id)
    item = _page_or_404(agent, folder, slug) if slug and folder else None
    status = 200
    if request.method == "POST":
        form = WikiPageForm(request.POST)
        status = 422
        if form.is_valid():
            data = form.cleaned_data
            try:
                saved = pages.save_page(
                    agent,
                    title=data["title"],
                    kind=data["kind"],
                    sources=data["sources"],
                    body=data["body"],
                    questions=data["questions"],
                    status=data["status"],
                    slug=item.key if item is not None else None,
                )
            except DomainError as exc:
                attach_error(form, exc)
                status = exc.status_code
            else:
                messages.success(request, _("Page saved."))
                return redirect(
                    "wiki-pages:page", agent_id=agent.pk, folder=saved.folder, slug=saved.slug
                )
    elif item is not None:
        form = WikiPageForm(
            initial={
                "title": item.title,
                "kind": item.kind,
                "status": item.status or "ok",
                "sources": "\n".join(item.sources),
                "questions": "\n".join(item.questions),
                "body": item.body,  # the author's text: Page.body has no machine block
            }
        )
    else:
        # "Create this page" from a dangling [[link]] names it by its slug.
        title = (request.GET.get("title") or request.GET.get("slug") or "").replace("-", " ")
        form = WikiPageForm(initial={"status": "ok", "kind": "entity", "title": title.strip()})
    return page(
        request,
        "wiki/edit.html",
        {"form": form, "slug": slug, "page": item},
        tab="wiki",
        agent=agent,
        status=status,
    )


@owner_required
@require_POST
def page_delete(request: HttpRequest, agent_id: str, folder: str, slug: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    try:
        pages.delete_page(agent, f"{folder}/{slug}")
    except DomainError as exc:
        report_error(request, exc)
        return redirect("wiki-pages:vault", agent_id=agent.pk)
    messages.success(request, _("Page %(slug)s deleted.") % {"slug": slug})
    return redirect("wiki-pages:vault", agent_id=agent.pk)


@owner_required
@require_POST
def compile_now(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    try:
        run = wiki_compile.start_compile(agent, trigger="page")
    except DomainError as exc:
        report_error(request, exc)
    else:
        report_started(request, run)
    return redirect("wiki-pages:vault", agent_id=agent.pk)
