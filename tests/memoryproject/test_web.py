"""The web server's listening socket (memoryproject.web): every connection it accepts has
Nagle's algorithm off, so an answer on a kept-alive connection never waits for the
client's delayed ACK (docs/decisions.md, "Deployment")."""

from __future__ import annotations

import socket

from uvicorn import Config

from memoryproject.web import APP, listening_socket


def test_the_socket_uvicorn_binds_for_several_workers_does_not_say_tcp():
    # Why the module exists: asyncio turns Nagle off only on sockets whose protocol is
    # IPPROTO_TCP, and uvicorn binds its workers' socket with protocol 0. When a future
    # uvicorn binds with TCP, this fails and memoryproject.web can go.
    with Config(APP, host="127.0.0.1", port=0, workers=2).bind_socket() as sock:
        assert sock.proto != socket.IPPROTO_TCP


def test_every_accepted_connection_has_nagle_off():
    sock = listening_socket(Config(APP, host="127.0.0.1", port=0, workers=2))
    with sock:
        sock.listen()
        for _ in range(3):
            with socket.create_connection(sock.getsockname()):
                accepted, _ = sock.accept()
                with accepted:
                    assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
