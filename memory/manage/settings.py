"""The Settings tab (SPEC §15): per agent, what only the admin or the API could set before —
the nightly consolidation (a cron, with presets, its meaning in plain words and the next
runs in the owner's zone), autonomous on or off with what it means, the name — plus a new
agent, the model in use, and how to connect an agent (a token and the MCP snippet).

Every change goes through the API's own serializers (AgentSerializer, which applies
memory.jobs.schedules.validate_cron) and memory.agents.create_agent, so a cron the page
accepts is exactly one the API and the schedule accept.
"""

from __future__ import annotations

import datetime as dt
import sys

from cron_descriptor import ExpressionDescriptor, Options
from croniter import croniter
from django import forms
from django.conf import settings as django_settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import translation
from django.utils.html import escape
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST
from django_q.models import Schedule

from memory.agents import create_agent as create_agent_operation
from memory.api.serializers import AgentSerializer, AgentUpdateSerializer
from memory.clock import local_now
from memory.errors import DomainError, InvalidInput
from memory.jobs.schedules import schedule_name, validate_cron
from memory.manage.forms import attach_error
from memory.manage.layout import agent_or_404, current_agent, owner_required, page
from memory.manage.notifications import notifications_context
from memory.models import Agent, ApiToken

CUSTOM = "custom"
PRESETS = [
    ("", gettext_lazy("Off: no nightly consolidation")),
    ("0 3 * * *", gettext_lazy("Every night at 03:00")),
    ("30 1 * * *", gettext_lazy("Every night at 01:30")),
    ("0 22 * * 1-5", gettext_lazy("Weekdays at 22:00")),
    ("0 4 * * 0", gettext_lazy("Every Sunday at 04:00")),
    (CUSTOM, gettext_lazy("Custom (cron, below)")),
]


class AgentSettingsForm(forms.Form):
    name = forms.CharField(label=gettext_lazy("Name"), max_length=200)
    autonomous = forms.BooleanField(label=gettext_lazy("Autonomous"), required=False)
    preset = forms.ChoiceField(
        label=gettext_lazy("Nightly consolidation"),
        choices=PRESETS,
        required=False,
        widget=forms.RadioSelect,
    )
    cron = forms.CharField(
        label=gettext_lazy("Cron expression"),
        required=False,
        max_length=100,
        help_text=gettext_lazy(
            "Five fields: minute hour day month weekday, in the owner's time zone; "
            "e.g. 0 3 * * * is every night at 03:00."
        ),
    )

    def chosen_cron(self) -> str:
        """The cron the form asks for: the preset, or the typed one for "custom"."""
        data = self.cleaned_data
        preset = data.get("preset") or ""
        return (data.get("cron") or "").strip() if preset == CUSTOM else preset


class NewAgentForm(forms.Form):
    prefix = "new"  # beside the settings form on one page: ids stay unique
    id = forms.CharField(
        label=gettext_lazy("Id"),
        max_length=64,
        # Django puts help text in the page unescaped: escape it, or `<id>` is a tag.
        help_text=escape(
            gettext_lazy(
                "lowercase letters, digits and hyphens; it names the agent's directory "
                "(agents/<id>/) and never changes"
            )
        ),
    )
    name = forms.CharField(label=gettext_lazy("Name"), max_length=200)


def _initial(agent: Agent) -> dict:
    cron = agent.memory_consolidate or ""
    preset = cron if cron in {value for value, _label in PRESETS} else CUSTOM
    return {"name": agent.name, "autonomous": agent.autonomous, "preset": preset, "cron": cron}


def describe_cron(expr: str, *, count: int = 3) -> dict | None:
    """A cron in plain words (cron-descriptor, in the page's language) and its next runs
    in the owner's zone; None for no schedule. Raises InvalidInput for a bad cron."""
    expr = validate_cron(expr)
    if not expr:
        return None

    options = Options()
    options.use_24hour_time_format = True
    options.locale_code = (
        "vi_VN" if (translation.get_language() or "").startswith("vi") else "en_US"
    )
    words = ExpressionDescriptor(expr, options).get_description()
    base = local_now()
    runs = croniter(expr, base)
    return {"words": words, "next": [runs.get_next(dt.datetime) for _ in range(count)]}


def _render(
    request: HttpRequest,
    agent: Agent,
    form: AgentSettingsForm,
    *,
    preview: dict | None = None,
    token: str = "",
    new_agent_form: NewAgentForm | None = None,
    status: int = 200,
) -> HttpResponse:
    try:
        saved = describe_cron(agent.memory_consolidate or "")
    except InvalidInput:
        saved = None
    schedule = Schedule.objects.filter(name=schedule_name(agent.pk)).first()
    mcp_url = request.build_absolute_uri("/mcp")
    return page(
        request,
        "memory/settings.html",
        {
            "form": form,
            "saved": saved,
            "preview": preview,
            "schedule": schedule,
            "new_agent_form": new_agent_form or NewAgentForm(),
            "token": token,
            "token_count": ApiToken.objects.filter(agent=agent).count(),
            "mcp_url": mcp_url,
            "repo_dir": str(django_settings.BASE_DIR),
            "python": sys.executable,
            "home_dir": django_settings.MY_AGENT_HOME,
            "notifications": notifications_context(),
        },
        tab="settings",
        agent=agent,
        switch="memory-pages:settings",
        status=status,
    )


@owner_required
def settings_current(request: HttpRequest) -> HttpResponse:
    return redirect("memory-pages:settings", agent_id=current_agent(request).pk)


@owner_required
def agent_settings(request: HttpRequest, agent_id: str) -> HttpResponse:
    agent = agent_or_404(request, agent_id)
    if request.method != "POST":
        return _render(request, agent, AgentSettingsForm(initial=_initial(agent)))
    form = AgentSettingsForm(request.POST)
    if not form.is_valid():
        return _render(request, agent, form, status=422)
    cron = form.chosen_cron()
    if "preview" in request.POST:  # show what the cron means; nothing is saved
        try:
            preview = describe_cron(cron) or {"off": True}
        except InvalidInput as exc:
            attach_error(form, exc, default_field="cron")
            return _render(request, agent, form, status=422)
        return _render(request, agent, form, preview=preview)
    serializer = AgentUpdateSerializer(
        agent,
        data={
            "name": form.cleaned_data["name"],
            "autonomous": form.cleaned_data["autonomous"],
            "memory_consolidate": cron,
        },
        partial=True,
    )
    if not serializer.is_valid():
        for field, errors in serializer.errors.items():
            target = {"memory_consolidate": "cron"}.get(field, field)
            for error in errors:
                form.add_error(target if target in form.fields else None, str(error))
        return _render(request, agent, form, status=422)
    serializer.save()
    messages.success(request, _("Settings of %(name)s saved.") % {"name": agent.name})
    return redirect("memory-pages:settings", agent_id=agent.pk)


@owner_required
@require_POST
def create_agent(request: HttpRequest) -> HttpResponse:
    form = NewAgentForm(request.POST)
    agent = current_agent(request)
    if form.is_valid():
        serializer = AgentSerializer(data=form.cleaned_data)
        if serializer.is_valid():
            try:
                created = create_agent_operation(**serializer.validated_data)
            except DomainError as exc:
                attach_error(form, exc)
            else:
                messages.success(
                    request,
                    _("Agent %(id)s created, with its directory %(dir)s.")
                    % {"id": created.pk, "dir": f"agents/{created.pk}/"},
                )
                return redirect("memory-pages:settings", agent_id=created.pk)
        else:
            for field, errors in serializer.errors.items():
                for error in errors:
                    form.add_error(field if field in form.fields else None, str(error))
    return _render(
        request,
        agent,
        AgentSettingsForm(initial=_initial(agent)),
        new_agent_form=form,
        status=422,
    )


@owner_required
@require_POST
def issue_token(request: HttpRequest, agent_id: str) -> HttpResponse:
    """A new agent token, shown once on the answer to this POST (only its hash is kept)."""
    agent = agent_or_404(request, agent_id)
    _token, key = ApiToken.issue(agent=agent)
    return _render(request, agent, AgentSettingsForm(initial=_initial(agent)), token=key)
