"""The Notifications section of Settings (SPEC §7, §15): whether email and the webhook are
configured (from the environment), the last deliveries with their result, and a test sent
on the owner's request (POST, CSRF) through memory.jobs.notify — what the API calls too."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from memory.errors import DomainError
from memory.jobs import notify
from memory.manage.layout import actor, current_agent, owner_required, report_error

SHOWN = 10  # deliveries listed


def notifications_context() -> dict:
    return {"status": notify.status(), "deliveries": notify.last_deliveries(SHOWN)}


@owner_required
@require_POST
def send_test(request: HttpRequest) -> HttpResponse:
    try:
        done = notify.send_test(by=actor(request))
    except DomainError as exc:
        report_error(request, exc)
    else:
        for row in done:
            values = {"channel": row.get_channel_display(), "target": row.target}
            text = (
                _("Test sent by %(channel)s to %(target)s.")
                if row.ok
                else _("Test by %(channel)s to %(target)s not delivered: %(result)s")
            )
            (messages.success if row.ok else messages.error)(
                request, text % {**values, "result": row.result}
            )
    target = reverse("memory-pages:settings", args=[current_agent(request).pk])
    return redirect(f"{target}#notifications")
