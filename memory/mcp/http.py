"""MCP over Streamable HTTP at `/mcp`, stateless, for agent tokens.

`mcp_app()` is an ASGI app: it authenticates `Authorization: Bearer <key>` (or `Token
<key>`) with the same code as the REST API (memory.auth), then hands the request to the
SDK's Streamable HTTP transport. No token or a bad one → 401 with `WWW-Authenticate:
Bearer`; an owner token → 403 (an MCP connection speaks for one agent); a bad
`X-Memory-Source` or `X-Memory-Runtime` → 422. `X-Memory-Runtime: openclaw` names the
runtime, so memory_context leaves out what OpenClaw injects itself (SPEC §4.2). The caller
(agent, job, channel, runtime) rides in the request's scope to the server's handlers
(memory.mcp.server.caller_of).

Stateless: the 2026-07-28 revision has no session at all, and older clients get a fresh
session per request (`stateless_http=True`), so any web worker answers any request. The
host check against DNS rebinding follows ALLOWED_HOSTS.

The app's lifespan must be entered by whoever serves it (memoryproject/asgi.py does).
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.transport_security import TransportSecuritySettings

from memory.mcp.server import build_server, current_caller

PATH = "/mcp"


def _security() -> TransportSecuritySettings:
    hosts = [host.strip() for host in settings.ALLOWED_HOSTS if host.strip()]
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed_hosts, origins = [], []
    for host in hosts:
        host = host.lstrip(".")  # Django's ".example.com" (subdomains) names the domain here
        allowed_hosts += [host, f"{host}:*"]
        origins += [f"http://{host}", f"https://{host}", f"http://{host}:*", f"https://{host}:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts, allowed_origins=origins
    )


async def _answer(send, status: int, body: dict, headers: list[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def _authenticate(
    authorization: str | None, source_header: str | None, runtime_header: str | None = None
):
    """(caller, None) or (None, (status, body)). Runs the REST API's token check; the
    `X-Memory-Source` and `X-Memory-Runtime` headers are checked (422 when bad)."""
    from dataclasses import replace

    from memory.auth import BadCredential, key_from_header, token_for_key
    from memory.context import clean_runtime
    from memory.errors import InvalidInput
    from memory.presence import caller_with_header

    try:
        key = key_from_header(authorization or "")
        if key is None:
            return None, (401, {"error": "invalid_token", "error_description": "Token required."})
        token = token_for_key(key)
    except BadCredential as error:
        return None, (401, {"error": "invalid_token", "error_description": str(error)})
    if not token.agent_id:
        return None, (
            403,
            {
                "error": "insufficient_scope",
                "error_description": "An MCP connection speaks for one agent: use an agent "
                "token (manage.py memory_token agent <id>).",
            },
        )
    try:
        caller = caller_with_header(
            agent_id=token.agent_id, job=token.job or None, header=source_header
        )
        caller = replace(caller, runtime=clean_runtime(runtime_header))
    except InvalidInput as error:
        return None, (422, {"error": "invalid_request", "error_description": error.message})
    return caller, None


def _auth_in_thread(
    authorization: str | None, source_header: str | None, runtime_header: str | None
):
    from django.db import close_old_connections

    close_old_connections()
    try:
        return _authenticate(authorization, source_header, runtime_header)
    finally:
        close_old_connections()


class McpApp:
    """The authenticated `/mcp` endpoint (an ASGI app, with the transport's lifespan)."""

    def __init__(self) -> None:
        self.server = build_server()
        self.transport = self.server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            transport_security=_security(),
            max_request_body_size=settings.MEMORY_MAX_BODY_BYTES,
        )

    @asynccontextmanager
    async def lifespan(self):
        """Run the SDK's session manager (it owns each request's background work)."""
        async with self.server.session_manager.run():
            yield

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.transport(scope, receive, send)
            return
        headers = {name.decode("latin-1").lower(): value for name, value in scope["headers"]}
        authorization = headers.get("authorization")
        source = headers.get("x-memory-source")
        runtime = headers.get("x-memory-runtime")
        caller, refusal = await sync_to_async(_auth_in_thread, thread_sensitive=True)(
            *(
                value.decode("latin-1") if value is not None else None
                for value in (authorization, source, runtime)
            )
        )
        if refusal is not None:
            status, body = refusal
            extra = [(b"www-authenticate", b'Bearer realm="agent-memory"')] if status == 401 else []
            await _answer(send, status, body, extra)
            return
        scope = {**scope, "memory.caller": caller}
        token = current_caller.set(caller)
        try:
            await self.transport(scope, receive, send)
        finally:
            current_caller.reset(token)


def mcp_app() -> McpApp:
    return McpApp()
