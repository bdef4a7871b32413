"""The web server: uvicorn serving `memoryproject.asgi` (Django and `/mcp` on one port), as
`bin/serve`, the Procfile and the systemd unit start it:

    python -m memoryproject.web --host 127.0.0.1 --port 8000 --workers 2

It is uvicorn's own command with this app's options (lifespan on, no server header, no
proxy headers: the client's address is the connection's, docs/operations.md) and one
difference: the listening socket has TCP_NODELAY. uvicorn binds the socket it hands to
several workers with protocol 0, and asyncio turns Nagle's algorithm off only on sockets
whose protocol says TCP; so every answer on a kept-alive connection (its head and its
body are two writes) waited for the client's delayed ACK — about 40 ms a request, for
every client that keeps its connection, MCP clients included. Accepted sockets inherit the
option from the listening one (docs/decisions.md, "Deployment").
"""

from __future__ import annotations

import argparse
import socket

from uvicorn import Config, Server
from uvicorn.supervisors import Multiprocess

APP = "memoryproject.asgi:application"


def listening_socket(config: Config) -> socket.socket:
    """uvicorn's socket for `config`, with Nagle's algorithm off for every connection."""
    sock = config.bind_socket()
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m memoryproject.web", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    config = Config(
        APP,
        host=args.host,
        port=args.port,
        workers=args.workers,
        lifespan="on",
        server_header=False,
        proxy_headers=False,
    )
    sock = listening_socket(config)
    if config.workers > 1:
        Multiprocess(config, sockets=[sock]).run()
    else:
        Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
