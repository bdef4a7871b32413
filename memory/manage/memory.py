"""The Memory tab (SPEC §15): USER.md, the facts, each agent's MEMORY.md and notes, search
across scopes, and "consolidate now"."""

from __future__ import annotations

import datetime as dt
import functools
import html
from urllib.parse import quote

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.defaultfilters import floatformat
from django.urls import get_script_prefix, reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from django.views.decorators.http import require_POST

from memory import facts, notes, reading, search
from memory.agents import get_agent_or_404
from memory.errors import Conflict, DomainError, InvalidInput
from memory.jobs import nightly
from memory.listing import Pages
from memory.manage.forms import FactForm, FileForm, NewFactForm, SearchForm, attach_error
from memory.manage.layout import (
    INDEX_CAP,
    MEMORY_CAP,
    OWNER_SOURCE,
    USER_CAP,
    agent_or_404,
    back,
    count_info,
    owner_required,
    page,
    report_error,
    report_started,
)
from memory.manage.paging import PER_PAGE, Counted, paginate, wanted_page
from memory.manage.rendering import highlight, render_markdown
from memory.models import Agent, Run
from memory.query import Query
from memory.text import FACT_TYPES, fold, parse_note_name
from memory.writes import OWNER, forget_fact_or_propose, replace_user, save_fact_or_propose


@owner_required
def memory_home(request: HttpRequest) -> HttpResponse:
    """USER.md, the facts (with filter), links to each agent's memory."""
    # Hash what was read (None for a missing file), so saving onto a file created
    # meanwhile is caught as a conflict too.
    found = facts.read_user_with_hash()
    user_form = FileForm(initial={"body": found.text, "base_hash": found.hash})
    return _memory_home(
        request, user_form, found.text, warnings=bad_bytes_warning(found.invalid_utf8)
    )


def bad_bytes_warning(invalid_utf8: bool) -> list[str]:
    """The warning a page shows for a file with bytes that are not UTF-8 (SPEC §1)."""
    if not invalid_utf8:
        return []
    return [
        _(
            "This file has bytes that are not UTF-8 text; they are shown as replacement "
            "characters. Saving replaces them with those characters."
        )
    ]


def _memory_home(
    request,
    user_form: FileForm,
    shown_body: str,
    status: int = 200,
    new_fact_form: NewFactForm | None = None,
    warnings=(),
):
    query = (request.GET.get("fq") or "").strip()
    wanted = Query.parse(query, allow_empty=True)
    fact_type = request.GET.get("type") or ""
    fact_total = facts.count_facts()
    if wanted.words or fact_type:  # a filter reads every fact
        shown = [
            fact
            for fact in facts.list_facts()
            if (not fact_type or fact.type == fact_type)
            and _matches(wanted, f"{fact.name} {fact.description} {fact.body}")
        ]
    else:  # only the page's facts are read
        shown = Pages(lambda offset, limit: facts.facts_listing(offset=offset, limit=limit))
    pager = paginate(request, shown, label=_("facts"))
    return page(
        request,
        "memory/home.html",
        {
            "user_form": user_form,
            "user_path": facts.user_path(),  # the root USER.md in an OpenClaw workspace
            "user_count": count_info(shown_body, USER_CAP),
            "facts": pager.items,
            "pager": pager,
            "fact_total": fact_total,
            "fact_query": query,
            "fact_type": fact_type,
            "fact_types": facts_types(),
            "new_fact_form": new_fact_form or NewFactForm(),
            "user_is_new": not shown_body.strip() and not user_form.is_bound,
            "first_run": not shown_body.strip() and not fact_total,
            "user_template": USER_TEMPLATE,
            "index_count": count_info(facts.read_index(), INDEX_CAP),
            "file_warnings": list(warnings),
        },
        tab="memory",
        status=status,
    )


def facts_types() -> tuple[str, ...]:
    return FACT_TYPES


def _matches(query: Query, text: str) -> bool:
    """Every word of the query is in the text, compared as search compares (folded); a
    query without words filters nothing out."""
    folded = fold(text)
    return all(word.pattern.search(folded) for word in query.words)


@owner_required
@require_POST
def save_user(request: HttpRequest) -> HttpResponse:
    form = FileForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Not saved: the form was incomplete."))
        return redirect("memory-pages:home")
    body = form.cleaned_data["body"]
    try:
        replace_user(
            body,
            written_by=OWNER,
            source=OWNER_SOURCE,
            base_hash=form.cleaned_data["base_hash"] or None,
        )
    except DomainError as error:
        exc = _explained(error, facts.user_path())
        report_error(request, exc)
        # Show what the owner typed, so nothing is lost; the base stays the old one.
        return _memory_home(request, form, body, status=exc.status_code)
    messages.success(request, _("USER.md saved."))
    return redirect("memory-pages:home")


def _explained(exc: DomainError, rel: str) -> DomainError:
    """A save refused because the file changed since the form was shown (an agent
    appended, another tab saved), said in the owner's words; other errors as they are."""
    if not isinstance(exc, Conflict):
        return exc
    return Conflict(
        _(
            "%(path)s changed since you opened it. Your text is below; copy what you "
            "need, reload, and edit again."
        )
        % {"path": rel}
    )


@owner_required
@require_POST
def add_fact(request: HttpRequest) -> HttpResponse:
    form = NewFactForm(request.POST)
    status = 422
    if form.is_valid():
        name = form.cleaned_data["name"]
        try:
            _save_fact_form(name, form, create_only=True)
        except DomainError as exc:
            attach_error(form, exc, default_field="name" if isinstance(exc, Conflict) else None)
            status = exc.status_code
        else:
            messages.success(request, _("Fact %(name)s saved.") % {"name": name})
            return redirect("memory-pages:home")
    # Shown again as typed, each error next to its field: nothing the owner wrote is lost.
    messages.error(request, _("The fact was not saved: see the form below."))
    found = facts.read_user_with_hash()
    user_form = FileForm(initial={"body": found.text, "base_hash": found.hash})
    return _memory_home(request, user_form, found.text, status=status, new_fact_form=form)


def _save_fact_form(name: str, form: FactForm, *, create_only: bool = False) -> None:
    """Write the fact from a valid FactForm (or NewFactForm) as the owner, a person
    present: written at once. Raises DomainError."""
    data = form.cleaned_data
    save_fact_or_propose(
        name,
        description=data["description"],
        type=data["type"],
        body=data["body"],
        source=OWNER_SOURCE,
        written_by=OWNER,
        create_only=create_only,
    )


@owner_required
def fact_detail(request: HttpRequest, name: str) -> HttpResponse:
    try:
        fact = facts.get_fact_or_404(name)
    except DomainError as exc:
        raise Http404(exc.message) from None
    status = 200
    if request.method == "POST":
        form = FactForm(request.POST)
        status = 422
        if form.is_valid():
            try:
                _save_fact_form(name, form)
            except DomainError as exc:
                attach_error(form, exc)
                status = exc.status_code
            else:
                messages.success(request, _("Fact %(name)s saved.") % {"name": name})
                return redirect("memory-pages:fact", name=name)
    else:
        form = FactForm(
            initial={"description": fact.description, "type": fact.type, "body": fact.body}
        )
    return page(
        request,
        "memory/fact.html",
        {"fact": fact, "form": form, "body_html": render_markdown(fact.body)},
        tab="memory",
        status=status,
    )


@owner_required
@require_POST
def forget_fact(request: HttpRequest, name: str) -> HttpResponse:
    try:
        forget_fact_or_propose(name, source=OWNER_SOURCE, written_by=OWNER)
    except DomainError as exc:
        report_error(request, exc)
    else:
        messages.success(request, _("Fact %(name)s forgotten.") % {"name": name})
    return redirect("memory-pages:home")


# --- an agent's memory -----------------------------------------------------------------


@owner_required
def agent_memory(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    body = notes.read_memory(agent)
    if request.method == "POST":
        form = FileForm(request.POST)
        if form.is_valid():
            body = form.cleaned_data["body"]
            rel = notes.memory_path(agent)
            try:
                notes.write_memory(agent, body, base_hash=form.cleaned_data["base_hash"] or None)
            except DomainError as exc:
                report_error(request, _explained(exc, rel))
                return _agent_memory(request, agent, form, body, status=exc.status_code)
            messages.success(request, _("MEMORY.md saved."))
            return redirect("memory-pages:agent-memory", agent_id=agent.pk)
    found = notes.read_memory_with_hash(agent)
    form = FileForm(initial={"body": found.text, "base_hash": found.hash})
    return _agent_memory(
        request, agent, form, found.text, warnings=bad_bytes_warning(found.invalid_utf8)
    )


def _agent_memory(request, agent: Agent, form: FileForm, body: str, status: int = 200, warnings=()):
    return page(
        request,
        "memory/agent_memory.html",
        {
            "form": form,
            "memory_count": count_info(body, MEMORY_CAP),
            "notes": (
                pager := paginate(
                    request,
                    Pages(
                        lambda offset, limit: notes.notes_listing(agent, offset=offset, limit=limit)
                    ),
                    label=_("notes"),
                )
            ).items,
            "pager": pager,
            "memory_path": notes.memory_path(agent),
            "file_warnings": list(warnings),
        },
        tab="memory",
        agent=agent,
        switch="memory-pages:agent-memory",
        status=status,
    )


@owner_required
def note_detail(request: HttpRequest, agent_id: str, name: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    try:
        rel = notes.existing_note_path(agent, name)
        found = notes.read_note_with_hash(agent, name)
    except DomainError as exc:
        raise Http404(exc.message) from None
    if found is None:
        raise Http404(_("No such note."))
    text = found.text
    status = 200
    if request.method == "POST":
        form = FileForm(request.POST)
        if form.is_valid():
            try:
                notes.write_note(
                    agent,
                    name,
                    form.cleaned_data["body"],
                    base_hash=form.cleaned_data["base_hash"] or None,
                )
            except DomainError as exc:
                report_error(request, _explained(exc, rel))
                status = exc.status_code
            else:
                messages.success(request, _("Note saved."))
                return redirect("memory-pages:note", agent_id=agent.pk, name=name)
    else:
        form = FileForm(initial={"body": text, "base_hash": found.hash})
    return page(
        request,
        "memory/note.html",
        {
            "name": name,
            "path": rel,
            "form": form,
            "body_html": render_markdown(text),
            "file_warnings": bad_bytes_warning(found.invalid_utf8),
            "lines": numbered_lines(text, request.GET.get("q") or ""),
        },
        tab="memory",
        agent=agent,
        status=status,
    )


@owner_required
@require_POST
def consolidate_now(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    try:
        run = start_consolidation(agent)
    except DomainError as exc:
        report_error(request, exc)
    else:
        report_started(request, run)
    return back(request, reverse("memory-pages:agent-memory", args=[agent.pk]))


def start_consolidation(agent: Agent) -> Run:
    """Exactly what `POST /api/agents/{id}/memory/consolidate` does."""
    return nightly.start_consolidation(agent, trigger="page")


# --- one memory file, by line ----------------------------------------------------------


def numbered_lines(text: str, query: str = "") -> SafeString:
    """The file's lines as search numbers them ("\n" only), each escaped and, with a
    query, its words marked: the list `memory/lines.html` shows, built here in one pass
    (a template loop costs a millisecond per hundred lines, and notes have thousands)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    marked = Query.parse(query, allow_empty=True)
    label, empty, title = _("Line %(n)s"), _("(empty)"), _("Lines")
    items = [
        f'<li id="L{number}"><a class="line-number" href="#L{number}" aria-label="'
        f'{escape(label % {"n": number})}">{number}</a><span class="line-text">'
        f"{highlight(line, marked) if query else escape(line)}</span></li>"
        for number, line in enumerate(lines, start=1)
    ] or [f'<li class="muted">{escape(empty)}</li>']
    opening = f'<ol class="lines" aria-label="{escape(title)}">'
    return mark_safe(opening + "".join(items) + "</ol>")  # noqa: S308 — every piece escaped


@owner_required
def file_view(request: HttpRequest, agent_id: str, path: str) -> HttpResponse:
    """A memory file of the agent by the path search shows (memory_get's rules: MEMORY.md,
    memory/**/*.md), with numbered lines: a search hit links to `#L<line>`. Read-only;
    it links to the page that edits it."""
    agent = agent_or_404(request, agent_id)
    try:
        text = reading.read_whole_memory_file(agent, path)
    except DomainError as exc:
        raise Http404(exc.message) from None
    return page(
        request,
        "memory/file.html",
        {
            "path": path,
            "lines": numbered_lines(text, request.GET.get("q") or ""),
            "edit_url": edit_url(agent, path),
            "query": request.GET.get("q") or "",
        },
        tab="memory",
        agent=agent,
    )


def edit_url(agent: Agent, path: str) -> str:
    """The page that edits the file at `path` (relative to the agent dir), or ""."""
    if path == notes.MEMORY_FILE:
        return reverse("memory-pages:agent-memory", args=[agent.pk])
    folder, _sep, file_name = path.rpartition("/")
    if folder == notes.NOTES_DIR:
        try:
            parse_note_name(file_name)
        except InvalidInput:
            return ""
        return reverse("memory-pages:note", args=[agent.pk, file_name.removesuffix(".md")])
    if folder.startswith("memory/wiki/") and folder.count("/") == 2:
        # A wiki page is its path: its folder and its name (SPEC §10.1).
        page_folder = folder.rsplit("/", 1)[1]
        return reverse(
            "wiki-pages:page", args=[agent.pk, page_folder, file_name.removesuffix(".md")]
        )
    # Any other Markdown file a person keeps in memory/ (the files tab edits it).
    return reverse("memory-pages:memory-file", args=[agent.pk, path])


def hit_rows(hits: list[search.Hit], query: Query, *, weights: bool) -> SafeString:
    """The Search page's table rows, one per hit: the agent (or "user"), where it opens
    (the fact's page, USER.md where it is edited, or the file at its line) with its heading,
    the day of its note, the text with the query's words marked, and with `weights` what
    the hit weighed. Built here rather than in the template (twenty rows through the
    template language took 2 ms of the page's ~20), every value escaped where it is put
    in, as format_html would (`highlight` escapes the text itself)."""
    esc = html.escape
    where, day_label, text_label = (
        esc(_("Where")),
        esc(_("Note date")),
        esc(_("Matched text")),
    )
    weight_label, user = esc(_("Weight")), _("user")
    rows = []
    for hit in hits:
        url, day = _hit_link(hit, query)
        place = hit.path
        if hit.line:
            place += f":{hit.line}"
            if hit.end_line and hit.end_line != hit.line:
                place += f"–{hit.end_line}"
        heading = f' <span class="muted">{esc(hit.heading)}</span>' if hit.heading else ""
        shown_day = day.isoformat() if day else '<span class="muted">—</span>'
        weight = ""
        if weights:
            weight = (
                f'<td data-label="{weight_label}" title="{esc(", ".join(hit.matched))}">'
                f"{esc(floatformat(hit.weight, 3))}</td>"
            )
        rows.append(
            f'<tr><td data-label="{where}"><span class="tag">{esc(hit.agent or user)}</span> '
            f'<a href="{esc(url)}"><code>{esc(place)}</code></a>{heading}</td>'
            f'<td data-label="{day_label}">{shown_day}</td><td class="hit-text" '
            f'data-label="{text_label}">{highlight(hit.text, query)}</td>{weight}</tr>'
        )
    return mark_safe("\n".join(rows))  # noqa: S308 — every value escaped just above


def _hit_link(hit: search.Hit, query: Query) -> tuple[str, dt.date | None]:
    """Where a search hit opens, and the day of its note (None for any other file)."""
    if hit.agent is None and hit.line is not None:  # USER.md: the "User and facts" tab
        return reverse("memory-pages:home") + "#user-body", None
    if hit.agent is None:  # a fact: users/owner/facts/<name>.md, one entry
        name = hit.path.rsplit("/", 1)[-1].removesuffix(".md")
        return reverse("memory-pages:fact", args=[name]), None
    url = _file_url(get_script_prefix(), hit.agent, hit.path)
    url += f"?q={quote(query.text)}#L{hit.line}" if hit.line else ""
    folder, _sep, file_name = hit.path.rpartition("/")
    if folder == notes.NOTES_DIR:
        try:
            return url, parse_note_name(file_name)[0]
        except InvalidInput:
            pass
    return url, None


def _agent_options(agents: list[Agent], chosen: str | None) -> SafeString:
    """The agents to search, as <option>s, `chosen` selected (twenty agents through the
    template language took a fifth of the page's render)."""
    esc = html.escape
    return mark_safe(  # noqa: S308 — each id escaped
        "".join(
            f'<option value="{esc(agent.pk)}"{" selected" if agent.pk == chosen else ""}>'
            f"{esc(agent.pk)}</option>"
            for agent in agents
        )
    )


@functools.lru_cache(maxsize=4096)
def _file_url(prefix: str, agent_id: str, path: str) -> str:
    """The file's page, reversed once per process (`prefix`, the script prefix reverse
    reads, keys it too): the same files come back search after search, and reversing took
    a fifth of the rows' time."""
    return reverse("memory-pages:file", args=[agent_id, path])


# --- search ----------------------------------------------------------------------------


@owner_required
def search_page(request: HttpRequest) -> HttpResponse:
    form = SearchForm(request.GET or None)
    rows = mark_safe("")
    pager = None
    window = None
    explained = None
    agents = list(Agent.objects.all())  # searched, and listed by the layout
    if form.is_valid() and form.cleaned_data["q"].strip():
        agent_id = form.cleaned_data.get("agent") or None
        number = wanted_page(request)
        try:
            query = Query.parse(form.cleaned_data["q"])
            window = search.search_window(
                query,
                agent_id=agent_id,
                offset=(number - 1) * PER_PAGE,
                limit=PER_PAGE,
                agents=agents,
            )
            if not window.hits and window.total:  # past the end: the last page
                last = (window.total - 1) // PER_PAGE
                window = search.search_window(
                    query, agent_id=agent_id, offset=last * PER_PAGE, limit=PER_PAGE, agents=agents
                )
            if form.cleaned_data.get("explain"):
                agent = get_agent_or_404(agent_id) if agent_id else None
                explained = search.explain(query, agent=agent)
        except DomainError as exc:  # e.g. a query with no letter or digit
            report_error(request, exc)
        else:
            pager = paginate(
                request, Counted(window.hits, window.total, window.offset), label=_("results")
            )
            rows = hit_rows(window.hits, query, weights=bool(explained))
    return page(
        request,
        "memory/search.html",
        {
            "form": form,
            "rows": rows,
            "pager": pager,
            "capped": bool(window and window.capped),
            "searched": form.is_bound,
            "explained": explained,
            "agent_options": _agent_options(agents, form["agent"].value()),
        },
        tab="memory",
        agents=agents,
    )


USER_TEMPLATE = gettext_noop(
    """# About me

- Name:
- What I do:
- Where I live, and my time zone:
- How I like answers (short or detailed, language, format):
- People and projects I often mention:
"""
)
