"""Who the owner is — the one definition the API, the pages and the admin use (SPEC §14,
§15): an active, signed-in superuser. Agent tokens are never the owner, and a Django
account that is merely staff, or merely signed in, is not either."""

from __future__ import annotations


def is_owner(user: object) -> bool:
    """True for the owner's account (duck-typed, so an agent principal or AnonymousUser
    is simply not the owner)."""
    return bool(
        getattr(user, "is_authenticated", False)
        and getattr(user, "is_active", False)
        and getattr(user, "is_superuser", False)
    )
