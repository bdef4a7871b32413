"""The management pages (SPEC §15): server-rendered, for the signed-in owner.

Views are thin: they read a form, call the same operation the API and the admin call,
and turn a domain error (409 conflict, 422 bad input, 404) into a message on the page —
never a 500. The agent last viewed is kept in the session, so moving between tabs keeps
it (SPEC §11).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import user_passes_test
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from memory import consolidate, context, facts, notes, scripts, search, workspace
from memory.agents import default_agent
from memory.errors import Conflict, DomainError, InvalidInput, NotFound
from memory.forms import FactForm, FileForm, NewFactForm, SearchForm
from memory.models import Agent, Run
from memory.rendering import render_markdown
from memory.text import FACT_TYPES, fold, word_pattern, words
from memory.writes import forget_fact_or_propose, save_fact_or_propose
from proposals import actions, diff
from proposals.models import Proposal

USER_CAP = 4000
INDEX_CAP = 4000
MEMORY_CAP = 24000
SESSION_AGENT = "memory_pages_agent"
OWNER_SOURCE = "web"  # a person is present (SPEC §5)


def _is_owner(user) -> bool:
    return bool(user.is_authenticated and user.is_active and user.is_staff)


def owner_required(view: Callable) -> Callable:
    """Signed-in staff only; anyone else is sent to the sign-in page."""
    return user_passes_test(_is_owner, login_url="memory-pages:login")(view)


def actor(request: HttpRequest) -> str:
    return request.user.get_username() or "owner"


# --- the agent being viewed ------------------------------------------------------------


def agent_or_404(request: HttpRequest, agent_id: str) -> Agent:
    """The agent a URL names; remembered in the session for the other tabs."""
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None:
        raise Http404(_("No such agent."))
    request.session[SESSION_AGENT] = agent.pk
    return agent


def current_agent(request: HttpRequest) -> Agent:
    """The agent last viewed in this session, else the default agent."""
    agent_id = request.session.get(SESSION_AGENT)
    agent = Agent.objects.filter(pk=agent_id).first() if agent_id else None
    return agent or default_agent()


def page(
    request: HttpRequest,
    template: str,
    context: dict,
    *,
    tab: str,
    agent: Agent | None = None,
    switch: str | None = None,
    status: int = 200,
) -> HttpResponse:
    """Render a page inside the shared layout: tabs, badge, agent switcher.

    `switch` is the URL name (taking only `agent_id`) the agent switcher links to."""
    agent = agent or current_agent(request)
    agents = list(Agent.objects.all())
    switch_links = (
        [(other, reverse(f"memory-pages:{switch}", args=[other.pk])) for other in agents]
        if switch
        else []
    )
    base = {
        "tab": tab,
        "agent": agent,
        "agents": agents,
        "switch_links": switch_links,
        "pending_count": Proposal.objects.filter(status=Proposal.Status.PENDING).count(),
    }
    return render(request, template, {**base, **context}, status=status)


def report_error(request: HttpRequest, exc: DomainError) -> None:
    """A domain error as a message on the next page."""
    if isinstance(exc, Conflict):
        label = _("Conflict")
    elif isinstance(exc, NotFound):
        label = _("Not found")
    else:
        label = _("Not saved")
    messages.error(request, f"{label}: {exc.message}")


def back(request: HttpRequest, fallback: str) -> HttpResponseRedirect:
    """Redirect to the `next` field when it is a local page address, else `fallback`."""
    target = request.POST.get("next") or ""
    if target.startswith("/manage/memory/") and "//" not in target:
        return redirect(target)
    return redirect(fallback)


def count_info(text: str, cap: int) -> dict:
    return {"count": len(text), "cap": cap, "over": len(text) > cap}


# --- Memory tab ------------------------------------------------------------------------


@owner_required
def memory_home(request: HttpRequest) -> HttpResponse:
    """USER.md, the facts (with filter), links to each agent's memory."""
    # Hash what was read (None for a missing file), so saving onto a file created
    # meanwhile is caught as a conflict too.
    raw = workspace.read(facts.USER_PATH)
    user_body = raw or ""
    user_form = FileForm(initial={"body": user_body, "base_hash": workspace.hash_text(raw)})
    return _memory_home(request, user_form, user_body)


def _memory_home(request, user_form: FileForm, shown_body: str, status: int = 200):
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
            "user_count": count_info(shown_body, USER_CAP),
            "facts": shown,
            "fact_total": len(all_facts),
            "fact_query": query,
            "fact_type": fact_type,
            "fact_types": facts_types(),
            "new_fact_form": NewFactForm(),
            "index_count": count_info(workspace.read(facts.INDEX_PATH) or "", INDEX_CAP),
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
        facts.write_user(body, base_hash=form.cleaned_data["base_hash"] or None)
    except DomainError as error:
        exc = _explained(error, facts.USER_PATH)
        report_error(request, exc)
        # Show what the owner typed, so nothing is lost; the base stays the old one.
        return _memory_home(request, form, body, status=409 if isinstance(exc, Conflict) else 422)
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
        if facts.get_fact(name) is not None:
            raise InvalidInput(_("a fact named %(name)s exists already.") % {"name": name})
        _save_fact_form(name, form)
    except DomainError as exc:
        report_error(request, exc)
        return redirect("memory-pages:home")
    messages.success(request, _("Fact %(name)s saved.") % {"name": name})
    return redirect("memory-pages:home")


def _form_errors(form) -> str:
    return "; ".join(f"{field}: {' '.join(errs)}" for field, errs in form.errors.items())


def _save_fact_form(name: str, form: FactForm) -> None:
    """Write the fact from a valid FactForm (or NewFactForm) as the owner, a person
    present: written at once. Raises DomainError."""
    data = form.cleaned_data
    save_fact_or_propose(
        name,
        description=data["description"],
        type=data["type"],
        body=data["body"],
        source=OWNER_SOURCE,
        written_by="owner",
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
        forget_fact_or_propose(name, source=OWNER_SOURCE, written_by="owner")
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
                return _agent_memory(request, agent, form, body, status=409)
            messages.success(request, _("MEMORY.md saved."))
            return redirect("memory-pages:agent-memory", agent_id=agent.pk)
    raw = workspace.read(notes.memory_path(agent))
    form = FileForm(initial={"body": raw or "", "base_hash": workspace.hash_text(raw)})
    body = raw or ""
    return _agent_memory(request, agent, form, body)


def _agent_memory(request, agent: Agent, form: FileForm, body: str, status: int = 200):
    return page(
        request,
        "memory/agent_memory.html",
        {
            "form": form,
            "memory_count": count_info(body, MEMORY_CAP),
            "notes": notes.list_notes(agent),
            "memory_path": notes.memory_path(agent),
        },
        tab="memory",
        agent=agent,
        switch="agent-memory",
        status=status,
    )


@owner_required
def note_detail(request: HttpRequest, agent_id: str, name: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    try:
        rel = notes.note_path(agent, name)
        text = notes.read_note(agent, name)
    except DomainError as exc:
        raise Http404(exc.message) from None
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
                status = 409
            else:
                messages.success(request, _("Note saved."))
                return redirect("memory-pages:note", agent_id=agent.pk, name=name)
    else:
        form = FileForm(initial={"body": text, "base_hash": workspace.hash_text(text)})
    return page(
        request,
        "memory/note.html",
        {"name": name, "path": rel, "form": form, "body_html": render_markdown(text)},
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
    return consolidate.start_consolidation(agent, trigger="page")


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


# --- proposals -------------------------------------------------------------------------


@owner_required
def proposals(request: HttpRequest) -> HttpResponse:
    pending = list(
        Proposal.objects.filter(status=Proposal.Status.PENDING)
        .select_related("agent", "run")
        .order_by("created_at", "id")
    )
    history = list(
        Proposal.objects.exclude(status=Proposal.Status.PENDING)
        .select_related("agent")
        .order_by("-decided_at", "-id")[:100]
    )
    cards = [proposal_card(p) for p in pending]
    return page(
        request,
        "memory/proposals.html",
        {"cards": cards, "history": history},
        tab="memory",
    )


@owner_required
def proposal_detail(request: HttpRequest, pk: int) -> HttpResponse:
    proposal = Proposal.objects.filter(pk=pk).select_related("agent", "run").first()
    if proposal is None:
        raise Http404(_("No such proposal."))
    return page(request, "memory/proposal.html", {"card": proposal_card(proposal)}, tab="memory")


def proposal_card(proposal: Proposal) -> dict:
    """What a card shows: reasons, and per changed file the diff against the text it
    replaces (escaped by proposals.diff) or, for `agent_memory`, the lines it adds."""
    return {
        "p": proposal,
        "diff_html": diff.render_file_diffs(diff.proposal_diff(proposal)),
        "added_lines": diff.added_lines(proposal) if proposal.kind == "agent_memory" else None,
        "reasons": [_reason_text(reason) for reason in proposal.reasons or []],
        "can_undo": proposal.status == Proposal.Status.APPROVED and proposal.undone_at is None,
    }


def _reason_text(reason) -> str:
    if isinstance(reason, dict):
        parts = [str(reason.get(key)) for key in ("action", "line", "why") if reason.get(key)]
        if parts:
            return " — ".join(parts)
        return json.dumps(reason, ensure_ascii=False)
    return str(reason)


def _decide(request: HttpRequest, pk: int, operation: str, done: str) -> HttpResponse:
    proposal = Proposal.objects.filter(pk=pk).first()
    if proposal is None:
        messages.error(request, _("Not found: no proposal %(id)s.") % {"id": pk})
        return back(request, reverse("memory-pages:proposals"))
    try:
        getattr(actions, operation)(proposal, by=actor(request))
    except DomainError as exc:
        report_error(request, exc)
    else:
        messages.success(request, done % {"id": pk})
    return back(request, reverse("memory-pages:proposals"))


@owner_required
@require_POST
def approve_proposal(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(request, pk, "approve", _("Proposal %(id)s approved."))


@owner_required
@require_POST
def reject_proposal(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(request, pk, "reject", _("Proposal %(id)s rejected."))


@owner_required
@require_POST
def undo_proposal(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(request, pk, "undo", _("Proposal %(id)s undone."))


# --- the agent screen, activity, scripts -----------------------------------------------


@owner_required
def agent_screen_current(request: HttpRequest) -> HttpResponse:
    return redirect("memory-pages:agent", agent_id=current_agent(request).pk)


@owner_required
def agent_screen(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    return page(
        request,
        "memory/agent.html",
        {"system": context.system_prompt(agent), "pre_turn": context.preview_pre_turn(agent)},
        tab="agent",
        agent=agent,
        switch="agent",
    )


@owner_required
def activity(request: HttpRequest) -> HttpResponse:
    runs = Run.objects.select_related("agent").prefetch_related("proposals")
    agent_filter = request.GET.get("agent") or ""
    if agent_filter:
        runs = runs.filter(agent_id=agent_filter)
    rows = []
    for run in runs.order_by("-started_at", "-id")[:200]:
        duration = (run.finished_at - run.started_at).total_seconds() if run.finished_at else None
        rows.append(
            {
                "run": run,
                "duration": duration,
                "reasons": [_reason_text(reason) for reason in run.reasons or []],
            }
        )
    return page(
        request,
        "memory/activity.html",
        {"rows": rows, "agent_filter": agent_filter},
        tab="activity",
    )


@owner_required
def scripts_current(request: HttpRequest) -> HttpResponse:
    return redirect("memory-pages:scripts", agent_id=current_agent(request).pk)


@owner_required
def scripts_tab(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    groups = scripts.grouped(agent)
    for entries in (*groups["schedule"].values(), *groups["conversation"].values()):
        for entry in entries:
            entry.pretty = json.dumps(entry.value, ensure_ascii=False, indent=2)
    return page(
        request,
        "memory/scripts.html",
        {
            "schedules": sorted(groups["schedule"].items()),
            "conversations": sorted(groups["conversation"].items()),
        },
        tab="scripts",
        agent=agent,
        switch="scripts",
    )


@owner_required
@require_POST
def delete_script_entry(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    scope = request.POST.get("scope", "")
    scope_id = request.POST.get("scope_id", "")
    key = request.POST.get("key", "")
    try:
        scripts.delete_entry(agent, scope, scope_id, key)
    except DomainError as exc:
        report_error(request, exc)
    else:
        messages.success(
            request,
            _("Deleted %(scope)s %(id)s: %(key)s.") % {"scope": scope, "id": scope_id, "key": key},
        )
    return redirect("memory-pages:scripts", agent_id=agent.pk)
