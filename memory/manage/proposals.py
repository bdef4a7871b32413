"""A proposal's card and the decisions of the Memory tab (SPEC §7, §15): readable diffs,
approve / reject / undo through proposals.actions, like the API and the admin — also in
part (pages of a batch, hunks of a rewrite), edited before approving, and several at once
(each exactly once, each with its own 409). The queue that lists them is
memory/manage/queue.py."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from memory import notes
from memory.errors import DomainError, InvalidInput
from memory.manage.layout import actor, back, owner_required, page, report_error
from proposals import actions, diff, rules
from proposals.diff import kind_label, reason_text
from proposals.models import Proposal, StandingRule

SIBLINGS = 10  # sibling links a card shows


@owner_required
def proposal_detail(request: HttpRequest, pk: int) -> HttpResponse:
    proposal = Proposal.objects.filter(pk=pk).select_related("agent", "run").first()
    if proposal is None:
        raise Http404(_("No such proposal."))
    return page(
        request,
        "memory/proposal.html",
        {"card": proposal_card(proposal, review=True)},
        tab="memory",
    )


def proposal_card(proposal: Proposal, *, review: bool = False) -> dict:
    """What a card shows: the kind in words, its age, reasons (a consolidation's beside the
    lines they name), per changed file the diff against the text it replaces (escaped by
    proposals.diff), and on the review page the forms to decide it in part or edited."""
    pending = proposal.status == Proposal.Status.PENDING
    batch = len(actions.planned_writes(proposal)) > 1 or proposal.kind == "wiki_compile"
    diffs = diff.proposal_diff(proposal)
    stale = actions.stale_paths(proposal) if pending and batch else set()
    for item in diffs:
        item.stale = item.path in stale
    reasons = _card_reasons(proposal, diffs)  # before the diffs render: it marks their rows
    choose_pages = review and pending and batch
    choose_hunks = review and pending and proposal.kind == "memory_rewrite"
    card = {
        "p": proposal,
        "kind_label": kind_label(proposal.kind),
        "diff_html": diff.render_file_diffs(
            diffs, choose_pages=choose_pages, choose_hunks=choose_hunks
        ),
        "added_lines": diff.added_lines(proposal) if proposal.kind == "agent_memory" else None,
        "reasons": reasons,
        "can_undo": actions.can_undo(proposal),
        "batch": batch,
        "stale": sorted(stale),
        "review": review,
        "choose_pages": choose_pages,
        "choose_hunks": choose_hunks,
        "siblings": [],
        "rule_offer": None,
    }
    if pending:
        card.update(_pending_parts(proposal, review=review))
    if proposal.applied_writes or proposal.decision:
        card["applied_html"] = (
            diff.render_file_diffs(diff.proposal_diff(proposal, applied=True))
            if proposal.applied_writes
            else None
        )
        card["decision"] = proposal.decision or {}
    return card


def _card_reasons(proposal: Proposal, diffs: list) -> list:
    """The reasons in words; a consolidation's structured reasons are attached to the
    lines of `diffs` they name, and only those left over are listed."""
    items = (proposal.payload or {}).get("reason_items") or []
    if items:
        return diff.attach_reasons(diffs, items)
    return [reason_text(reason) for reason in proposal.reasons or []]


def _pending_parts(proposal: Proposal, *, review: bool) -> dict:
    """What only a pending card has: the other pending proposals on its file, the
    standing rule it could start, and on the review page the texts to edit."""
    others = Proposal.objects.filter(
        status=Proposal.Status.PENDING, target=proposal.target
    ).exclude(pk=proposal.pk)
    siblings = list(others.order_by("created_at", "id").values_list("pk", flat=True)[:SIBLINGS])
    parts: dict = {
        # At most SIBLINGS links, then "and N more" (a file may have hundreds waiting).
        "siblings": siblings,
        "siblings_more": others.count() - len(siblings) if len(siblings) == SIBLINGS else 0,
        "rule_offer": rules.offer_for(proposal),
    }
    if review:
        parts["edits"] = [
            {"n": n, "path": path, "text": diff.editable_text(path, text)}
            for n, (path, text) in enumerate(sorted(actions.planned_writes(proposal).items()))
            if text is not None
        ]
    return parts


def _decide(
    request: HttpRequest, pk: int, operation: Callable[..., Proposal], done: str, **options
) -> HttpResponse:
    proposal = Proposal.objects.filter(pk=pk).first()
    if proposal is None:
        messages.error(request, _("Not found: no proposal %(id)s.") % {"id": pk})
        return back(request, reverse("memory-pages:proposals"))
    try:
        decided = operation(proposal, by=actor(request), **options)
    except DomainError as exc:
        report_error(request, exc)
    else:
        messages.success(request, done % {"id": pk})
        _tell_superseded(request, decided)
    return back(request, reverse("memory-pages:proposals"))


def _tell_superseded(request: HttpRequest, proposal: Proposal) -> None:
    others = (proposal.decision or {}).get("superseded") or []
    if others:
        messages.warning(
            request,
            _(
                "Superseded: %(ids)s — based on the text this approval changed, they could "
                "no longer apply."
            )
            % {"ids": ", ".join(f"#{n}" for n in others)},
        )
    pages = (proposal.decision or {}).get("superseded_pages") or []
    if pages:
        messages.warning(
            request,
            _("Left out as superseded (changed since): %(paths)s") % {"paths": ", ".join(pages)},
        )


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


def parse_hunks(values: list[str]) -> dict[str, list[list[int]]]:
    """`path|i1:i2:j1:j2` checkbox values as approve()'s `hunks`. InvalidInput otherwise."""
    kept: dict[str, list[list[int]]] = {}
    for value in values:
        path, sep, numbers = value.rpartition("|")
        parts = numbers.split(":")
        if not sep or len(parts) != 4 or not all(part.isdigit() for part in parts):
            raise InvalidInput(f"Not a hunk: {value!r}.")
        kept.setdefault(path, []).append([int(part) for part in parts])
    return kept


@owner_required
@require_POST
def approve_partial(request: HttpRequest, pk: int) -> HttpResponse:
    """Apply part of a proposal: the checked pages of a batch (`page`), the kept changes of
    a rewrite (`hunk`; none kept is the old text), `skip_stale` to apply the pages that did
    not change and mark the others superseded."""
    proposal = Proposal.objects.filter(pk=pk).first()
    if proposal is None:
        raise Http404(_("No such proposal."))
    options: dict = {"skip_stale": request.POST.get("skip_stale") == "1"}
    try:
        if request.POST.get("mode") == "hunks":
            kept = parse_hunks(request.POST.getlist("hunk"))
            options["hunks"] = {path: kept.get(path, []) for path in diff.hunks_of(proposal)}
        elif request.POST.get("mode") == "pages":
            options["paths"] = request.POST.getlist("page")
    except DomainError as exc:
        report_error(request, exc)
        return redirect("memory-pages:proposal", pk=pk)
    return _decide(
        request, pk, actions.approve, _("Proposal %(id)s approved as chosen."), **options
    )


@owner_required
@require_POST
def approve_edited(request: HttpRequest, pk: int) -> HttpResponse:
    """Approve with the owner's text: `lines` (one per line) for lines to add to MEMORY.md,
    else `text-<n>` for the file named by `path-<n>`."""
    proposal = Proposal.objects.filter(pk=pk).select_related("agent").first()
    if proposal is None:
        raise Http404(_("No such proposal."))
    planned = actions.planned_writes(proposal)
    texts: dict[str, str | None] = {}
    try:
        if proposal.kind == "agent_memory" and "lines" in request.POST:
            lines = [line for line in request.POST["lines"].splitlines() if line.strip()]
            (path,) = planned
            previous = actions.previous_texts(proposal)[path] or ""
            texts[path] = notes.memory_with_lines(previous, lines)
        else:
            for key, value in request.POST.items():
                if not key.startswith("path-"):
                    continue
                number = key[len("path-") :]
                if value not in planned:
                    raise InvalidInput(f"Proposal {pk} does not change {value}.")
                texts[value] = diff.joined_text(
                    value, request.POST.get(f"text-{number}", ""), planned[value]
                )
    except DomainError as exc:
        report_error(request, exc)
        return redirect("memory-pages:proposal", pk=pk)
    return _decide(
        request, pk, actions.approve, _("Proposal %(id)s approved as edited."), texts=texts
    )


@owner_required
@require_POST
def bulk_decide(request: HttpRequest) -> HttpResponse:
    """Approve or reject the checked proposals (`ids`), oldest first, each exactly once
    through proposals.actions; every refusal (409) is reported on its own."""
    decision = request.POST.get("decision")
    if decision not in ("approve", "reject"):
        messages.error(request, _("Not decided: choose approve or reject."))
        return redirect("memory-pages:proposals")
    ids = [int(value) for value in request.POST.getlist("ids") if value.isdigit()]
    if not ids:
        messages.error(request, _("Not decided: no proposal was selected."))
        return redirect("memory-pages:proposals")
    done, refused = actions.decide_many(ids, approve_it=decision == "approve", by=actor(request))
    if done:
        text = (
            ngettext(
                "%(count)s proposal approved: %(ids)s.",
                "%(count)s proposals approved: %(ids)s.",
                len(done),
            )
            if decision == "approve"
            else ngettext(
                "%(count)s proposal rejected: %(ids)s.",
                "%(count)s proposals rejected: %(ids)s.",
                len(done),
            )
        )
        messages.success(
            request, text % {"count": len(done), "ids": ", ".join(f"#{n}" for n in done)}
        )
    for number, error in refused:
        messages.error(request, _("#%(id)s not decided: %(why)s") % {"id": number, "why": error})
    return redirect("memory-pages:proposals")


# --- standing rules ------------------------------------------------------------------------


@owner_required
@require_POST
def create_rule(request: HttpRequest, pk: int) -> HttpResponse:
    """Make a standing rule of a proposal's shape (kind, source, agent) — only when the
    owner asks; the card offers it after N identical approvals."""
    proposal = Proposal.objects.filter(pk=pk).first()
    if proposal is None:
        raise Http404(_("No such proposal."))
    try:
        rule = rules.create_rule(
            kind=proposal.kind, source=proposal.source, agent=proposal.agent, by=actor(request)
        )
    except DomainError as exc:
        report_error(request, exc)
    else:
        messages.success(
            request,
            _("Standing rule #%(id)s: %(kind)s from %(source)s now apply at once.")
            % {"id": rule.pk, "kind": kind_label(rule.kind), "source": rule.source},
        )
    return back(request, reverse("memory-pages:proposals"))


@owner_required
@require_POST
def revoke_rule(request: HttpRequest, rule_id: int) -> HttpResponse:
    rule = StandingRule.objects.filter(pk=rule_id).first()
    if rule is None:
        raise Http404(_("No such rule."))
    try:
        rules.revoke_rule(rule, by=actor(request))
    except DomainError as exc:
        report_error(request, exc)
    else:
        messages.success(request, _("Standing rule #%(id)s revoked.") % {"id": rule_id})
    return back(request, reverse("memory-pages:proposals"))
