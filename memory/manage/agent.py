"""The agent screen (SPEC §4, §15): the system-prompt sections and the pre-turn block
exactly as the model gets them."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from memory import context
from memory.clock import today
from memory.manage.layout import agent_or_404, current_agent, owner_required, page


@owner_required
def agent_screen_current(request: HttpRequest) -> HttpResponse:
    return redirect("memory-pages:agent", agent_id=current_agent(request).pk)


@owner_required
def agent_screen(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    return page(
        request,
        "memory/agent.html",
        {
            "system": context.system_prompt(agent),
            "pre_turn": context.preview_pre_turn(agent),
            "today": today(),
        },
        tab="agent",
        agent=agent,
        switch="memory-pages:agent",
    )
