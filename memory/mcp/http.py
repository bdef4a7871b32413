"""MCP over Streamable HTTP at `/mcp`, stateless, for agent tokens.

`mcp_app()` is an ASGI app: it authenticates `Authorization: Bearer <key>` (or `Token
<key>`) with the same code as the REST API (memory.auth), then hands the request to the
SDK's Streamable HTTP transport. No token or a bad one → 401 with a JSON body and a
`WWW-Authenticate: Bearer …` challenge that both name the fix (memory.auth.unauthorized);
an owner token → 403 (an MCP connection speaks for one agent); a bad
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
from dataclasses import replace

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from mcp.server.transport_security import TransportSecuritySettings

from memory.auth import BadCredential, key_from_header, token_for_key, unauthorized
from memory.context import clean_runtime
from memory.errors import InvalidInput
from memory.mcp.server import build_server, current_caller
from memory.presence import caller_with_header

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
    `X-Memory-Source` and `X-Memory-Runtime` headers are checked (422 when bad). The
    caller carries the token's row id (`token`) for the stream cap."""
    key = None
    try:
        key = key_from_header(authorization or "")
        if key is None:
            return None, (401, unauthorized("No token."))
        token = token_for_key(key)
    except BadCredential as error:
        return None, (401, unauthorized(str(error), key))
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
    return (caller, token.pk), None


def _auth_in_thread(
    authorization: str | None, source_header: str | None, runtime_header: str | None = None
):
    close_old_connections()
    try:
        return _authenticate(authorization, source_header, runtime_header)
    finally:
        close_old_connections()


class McpApp:
    """The authenticated `/mcp` endpoint (an ASGI app, with the transport's lifespan).

    A GET opens a stream the server keeps until the client leaves (the transport's
    server-to-client channel). Each token may hold at most MEMORY_MCP_STREAMS_PER_TOKEN of
    them open at once in this process (SPEC §16): one more is 429 with a JSON reason, so
    no client can tie up a web worker with streams in any number."""

    def __init__(self) -> None:
        self.server = build_server()
        self.streams: dict[int, int] = {}  # token row id → GET streams open
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
        if refusal is None and scope.get("method") == "GET":
            await self._stream(scope, receive, send, *caller)
            return
        if refusal is not None:
            status, body = refusal
            extra = []
            if status == 401:
                body, challenge = body
                extra = [(b"www-authenticate", challenge.encode("ascii"))]
            await _answer(send, status, body, extra)
            return
        await self._serve(scope, receive, send, caller[0])

    async def _serve(self, scope, receive, send, caller) -> None:
        scope = {**scope, "memory.caller": caller}
        token = current_caller.set(caller)
        try:
            await self.transport(scope, receive, send)
        finally:
            current_caller.reset(token)

    async def _stream(self, scope, receive, send, caller, token_id: int) -> None:
        cap = settings.MEMORY_MCP_STREAMS_PER_TOKEN
        if self.streams.get(token_id, 0) >= cap:
            await _answer(
                send,
                429,
                {
                    "error": "too_many_streams",
                    "error_description": f"This token already holds {cap} open MCP streams "
                    "(GET /mcp) here: close one first. Tool calls (POST) still work.",
                },
                [(b"retry-after", b"5")],
            )
            return
        self.streams[token_id] = self.streams.get(token_id, 0) + 1
        try:
            await self._serve(scope, receive, send, caller)
        finally:
            self.streams[token_id] -= 1
            if not self.streams[token_id]:
                del self.streams[token_id]


def mcp_app() -> McpApp:
    return McpApp()
