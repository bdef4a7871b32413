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
from memory.manage.paging import paginate


@owner_required
def scripts_current(request: HttpRequest) -> HttpResponse:
    return redirect("memory-pages:scripts", agent_id=current_agent(request).pk)


@owner_required
def scripts_tab(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    entries = scripts.list_entries(agent)  # by scope, scope id, key
    pagers = {
        scope: paginate(
            request,
            [entry for entry in entries if entry.scope == scope],
            per_page=50,
            param=f"{scope[0]}page",
            label=label,
        )
        for scope, label in (("schedule", _("schedules")), ("conversation", _("conversations")))
    }
    return page(
        request,
        "memory/scripts.html",
        {
            "schedules": _grouped(pagers["schedule"].items),
            "conversations": _grouped(pagers["conversation"].items),
            "schedule_pager": pagers["schedule"],
            "conversation_pager": pagers["conversation"],
        },
        tab="scripts",
        agent=agent,
        switch="memory-pages:scripts",
    )


def _grouped(entries: list) -> list[tuple[str, list]]:
    """A page of entries grouped by scope id (in order), each with its value pretty-printed."""
    groups: dict[str, list] = {}
    for entry in entries:
        entry.pretty = json.dumps(entry.value, ensure_ascii=False, indent=2)
        groups.setdefault(entry.scope_id, []).append(entry)
    return list(groups.items())


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
