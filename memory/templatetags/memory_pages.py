"""Template helpers of the management pages: times that carry their zone (SPEC §15), the
page's top right."""

from __future__ import annotations

import datetime as dt

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.translation import ngettext

from memory.clock import local_tz, zone_name
from memory.history import who as who_made
from memory.manage.wording import FILE_KINDS, KINDS, STATUSES, TRIGGERS, VALUE_KINDS, WHO, localize
from proposals.diff import kind_label as proposal_kind_label

register = template.Library()


@register.simple_tag(takes_context=True)
def top_right(context: template.Context, where: str) -> str:
    """The language switch and the account's links (memory/top_right.html) in a box for
    `where` the page shows them — beside the tabs, and in the narrow screen's menu —
    rendered once a page: it was a third of the layout's time."""
    html = context.render_context.get("top_right")
    if html is None:
        html = context.template.engine.get_template("memory/top_right.html").render(context)
        context.render_context["top_right"] = html
    return format_html('<div class="top-right top-right-{}">{}</div>', where, html)


@register.filter
def when(value: dt.datetime | None, fmt: str = "Y-m-d H:i") -> str:
    """A time in the owner's zone, with the zone: `2026-11-30 09:05 +07`, inside a
    <time> whose title names the zone (Asia/Ho_Chi_Minh)."""
    if not value:
        return "—"
    if timezone.is_naive(value):
        value = timezone.make_aware(value, local_tz())
    local = value.astimezone(local_tz())
    return format_html(
        '<time datetime="{}" title="{}">{} {}</time>',
        local.isoformat(timespec="seconds"),
        zone_name(),
        date_format(local, fmt),
        _offset(local),
    )


def _offset(local: dt.datetime) -> str:
    """The zone's short name when it has a real one (UTC, CET), else the offset (+07)."""
    name = local.tzname() or ""
    if name and name[0] not in "+-":
        return name
    offset = local.utcoffset() or dt.timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}" + (f":{rest:02d}" if rest else "")


@register.filter
def status_label(value: str) -> str:
    """A run's or a proposal's status in the page's language."""
    return str(STATUSES.get(value, value))


@register.filter
def kind_label(value: str) -> str:
    """A run's or a proposal's kind in the page's language."""
    return str(KINDS.get(value, value))


@register.filter
def proposal_kind(value: str) -> str:
    """A proposal's kind in words, as the admin and the API's readers see it
    (proposals.diff.kind_label, the one table of proposal kinds)."""
    return proposal_kind_label(value)


@register.filter
def who(version) -> str:
    """Who made a file version, in words: "owner alice", "agent master", "job
    job:nightly", "edited outside the app" (memory.history.who)."""
    kind, name = who_made(version)
    if not kind:
        return ""
    label = str(WHO.get(kind, kind))
    return f"{label} {name}".strip()


@register.filter
def value_kind(value: str) -> str:
    """What kind of value two lines disagree on (day, number, name), in the page's
    language."""
    return str(VALUE_KINDS.get(value, value))


@register.filter
def waited(value: dt.datetime | None) -> str:
    """How long ago `value` was, in the page's language: "5 minutes", "3 hours", "2 days"
    (the project's catalogue: Django's own Vietnamese one misses timesince's words)."""
    if not value:
        return "—"
    minutes = max(0, int((timezone.now() - value).total_seconds() // 60))
    if minutes < 60:
        return ngettext("%(n)s minute", "%(n)s minutes", minutes) % {"n": minutes}
    hours = minutes // 60
    if hours < 48:
        return ngettext("%(n)s hour", "%(n)s hours", hours) % {"n": hours}
    days = hours // 24
    return ngettext("%(n)s day", "%(n)s days", days) % {"n": days}


@register.filter
def file_kind(value: str) -> str:
    """A kind of memory file in words (the feed of what was remembered)."""
    return str(FILE_KINDS.get(value, value))


@register.filter
def trigger_label(value: str) -> str:
    return str(TRIGGERS.get(value, value))


@register.filter
def localized(value: str) -> str:
    """A sentence the code wrote (a run summary, a reason) in the page's language."""
    return localize(value)
