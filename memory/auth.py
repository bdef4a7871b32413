"""Who is calling (SPEC §14): the owner (session or owner token) may do everything; an
agent token only reaches its own agent, the user scope's tools and its own script store."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from memory import owner
from memory.agents import get_agent_or_404
from memory.errors import Forbidden
from memory.models import Agent, ApiToken, hash_token


@dataclass(frozen=True)
class AgentPrincipal:
    """request.user for an agent token: not a Django user, never staff."""

    agent_id: str
    is_authenticated: bool = True
    is_staff: bool = False
    is_superuser: bool = False
    is_active: bool = True
    is_anonymous: bool = False

    def __str__(self) -> str:
        return f"agent:{self.agent_id}"


class TokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request: Request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header.")
        try:
            key = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid token header.") from None
        token = (
            ApiToken.objects.select_related("user", "agent")
            .filter(key_hash=hash_token(key))
            .first()
        )
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        if token.agent_id:
            return AgentPrincipal(token.agent_id), token
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive.")
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def agent_id_of(request: Request) -> str | None:
    """The agent a request speaks for, or None for the owner."""
    user = getattr(request, "user", None)
    return user.agent_id if isinstance(user, AgentPrincipal) else None


def is_owner(request: Request) -> bool:
    """The caller is the owner (memory.owner's one definition)."""
    return owner.is_owner(getattr(request, "user", None))


def actor_name(request: Request) -> str:
    """How a decision or write is attributed: the owner's username or `agent:<id>`."""
    agent_id = agent_id_of(request)
    if agent_id:
        return f"agent:{agent_id}"
    return getattr(request.user, "username", "") or "owner"


def require_agent_access(request: Request, agent_id: str) -> None:
    """403 unless the caller is the owner or the token of this very agent."""
    if is_owner(request):
        return
    if agent_id_of(request) != agent_id:
        raise Forbidden("This token may only reach its own agent.")


def agent_for(request: Request, agent_id: str) -> Agent:
    """The agent `agent_id` if the caller may reach it: 403 before 404, so another agent's
    token learns nothing, not even whether an id exists."""
    require_agent_access(request, agent_id)
    return get_agent_or_404(agent_id)


def require_owner(request: Request) -> None:
    if not is_owner(request):
        raise Forbidden("Only the owner may do this.")


class IsOwnerOrAgent(permissions.BasePermission):
    """Authenticated owner or agent. Views narrow further with require_agent_access /
    require_owner."""

    def has_permission(self, request: Request, view) -> bool:
        return is_owner(request) or agent_id_of(request) is not None


class IsOwner(permissions.BasePermission):
    def has_permission(self, request: Request, view) -> bool:
        return is_owner(request)


try:  # Describe the token scheme in the OpenAPI schema.
    from drf_spectacular.extensions import OpenApiAuthenticationExtension

    class TokenAuthenticationScheme(OpenApiAuthenticationExtension):
        target_class = "memory.auth.TokenAuthentication"
        name = "tokenAuth"

        def get_security_definition(self, auto_schema) -> dict:
            return {
                "type": "apiKey",
                "in": "header",
                "name": "Authorization",
                "description": "`Token <key>`: an owner token, or an agent token (own agent only).",
            }
except ImportError:  # pragma: no cover - drf-spectacular is a pinned dependency
    pass
