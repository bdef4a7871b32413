"""The Django admin as the approval queue (SPEC §15).

Pending proposals first; filters by status, kind and agent; a read-only change page with
the reasons, the source, the run and the escaped diff of what the proposal replaces;
approve / reject / undo as list actions and as buttons on the change page. Every decision
calls proposals.actions — the same code as the API — and a refused one (409) becomes an
admin error message, never a 500.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.http import HttpRequest, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from memory.errors import DomainError
from memory.owner import is_owner
from proposals import actions
from proposals.diff import kind_label, reason_text, render_proposal
from proposals.models import Proposal

OPERATIONS = {
    "approve": actions.approve,
    "reject": actions.reject,
    "undo": actions.undo,
}
DONE = {
    "approve": gettext_lazy("Proposal #%(id)s approved."),
    "reject": gettext_lazy("Proposal #%(id)s rejected."),
    "undo": gettext_lazy("Proposal #%(id)s undone."),
}
REFUSED = {
    "approve": gettext_lazy("Proposal #%(id)s not approved: %(error)s"),
    "reject": gettext_lazy("Proposal #%(id)s not rejected: %(error)s"),
    "undo": gettext_lazy("Proposal #%(id)s not undone: %(error)s"),
}


@admin.register(Proposal)
class ProposalAdmin(admin.ModelAdmin):
    change_form_template = "admin/proposals/proposal/change_form.html"
    list_display = [
        "id",
        "kind_in_words",
        "agent",
        "target",
        "status_label",
        "source",
        "created_at",
    ]
    list_display_links = ["id", "kind_in_words"]
    list_filter = ["status", "kind", "agent"]
    search_fields = ["target", "source", "kind", "agent__id", "reasons"]
    list_per_page = 50
    actions = ["approve_selected", "reject_selected", "undo_selected"]
    fieldsets = [
        (
            None,
            {"fields": ["kind", "status", "agent", "requested_by", "target", "source", "run_link"]},
        ),
        (gettext_lazy("Why"), {"fields": ["reasons_list", "model_words"]}),
        (gettext_lazy("What it changes"), {"fields": ["diff"]}),
        (
            gettext_lazy("Decision"),
            {"fields": ["created_at", "decided_at", "decided_by", "undone_at", "undone_by"]},
        ),
    ]
    readonly_fields = [
        "kind",
        "status",
        "agent",
        "requested_by",
        "target",
        "source",
        "run_link",
        "reasons_list",
        "model_words",
        "diff",
        "created_at",
        "decided_at",
        "decided_by",
        "undone_at",
        "undone_by",
    ]

    # --- queue ---------------------------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[Proposal]:
        # Pending first, then newest first: the queue is what needs a person.
        # (Built here rather than via super(), which orders before the annotation exists.)
        return (
            Proposal.objects.select_related("agent", "run")
            .annotate(
                pending_first=Case(
                    When(status=Proposal.Status.PENDING, then=Value(0)),
                    default=Value(1),
                    output_field=IntegerField(),
                )
            )
            .order_by(*self.get_ordering(request))
        )

    def get_ordering(self, request: HttpRequest) -> list[str]:
        return ["pending_first", "-created_at", "-id"]

    @admin.display(description=gettext_lazy("kind"), ordering="kind")
    def kind_in_words(self, obj: Proposal) -> str:
        return kind_label(obj.kind)

    @admin.display(description=gettext_lazy("status"), ordering="pending_first")
    def status_label(self, obj: Proposal) -> str:
        label = obj.get_status_display()
        if obj.status == Proposal.Status.APPROVED and obj.undone_at:
            return _("%(status)s, undone") % {"status": label}
        if obj.status == Proposal.Status.APPROVED and obj.applied_writes:
            return _("approved as changed")
        if obj.status == Proposal.Status.REJECTED and obj.repeats:
            return _("rejected (asked again %(n)s×)") % {"n": obj.repeats}
        return label

    # --- read-only change page ------------------------------------------------------------

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # proposals come from jobs, never from a form

    def has_change_permission(self, request: HttpRequest, obj: Proposal | None = None) -> bool:
        return False  # nothing on a proposal is edited by hand; decisions are actions

    def has_delete_permission(self, request: HttpRequest, obj: Proposal | None = None) -> bool:
        return False  # history keeps everything (SPEC §7)

    def has_decide_permission(self, request: HttpRequest) -> bool:
        return is_owner(request.user)

    @admin.display(description=gettext_lazy("run"))
    def run_link(self, obj: Proposal) -> str:
        if obj.run_id is None:
            return "—"
        return format_html(
            '<a href="{}">#{} {} ({})</a>',
            reverse("admin:memory_run_change", args=[obj.run_id]),
            obj.run_id,
            obj.run.kind,
            obj.run.status,
        )

    @admin.display(description=gettext_lazy("reasons"))
    def reasons_list(self, obj: Proposal) -> str:
        reasons = obj.reasons or []
        if not reasons:
            return "—"
        return format_html(
            "<ul class='proposal-reasons'>{}</ul>",
            format_html_join("", "<li>{}</li>", ((reason_text(r),) for r in reasons)),
        )

    @admin.display(description=gettext_lazy("the job's own words (not checked)"))
    def model_words(self, obj: Proposal) -> str:
        return obj.reason or "—"

    @admin.display(description=gettext_lazy("diff"))
    def diff(self, obj: Proposal) -> str:
        return render_proposal(obj)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        proposal = self.get_object(request, object_id)
        extra_context = {**(extra_context or {})}
        if proposal is not None and self.has_decide_permission(request):
            extra_context.update(
                can_decide=proposal.status == Proposal.Status.PENDING,
                can_undo=actions.can_undo(proposal),
                decide_urls={
                    name: reverse(f"admin:proposals_proposal_{name}", args=[proposal.pk])
                    for name in OPERATIONS
                },
            )
        return super().change_view(request, object_id, form_url, extra_context)

    # --- decisions ---------------------------------------------------------------------

    def get_urls(self):
        custom = [
            path(
                f"<int:proposal_id>/{name}/",
                self.admin_site.admin_view(self._decision_view(name)),
                name=f"proposals_proposal_{name}",
            )
            for name in OPERATIONS
        ]
        return custom + super().get_urls()

    def _decision_view(self, name: str):
        def view(request: HttpRequest, proposal_id: int):
            if request.method != "POST":
                return HttpResponseNotAllowed(["POST"])
            change_url = reverse("admin:proposals_proposal_change", args=[proposal_id])
            if not self.has_decide_permission(request):
                self.message_user(request, _("You may not decide proposals."), messages.ERROR)
                return HttpResponseRedirect(change_url)
            proposal = get_object_or_404(Proposal, pk=proposal_id)
            self._run(request, name, proposal)
            return HttpResponseRedirect(change_url)

        return view

    def _run(self, request: HttpRequest, name: str, proposal: Proposal) -> bool:
        operation = OPERATIONS[name]
        try:
            operation(proposal, by=request.user.get_username())
        except DomainError as error:
            self.message_user(
                request,
                REFUSED[name] % {"id": proposal.pk, "error": error.message},
                messages.ERROR,
            )
            return False
        self.message_user(request, DONE[name] % {"id": proposal.pk}, messages.SUCCESS)
        return True

    def _run_selected(self, request: HttpRequest, queryset: QuerySet[Proposal], name: str):
        # Oldest first, so two proposals on one file apply in the order they were made;
        # each exactly once through proposals.actions, each refusal (409) reported alone.
        if name in ("approve", "reject"):
            ids = list(queryset.values_list("pk", flat=True))
            done, refused = actions.decide_many(
                ids, approve_it=name == "approve", by=request.user.get_username()
            )
            for number in done:
                self.message_user(request, DONE[name] % {"id": number}, messages.SUCCESS)
            for number, why in refused:
                self.message_user(
                    request, REFUSED[name] % {"id": number, "error": why}, messages.ERROR
                )
            return
        for proposal in queryset.order_by("created_at", "id"):
            self._run(request, name, proposal)

    @admin.action(description=gettext_lazy("Approve selected proposals"), permissions=["decide"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Proposal]) -> None:
        self._run_selected(request, queryset, "approve")

    @admin.action(description=gettext_lazy("Reject selected proposals"), permissions=["decide"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[Proposal]) -> None:
        self._run_selected(request, queryset, "reject")

    @admin.action(
        description=gettext_lazy("Undo selected (applied) proposals"), permissions=["decide"]
    )
    def undo_selected(self, request: HttpRequest, queryset: QuerySet[Proposal]) -> None:
        self._run_selected(request, queryset, "undo")
