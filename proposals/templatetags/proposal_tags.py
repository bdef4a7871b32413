"""The pending-proposals badge for the admin index."""

from django import template

from proposals.actions import pending_count

register = template.Library()


@register.simple_tag
def pending_proposals() -> int:
    return pending_count()
