"""The Scripts tab (SPEC §11): an agent's script store by schedule and by conversation."""

from __future__ import annotations

import json

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from memory import scripts
from memory.errors import DomainError
from memory.manage.layout import agent_or_404, current_agent, owner_required, page, report_error


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
        switch="memory-pages:scripts",
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
