"""Who is calling (SPEC §14): the owner (session or owner token) may do everything; an
agent token only reaches its own agent, the user scope's tools and its own script store.

`caller_of(request)` is what a write asks for its presence (memory.presence): the agent
token's job, if it is a job token, and the `X-Memory-Source` header. REST, the MCP server
and the memory-tool endpoint all authenticate through `token_for_key`."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.utils import timezone
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from memory import lookups, owner
from memory.agents import get_agent_or_404
from memory.errors import Forbidden
from memory.models import Agent, ApiToken, hash_token
from memory.presence import SOURCE_HEADER, Caller, caller_with_header

# `Token <key>` is this API's own scheme; `Bearer <key>` is what MCP clients and most
# runtimes send. Both carry the same key.
KEYWORDS = ("token", "bearer")
# How often a token's last use is written: at most once a minute.
LAST_USED_EVERY = dt.timedelta(minutes=1)


@dataclass(frozen=True)
class AgentPrincipal:
    """request.user for an agent token: not a Django user, never staff. `job` is set for
    a job token."""

    agent_id: str
    job: str | None = None
    is_authenticated: bool = True
    is_staff: bool = False
    is_superuser: bool = False
    is_active: bool = True
    is_anonymous: bool = False

    def __str__(self) -> str:
        return f"agent:{self.agent_id}"


class BadCredential(Exception):
    """An Authorization header that names a scheme of ours but is not a valid key."""


REALM = "agent-memory"
# What a client without a working token is told to do (SPEC §14): the 401's JSON and its
# `WWW-Authenticate` name the fix, so a runtime that shows only the header (or tries OAuth
# discovery, which this server does not offer) still tells its user what to set.
HOW_TO_CONNECT = (
    "Send Authorization: Bearer <agent token>. Make one with "
    "`manage.py memory_token agent <id>` or on the agent's Settings page; OpenClaw and the "
    "README's snippets read it from MEMORY_AGENT_TOKEN."
)


def unauthorized(reason: str, key: str | None = None) -> tuple[dict, str]:
    """The JSON body and the `WWW-Authenticate` value of a 401 (RFC 6750's Bearer
    challenge, ASCII only): `reason` says what was wrong, the rest how to fix it. A key
    that is a placeholder left unfilled (`${MEMORY_AGENT_TOKEN}`, `<agent token>`) says so."""
    if key is not None and (key.startswith(("${", "$", "<")) or not key.strip()):
        reason = f"The token is the placeholder {key[:40]!r}: its variable was not filled in."
    description = f"{reason} {HOW_TO_CONNECT}"
    quoted = description.replace("\\", "").replace('"', "'").encode("ascii", "replace").decode()
    header = f'Bearer realm="{REALM}", error="invalid_token", error_description="{quoted}"'
    body = {"error": "invalid_token", "error_description": description, "detail": description}
    return body, header


def key_from_header(value: bytes | str) -> str | None:
    """The key of `Token <key>` or `Bearer <key>`; None for no header or another scheme.
    Raises BadCredential for a malformed header of ours."""
    if isinstance(value, str):
        value = value.encode("latin-1", errors="replace")
    parts = value.split()
    if not parts or parts[0].lower().decode("latin-1") not in KEYWORDS:
        return None
    if len(parts) == 1:
        raise BadCredential("The Authorization header has no token after its scheme.")
    if len(parts) != 2:
        raise BadCredential("Invalid token header.")
    try:
        return parts[1].decode()
    except UnicodeError:
        raise BadCredential("Invalid token header.") from None


def token_for_key(key: str) -> ApiToken:
    """The active token with this key (its last use recorded, to LAST_USED_EVERY), with its
    owner's account for an owner token. Raises BadCredential for an unknown key or an
    inactive owner."""
    token = lookups.get_by(ApiToken, "key_hash", hash_token(key))
    if token is None:
        raise BadCredential("Invalid token.")
    if token.user_id is not None:
        user = lookups.get_by(get_user_model(), "pk", token.user_id)
        if user is None or not user.is_active:
            raise BadCredential("User inactive.")
        token.user = user
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        # A write per request would make every read a database write (on SQLite, one
        # writer at a time for the whole host): the last use is kept to the minute.
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


class AccountBackend(ModelBackend):
    """Django's model backend (passwords, permissions), whose `get_user` — every page asks
    it for the signed-in account — reads the account through memory.lookups."""

    def get_user(self, user_id):
        user = lookups.get_by(get_user_model(), "pk", user_id)
        return user if user is not None and self.user_can_authenticate(user) else None


class TokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request: Request):
        key = None
        try:
            key = key_from_header(authentication.get_authorization_header(request))
            if key is None:
                return None
            token = token_for_key(key)
        except BadCredential as error:
            body, _ = unauthorized(str(error), key)
            raise exceptions.AuthenticationFailed(body["detail"]) from None
        if token.agent_id:
            return AgentPrincipal(token.agent_id, job=token.job or None), token
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        """The 401's challenge: a Bearer challenge naming the fix (`Token <key>` works
        too)."""
        return unauthorized("No valid token.")[1]


def agent_id_of(request: Request) -> str | None:
    """The agent a request speaks for, or None for the owner."""
    user = getattr(request, "user", None)
    return user.agent_id if isinstance(user, AgentPrincipal) else None


def caller_of(request: Request) -> Caller:
    """The presence of whoever makes this request (memory.presence): an agent token's id
    and job, and the `X-Memory-Source` header (422 when it is not a valid source)."""
    user = getattr(request, "user", None)
    agent = user if isinstance(user, AgentPrincipal) else None
    return caller_with_header(
        agent_id=agent.agent_id if agent else None,
        job=agent.job if agent else None,
        header=request.headers.get(SOURCE_HEADER),
    )


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
                "description": (
                    "`Token <key>` or `Bearer <key>`: an owner token, or an agent token "
                    "(own agent only; a job token makes every write a job write)."
                ),
            }
except ImportError:  # pragma: no cover - drf-spectacular is a pinned dependency
    pass


def attribution_of(request) -> dict:
    """Who changes files while `request` is answered, for their history (memory.history):
    the actor (`agent:<id>`, `job:<job>` for a job token, or the owner's username), the
    interface, and the source (a job token's job, else `X-Memory-Source`, else `web` for
    the pages and admin, `http` for the API). Called when a change happens — after DRF
    has authenticated, which sets the Django request's user too."""
    user = getattr(request, "user", None)
    path = getattr(request, "path", "")
    if path.startswith("/admin/"):
        via, default_source = "admin", "web"
    elif path.startswith("/manage/"):
        via, default_source = "pages", "web"
    else:
        via, default_source = "api", "http"
    job = None
    if isinstance(user, AgentPrincipal):
        job = user.job
        actor = f"job:{user.job}" if user.job else f"agent:{user.agent_id}"
    elif getattr(user, "is_authenticated", False):
        actor = user.get_username() or "owner"
    else:
        actor = ""
    try:
        caller = caller_with_header(
            agent_id=None, job=job, header=request.headers.get(SOURCE_HEADER)
        )
        source = caller.source(default=default_source)
    except Exception:  # a bad header is answered 422 by the view; history just says so
        source = default_source
    return {"actor": actor, "via": via, "source": source}
