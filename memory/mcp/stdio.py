"""MCP over stdio for one caller (`manage.py mcp`)."""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from memory.mcp.server import build_server, current_caller
from memory.presence import Caller


async def serve_stdio(caller: Caller) -> None:
    """Serve until stdin closes; every request speaks for `caller`."""
    current_caller.set(caller)
    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
