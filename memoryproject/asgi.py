"""The ASGI entry point `make run` serves (uvicorn, bin/serve): Django for everything,
except `/mcp`, the MCP server's Streamable HTTP endpoint (memory/mcp/http.py), on the same
port. The lifespan starts the MCP transport's session manager; Django has none."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")
django_app = get_asgi_application()  # sets Django up before the MCP app is imported

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


async def application(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
    elif scope["type"] == "http" and scope["path"] == PATH:
        await mcp(scope, receive, send)
    else:
        await django_app(scope, receive, send)
