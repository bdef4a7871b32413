"""The agent screen (SPEC §4, §15): the system-prompt sections and the pre-turn block
exactly as the model gets them, with the file and version each section came from and, for
MEMORY.md, who brought each line (its blame)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from memory import context, feed, history, notes
from memory.clock import today
from memory.manage.layout import agent_or_404, current_agent, owner_required, page


@owner_required
def agent_screen_current(request: HttpRequest) -> HttpResponse:
    return redirect("memory-pages:agent", agent_id=current_agent(request).pk)


def _provenance(path: str) -> dict:
    """The file's newest version, and whether the file is still exactly that version."""
    latest = history.latest(path)
    return {
        "path": path,
        "version": latest,
        "current": latest is not None and history.is_current(latest),
    }


@owner_required
def agent_screen(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    sections = [
        {"title": title, "text": text, **_provenance(path)}
        for title, path, text in context.system_sections(agent)
    ]
    notes_read = [_provenance(path) for path in context.pre_turn_paths(agent)]
    memory_path = notes.memory_path(agent)
    return page(
        request,
        "memory/agent.html",
        {
            "system": context.system_prompt(agent),
            "sections": sections,
            "pre_turn": context.preview_pre_turn(agent),
            "notes_read": notes_read,
            "memory_path": memory_path,
            "lines": history.blame(memory_path),
            "today": today(),
            "remembered_this_week": feed.count_this_week(agent=agent.pk),
        },
        tab="agent",
        agent=agent,
        switch="memory-pages:agent",
    )
