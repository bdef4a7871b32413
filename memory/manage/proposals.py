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
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from memory import disagreement
from memory.errors import Conflict, DomainError, InvalidInput
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
    """What a card shows: the kind in words, its age, the job's own words (`reason`,
    labelled as such), the code's reasons (a consolidation's beside the lines they name),
    per changed file the diff against the text it replaces (escaped by proposals.diff) —
    for lines to add, against the file as it is now —, what changed in a file since it was
    proposed, a proposed line that disagrees with one the file holds, and on the review
    page the forms to decide it in part, edited, or re-applied on the current text."""
    pending = proposal.status == Proposal.Status.PENDING
    appends = actions.appends(proposal)
    batch = len(actions.planned_writes(proposal)) > 1 or proposal.kind == "wiki_compile"
    now = actions.current_texts(proposal) if pending else {}
    if pending and appends:
        diffs = _append_diffs(proposal, now)
    else:
        diffs = diff.proposal_diff(proposal)
    stale = actions.stale_paths(proposal) if pending else set()
    for item in diffs:
        item.stale = item.path in stale and batch
    reasons = _card_reasons(proposal, diffs)  # before the diffs render: it marks their rows
    choose_pages = review and pending and batch
    choose_hunks = review and pending and proposal.kind == "memory_rewrite" and not stale
    card = {
        "p": proposal,
        "kind_label": kind_label(proposal.kind),
        "diff_html": diff.render_file_diffs(
            diffs, choose_pages=choose_pages, choose_hunks=choose_hunks
        ),
        "added_lines": diff.added_lines(proposal) if proposal.kind == "agent_memory" else None,
        "heading": (proposal.payload or {}).get("heading") or "",
        "reasons": reasons,
        "can_undo": actions.can_undo(proposal),
        "batch": batch,
        "appends": appends,
        "stale": sorted(stale),
        "changed_since": _changed_since(proposal, now, stale),
        "appended_since": pending and appends and _moved(proposal, now),
        "disagreements": _disagreements(proposal, now),
        "review": review,
        "choose_pages": choose_pages,
        "choose_hunks": choose_hunks,
        "siblings": [],
        "rule_offer": None,
        "can_reapply": _can_reapply(proposal, stale),
        "reapplied_as": actions.reapplied_as(proposal) if not pending else None,
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


def _append_diffs(proposal: Proposal, now: dict[str, str | None]) -> list:
    """Lines to add, as approving would add them: the file as it is now against it with
    the lines (under their heading)."""
    try:
        after = actions.writes_now(proposal)
    except DomainError:  # the lines no longer apply (a file that cannot be read as text)
        return diff.proposal_diff(proposal)
    return [diff.file_diff(path, now.get(path), text) for path, text in sorted(after.items())]


def _moved(proposal: Proposal, now: dict[str, str | None]) -> bool:
    previous = actions.previous_texts(proposal)
    return any(now.get(path) != previous.get(path) for path in now)


def _changed_since(proposal: Proposal, now: dict[str, str | None], stale: set[str]) -> list:
    """For each file of a pending replacing proposal that changed since it was proposed:
    the change, the text it was based on against the file now."""
    if not stale:
        return []
    previous = actions.previous_texts(proposal)
    return [
        {
            "path": path,
            "html": diff.render_file_diffs([diff.file_diff(path, previous.get(path), now[path])]),
        }
        for path in sorted(stale)
        if path in now
    ]


def _disagreements(proposal: Proposal, now: dict[str, str | None]) -> list:
    """A proposed MEMORY.md line beside an existing line it contradicts."""
    if proposal.kind != "agent_memory" or proposal.status != Proposal.Status.PENDING:
        return []
    text = next(iter(now.values()), None) or ""
    return disagreement.disagreements(diff.added_lines(proposal), text)


def _can_reapply(proposal: Proposal, stale: set[str]) -> bool:
    if actions.appends(proposal) or actions.reapplied_as(proposal) is not None:
        return False
    if proposal.status == Proposal.Status.PENDING:
        return bool(stale)
    if proposal.status != Proposal.Status.SUPERSEDED:
        return False
    return any(text is not None for text in actions.planned_writes(proposal).values())


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
        if operation is actions.undo and isinstance(exc, Conflict):
            _tell_how_to_go_back(request, exc)
    else:
        messages.success(request, done % {"id": pk})
        _tell_superseded(request, decided)
    return back(request, reverse("memory-pages:proposals"))


def _tell_how_to_go_back(request: HttpRequest, exc: Conflict) -> None:
    """After a refused undo: what to do instead — restore a version from the file's
    history, which keeps what was written since as a version of its own."""
    paths = exc.extra.get("paths") or []
    if not paths:
        return
    links = format_html_join(
        ", ",
        '<a href="{}?{}">{}</a>',
        ((reverse("memory-pages:history"), urlencode({"path": path}), path) for path in paths),
    )
    messages.info(
        request,
        format_html(
            "{} {}",
            _(
                "Undo only puts back a text nobody changed since. To go back anyway, "
                "restore an earlier version from the history (what was written since stays "
                "in the history too):"
            ),
            links,
        ),
    )


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
    """Approve with the owner's text: `lines` (one per line, and `heading`) for lines to
    add to MEMORY.md, else `text-<n>` for the file named by `path-<n>` — a missing text is
    refused (an edit never deletes a file)."""
    proposal = Proposal.objects.filter(pk=pk).select_related("agent").first()
    if proposal is None:
        raise Http404(_("No such proposal."))
    planned = actions.planned_writes(proposal)
    options: dict = {}
    try:
        if actions.appends(proposal) and "lines" in request.POST:
            options["lines"] = [line for line in request.POST["lines"].splitlines() if line.strip()]
            options["heading"] = request.POST.get("heading", "")
        else:
            options["texts"] = _edited_texts(request, pk, planned)
    except DomainError as exc:
        report_error(request, exc)
        return redirect("memory-pages:proposal", pk=pk)
    return _decide(
        request, pk, actions.approve, _("Proposal %(id)s approved as edited."), **options
    )


def _edited_texts(request: HttpRequest, pk: int, planned: dict) -> dict[str, str]:
    texts: dict[str, str] = {}
    for key, value in request.POST.items():
        if not key.startswith("path-"):
            continue
        number = key[len("path-") :]
        if value not in planned:
            raise InvalidInput(f"Proposal {pk} does not change {value}.")
        if f"text-{number}" not in request.POST:
            raise InvalidInput(
                f"The edited text of {value} is missing: give the whole text (an edit never "
                "deletes a file; reject the proposal instead)."
            )
        texts[value] = diff.joined_text(value, request.POST[f"text-{number}"], planned[value])
    if not texts:
        raise InvalidInput("`texts` names at least one file, each with its edited text.")
    return texts


@owner_required
def reapply_proposal(request: HttpRequest, pk: int) -> HttpResponse:
    """Re-apply a stale proposal on the current text (SPEC §7): GET shows, per file, what
    changed since it was proposed, the merge (its changes on the current text) and each
    conflicting change, the merged text to edit; POST approves it so (still pending) or
    proposes it anew (superseded), exactly once, through proposals.actions.reapply."""
    proposal = Proposal.objects.filter(pk=pk).select_related("agent", "run").first()
    if proposal is None:
        raise Http404(_("No such proposal."))
    if request.method == "POST":
        return _reapply(request, proposal)
    try:
        plan = actions.reapply_plan(proposal)
    except DomainError as exc:
        report_error(request, exc)
        return redirect("memory-pages:proposal", pk=pk)
    files = [_merge_view(item, n) for n, item in enumerate(plan)]
    return page(
        request,
        "memory/reapply.html",
        {"p": proposal, "kind_label": kind_label(proposal.kind), "files": files},
        tab="memory",
    )


def _merge_view(item: actions.FileMerge, n: int) -> dict:
    merged = item.merged
    return {
        "n": n,
        "path": item.path,
        "stale": item.stale,
        "seen": item.current_hash,
        "since_html": diff.render_file_diffs([diff.file_diff(item.path, item.base, item.current)]),
        "merged_html": diff.render_file_diffs(
            [diff.file_diff(item.path, item.current, merged.text if merged else item.proposed)]
        ),
        "merged": merged.text if merged else "",
        "applied": [hunk for hunk in merged.hunks if hunk.applied] if merged else [],
        "conflicts": merged.conflicts if merged else [],
    }


def _reapply(request: HttpRequest, proposal: Proposal) -> HttpResponse:
    seen: dict[str, str] = {}
    texts: dict[str, str] = {}
    for key, path in request.POST.items():
        if not key.startswith("path-"):
            continue
        number = key[len("path-") :]
        seen[path] = request.POST.get(f"seen-{number}", "")
        edited = request.POST.get(f"text-{number}")
        merged = request.POST.get(f"merged-{number}")
        if edited is not None and merged is not None:
            edited = edited.replace("\r\n", "\n").replace("\r", "\n")
            if edited != merged.replace("\r\n", "\n").replace("\r", "\n"):
                texts[path] = edited
    try:
        made, created = actions.reapply(proposal, by=actor(request), seen=seen, texts=texts or None)
    except DomainError as exc:
        report_error(request, exc)
        return redirect("memory-pages:reapply", pk=proposal.pk)
    if created:
        messages.success(
            request,
            _("Re-applied on the current text as proposal %(id)s: review and approve it.")
            % {"id": made.pk},
        )
    else:
        messages.success(
            request,
            _("Proposal %(id)s approved, re-applied on the current text.") % {"id": made.pk},
        )
    return redirect("memory-pages:proposal", pk=made.pk)


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
    outcomes = actions.decide_each(ids, approve_it=decision == "approve", by=actor(request))
    done = [outcome.id for outcome in outcomes if outcome.decided]
    refused = [(outcome.id, outcome.detail) for outcome in outcomes if not outcome.decided]
    superseded = [n for outcome in outcomes for n in outcome.superseded]
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
    if superseded:
        messages.warning(
            request,
            _(
                "Superseded: %(ids)s — based on the text this approval changed, they could "
                "no longer apply."
            )
            % {"ids": ", ".join(f"#{n}" for n in superseded)},
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
        rule = rules.rule_from(proposal, by=actor(request))
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
