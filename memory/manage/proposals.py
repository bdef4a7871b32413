"""The proposals queue and history of the Memory tab (SPEC §7, §15): cards with diffs,
approve / reject / undo through proposals.actions, like the API and the admin."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from memory.errors import DomainError
from memory.manage.layout import actor, back, owner_required, page, report_error
from memory.manage.paging import paginate
from proposals import actions, diff
from proposals.diff import reason_text
from proposals.models import Proposal


@owner_required
def proposals(request: HttpRequest) -> HttpResponse:
    pending = (
        Proposal.objects.filter(status=Proposal.Status.PENDING)
        .select_related("agent", "run")
        .order_by("created_at", "id")
    )
    history = (
        Proposal.objects.exclude(status=Proposal.Status.PENDING)
        .select_related("agent")
        .order_by("-decided_at", "-id")
    )
    pending_pager = paginate(request, pending, per_page=10, label=_("pending proposals"))
    history_pager = paginate(request, history, param="hpage", label=_("history"))
    cards = [proposal_card(p) for p in pending_pager.items]
    return page(
        request,
        "memory/proposals.html",
        {
            "cards": cards,
            "history": history_pager.items,
            "pager": pending_pager,
            "history_pager": history_pager,
        },
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
        "reasons": [reason_text(reason) for reason in proposal.reasons or []],
        "can_undo": actions.can_undo(proposal),
    }


def _decide(
    request: HttpRequest, pk: int, operation: Callable[..., Proposal], done: str
) -> HttpResponse:
    proposal = Proposal.objects.filter(pk=pk).first()
    if proposal is None:
        messages.error(request, _("Not found: no proposal %(id)s.") % {"id": pk})
        return back(request, reverse("memory-pages:proposals"))
    try:
        operation(proposal, by=actor(request))
    except DomainError as exc:
        report_error(request, exc)
    else:
        messages.success(request, done % {"id": pk})
    return back(request, reverse("memory-pages:proposals"))


@owner_required
@require_POST
def approve_proposal(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(request, pk, actions.approve, _("Proposal %(id)s approved."))


@owner_required
@require_POST
def reject_proposal(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(request, pk, actions.reject, _("Proposal %(id)s rejected."))


@owner_required
@require_POST
def undo_proposal(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(request, pk, actions.undo, _("Proposal %(id)s undone."))
