"""The Memory tab (SPEC §15): USER.md, the facts, each agent's MEMORY.md and notes, search
across scopes, and "consolidate now"."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from memory import facts, notes, search, workspace
from memory.errors import Conflict, DomainError
from memory.jobs import nightly
from memory.manage.forms import FactForm, FileForm, NewFactForm, SearchForm
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
)
from memory.manage.rendering import render_markdown
from memory.models import Agent, Run
from memory.text import FACT_TYPES, fold, word_pattern, words
from memory.writes import OWNER, forget_fact_or_propose, replace_user, save_fact_or_propose


@owner_required
def memory_home(request: HttpRequest) -> HttpResponse:
    """USER.md, the facts (with filter), links to each agent's memory."""
    # Hash what was read (None for a missing file), so saving onto a file created
    # meanwhile is caught as a conflict too.
    found = workspace.read_file_locked(facts.user_path())
    user_body = found.text if found else ""
    raw_hash = found.hash if found else workspace.ABSENT
    user_form = FileForm(initial={"body": user_body, "base_hash": raw_hash})
    return _memory_home(request, user_form, user_body, warnings=bad_bytes_warning(found))


def bad_bytes_warning(found: workspace.FileText | None) -> list[str]:
    """The warning a page shows for a file with bytes that are not UTF-8 (issue 10.6)."""
    if found is None or not found.invalid_utf8:
        return []
    return [
        _(
            "This file has bytes that are not UTF-8 text; they are shown as \ufffd. "
            "Saving replaces them with that character."
        )
    ]


def _memory_home(request, user_form: FileForm, shown_body: str, status: int = 200, warnings=()):
    query = (request.GET.get("fq") or "").strip()
    fact_type = request.GET.get("type") or ""
    all_facts = facts.list_facts()
    shown = [
        fact
        for fact in all_facts
        if (not fact_type or fact.type == fact_type)
        and (not query or _matches(query, f"{fact.name} {fact.description} {fact.body}"))
    ]
    return page(
        request,
        "memory/home.html",
        {
            "user_form": user_form,
            "user_path": facts.user_path(),  # the root USER.md in an OpenClaw workspace
            "user_count": count_info(shown_body, USER_CAP),
            "facts": shown,
            "fact_total": len(all_facts),
            "fact_query": query,
            "fact_type": fact_type,
            "fact_types": facts_types(),
            "new_fact_form": NewFactForm(),
            "index_count": count_info(workspace.read(facts.INDEX_PATH) or "", INDEX_CAP),
            "file_warnings": list(warnings),
        },
        tab="memory",
        status=status,
    )


def facts_types() -> tuple[str, ...]:
    return FACT_TYPES


def _matches(query: str, text: str) -> bool:
    """Every word of the query is in the text, compared as search compares (folded)."""
    folded = fold(text)
    return all(word_pattern(word).search(folded) for word in words(query))


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
    if not form.is_valid():
        messages.error(request, _("Not saved: %(errors)s") % {"errors": _form_errors(form)})
        return redirect("memory-pages:home")
    name = form.cleaned_data["name"]
    try:
        _save_fact_form(name, form, create_only=True)
    except DomainError as exc:
        report_error(request, exc)
        return redirect("memory-pages:home")
    messages.success(request, _("Fact %(name)s saved.") % {"name": name})
    return redirect("memory-pages:home")


def _form_errors(form) -> str:
    return "; ".join(f"{field}: {' '.join(errs)}" for field, errs in form.errors.items())


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
    if request.method == "POST":
        form = FactForm(request.POST)
        if form.is_valid():
            try:
                _save_fact_form(name, form)
            except DomainError as exc:
                report_error(request, exc)
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
    found = workspace.read_file_locked(notes.memory_path(agent))
    body = found.text if found else ""
    form = FileForm(initial={"body": body, "base_hash": found.hash if found else workspace.ABSENT})
    return _agent_memory(request, agent, form, body, warnings=bad_bytes_warning(found))


def _agent_memory(request, agent: Agent, form: FileForm, body: str, status: int = 200, warnings=()):
    return page(
        request,
        "memory/agent_memory.html",
        {
            "form": form,
            "memory_count": count_info(body, MEMORY_CAP),
            "notes": notes.list_notes(agent),
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
        found = workspace.read_file_locked(rel)
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
            "file_warnings": bad_bytes_warning(found),
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
        messages.success(
            request,
            _("Consolidation started (run %(id)s, %(status)s). See Activity.")
            % {"id": run.pk, "status": run.status},
        )
    return back(request, reverse("memory-pages:agent-memory", args=[agent.pk]))


def start_consolidation(agent: Agent) -> Run:
    """Exactly what `POST /api/agents/{id}/memory/consolidate` does."""
    return nightly.start_consolidation(agent, trigger="page")


# --- search ----------------------------------------------------------------------------


@owner_required
def search_page(request: HttpRequest) -> HttpResponse:
    form = SearchForm(request.GET or None)
    hits = []
    if form.is_valid() and form.cleaned_data["q"].strip():
        try:
            hits = search.search_all(
                form.cleaned_data["q"], agent_id=form.cleaned_data.get("agent") or None, limit=50
            )
        except DomainError as exc:  # e.g. a query with no letter or digit
            report_error(request, exc)
    return page(
        request,
        "memory/search.html",
        {"form": form, "hits": hits, "searched": form.is_bound},
        tab="memory",
    )
