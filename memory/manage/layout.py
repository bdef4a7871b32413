"""What every management page shares (SPEC §15): the owner check, the layout (tabs, the
pending badge, the agent switcher), the agent being viewed, errors as messages.

Views are thin: they read a form, call the same operation the API and the admin call, and
turn a domain error (409 conflict, 422 bad input, 404) into a message on the page — never a
500. The agent last viewed is kept in the session, so moving between tabs keeps it (§11).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import user_passes_test
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _

from memory.agents import default_agent, dir_problems
from memory.clock import zone_name
from memory.errors import Conflict, DiskFull, DomainError, NotFound, WorkspaceReadOnly
from memory.jobs.llm import get_provider
from memory.models import Agent, Run
from memory.owner import is_owner
from proposals import actions

USER_CAP = 4000
INDEX_CAP = 4000
MEMORY_CAP = 24000
SESSION_AGENT = "memory_pages_agent"
OWNER_SOURCE = "web"  # a person is present (SPEC §5)


def owner_required(view: Callable) -> Callable:
    """The owner only (memory.owner); anyone else is sent to the sign-in page."""
    return user_passes_test(is_owner, login_url="memory-pages:login")(view)


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


def current_agent(request: HttpRequest, agents: list[Agent] | None = None) -> Agent:
    """The agent last viewed in this session, else the default agent — found in `agents`
    (every agent, when the caller has them) without asking the database again."""
    agent_id = request.session.get(SESSION_AGENT)
    if agents is None:
        agent = Agent.objects.filter(pk=agent_id).first() if agent_id else None
        return agent or default_agent()
    viewed = next((agent for agent in agents if agent_id and agent.pk == agent_id), None)
    default = next((agent for agent in agents if agent.is_default), None)
    return viewed or default or default_agent()


def page(
    request: HttpRequest,
    template: str,
    context: dict,
    *,
    tab: str,
    agent: Agent | None = None,
    switch: str | None = None,
    status: int = 200,
    agents: list[Agent] | None = None,
) -> HttpResponse:
    """Render a page inside the shared layout: tabs, badge, agent switcher.

    `switch` is the URL name (namespaced, taking only `agent_id`) the agent switcher links to.
    `agents`: every agent, when the view has read them already."""
    agents = list(Agent.objects.all()) if agents is None else agents
    agent = agent or current_agent(request, agents)
    switch_links = [(other, reverse(switch, args=[other.pk])) for other in agents] if switch else []
    base = {
        "tab": tab,
        "agent": agent,
        "agents": agents,
        "switch_links": switch_links,
        "pending_count": actions.pending_count(),
        "model": model_status(),
        "zone": zone_name(),
        # An agent dir that cannot be used (a symbolic link, …) is said on every page.
        "agent_problems": [
            (other.pk, problems) for other in agents if (problems := dir_problems(other))
        ],
    }
    return render(request, template, {**base, **context}, status=status)


def error_label(exc: DomainError) -> str:
    if isinstance(exc, Conflict):
        return _("Conflict")
    if isinstance(exc, NotFound):
        return _("Not found")
    if isinstance(exc, DiskFull):
        return _("Disk full")
    if isinstance(exc, WorkspaceReadOnly):
        return _("Workspace read-only")
    return _("Not saved")


def report_error(request: HttpRequest, exc: DomainError) -> None:
    """A domain error as a message on the next page."""
    messages.error(request, f"{error_label(exc)}: {exc.message}")


def error_page(request: HttpRequest, exc: DomainError) -> HttpResponse:
    """A domain error no view turned into a message (a full disk under a form that does
    not expect one, an agent dir that is a link…): the message on a page of its own, with
    the error's status (507, 503, 422…), never a 500."""
    return page(
        request,
        "memory/error.html",
        {"label": error_label(exc), "message": exc.message},
        tab="",
        status=exc.status_code,
    )


def back(request: HttpRequest, fallback: str) -> HttpResponseRedirect:
    """Redirect to the `next` field when it is a local page address, else `fallback`."""
    target = request.POST.get("next") or ""
    if target.startswith("/manage/memory/") and "//" not in target:
        return redirect(target)
    return redirect(fallback)


def count_info(text: str, cap: int) -> dict:
    return {"count": len(text), "cap": cap, "over": len(text) > cap}


def model_status() -> dict:
    """Which model consolidation and compile would call (SPEC §13), for the pages to say
    what "Consolidate now" and "Compile now" will do before anyone clicks."""
    provider = get_provider()
    return {
        "configured": provider is not None,
        "provider": (settings.MEMORY_LLM_PROVIDER or "openai").strip().lower(),
        "model": getattr(provider, "model", "") if provider else "",
        "base_url": getattr(provider, "base_url", "") if provider else "",
    }


def report_started(request: HttpRequest, run: Run) -> None:
    """Say what starting a run did: queued, or — with no model configured — recorded as
    skipped, pointing to the settings (never "started" for a run that cannot call one)."""
    if get_provider() is None:
        if run.kind == Run.Kind.COMPILE:
            text = _(
                "No model is configured, so the compile cannot call one: run #%(id)s is "
                "recorded as skipped and nothing changed. Set MEMORY_LLM_MODEL and "
                "MEMORY_LLM_BASE_URL (see docs/configuration.md) and restart."
            )
        else:
            text = _(
                "No model is configured, so the consolidation cannot call one: run #%(id)s "
                "is recorded as skipped and nothing changed. Set MEMORY_LLM_MODEL and "
                "MEMORY_LLM_BASE_URL (see docs/configuration.md) and restart."
            )
        messages.warning(request, text % {"id": run.pk})
        return
    if run.kind == Run.Kind.COMPILE:
        text = _("Compile started (run #%(id)s). See Activity.")
    else:
        text = _("Consolidation started (run #%(id)s). See Activity.")
    messages.success(request, text % {"id": run.pk})
