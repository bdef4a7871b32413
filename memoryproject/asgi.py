"""The ASGI entry point `make run` serves (uvicorn, bin/serve): Django for everything,
except `/mcp`, the MCP server's Streamable HTTP endpoint (memory/mcp/http.py), on the same
port. The lifespan starts the MCP transport's session manager; Django has none.

Django is served by its WSGI handler on a pool of threads (memoryproject.wsgi_threads),
not by its ASGI handler: every view and most middleware here are synchronous, and Django's
ASGI handler crosses between the event loop and a thread at each change of mode — about
twelve hops a request, 3–4 ms of a trivial GET — where the WSGI handler runs a whole
request on one thread, reached once each way (docs/decisions.md, "Deployment").

In front of both, `LimitBody` refuses a body over MEMORY_MAX_BODY_BYTES (413, SPEC §17)
as it streams in, before anyone reads or stores it; without it a chunked upload of any
size, with or without credentials, sat on disk before the 401. Django is given a body only
once it has all come in, so a body over the limit is 413 whatever Django would have
answered first, and the request's thread never waits on the event loop for bytes."""

import json
import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from memoryproject.wsgi_threads import WsgiOnThreads

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")
# Sets Django up before the MCP app is imported. Requests of one process run on up to
# WEB_THREADS threads at once (the rest wait their turn in the event loop).
django_app = WsgiOnThreads(get_wsgi_application(), threads=settings.WEB_THREADS)


from memory.mcp.http import PATH, mcp_app  # noqa: E402

mcp = mcp_app()


async def _lifespan(receive, send) -> None:
    message = await receive()  # lifespan.startup
    try:
        async with mcp.lifespan():
            await send({"type": "lifespan.startup.complete"})
            while message["type"] != "lifespan.shutdown":
                message = await receive()
    except BaseException as error:
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.failed", "message": str(error)})
            return
        raise
    await send({"type": "lifespan.shutdown.complete"})


TOO_LARGE = json.dumps({"detail": "Request body is too large.", "code": "too_large"}).encode()


async def _too_large(send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(TOO_LARGE)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": TOO_LARGE})


class LimitBody:
    """An ASGI app in front of `app` that answers 413 to a body over `limit` bytes: at once
    when its Content-Length says so, else (chunked, or a length that lies) as soon as the
    bytes received pass the limit — the app then sees the client gone
    (`http.disconnect`) and whatever it still sends is dropped. Nothing past the limit is
    ever read from the connection."""

    def __init__(self, app, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _too_large(send)
            return
        state = {"received": 0, "refused": False, "started": False}

        async def guarded_receive():
            if state["refused"]:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                state["received"] += len(message.get("body", b""))
                if state["received"] > self.limit:
                    state["refused"] = True
                    if not state["started"]:
                        await _too_large(send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message) -> None:
            if state["refused"]:
                return
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        await self.app(scope, guarded_receive, guarded_send)


async def _route(scope, receive, send) -> None:
    if scope["type"] == "http" and scope["path"] == PATH:
        await mcp(scope, receive, send)
    else:
        await django_app(scope, receive, send)


def _limited():
    return LimitBody(_route, settings.MEMORY_MAX_BODY_BYTES)


_guarded = _limited()


async def application(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
    else:
        await _guarded(scope, receive, send)
