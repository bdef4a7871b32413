"""memoryproject/asgi.py under a real uvicorn: a body over MEMORY_MAX_BODY_BYTES is 413
as it streams in, before anything reads or stores it — chunked or not, with or without
credentials (SPEC §17). Django's ASGI handler reads a whole body into a temporary file
before any middleware runs: a 1.5 GB chunked PUT without credentials sat in a temp file
before its 401."""

from __future__ import annotations

import os
import socket
import threading

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 3_000_000  # over Django's 2.5 MB in memory, so an unguarded body would spool to disk


def _files_under(pid: int, folder) -> list[tuple[str, int]]:
    """The files under `folder` the process holds open (deleted ones too), with sizes."""
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith(str(folder)):
                found.append((target, os.stat(f"/proc/{pid}/fd/{fd}").st_size))
        except OSError:
            continue
    return found


def _send_chunked(port: int, path: str, total: int, headers: str = "") -> socket.socket:
    """Open a connection and send `total` bytes of a chunked PUT (never its last chunk),
    from a thread, ignoring a connection the server closed."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Transfer-Encoding: chunked\r\n{headers}\r\n".encode()
    )

    def feed() -> None:
        chunk = b"x" * 65536
        sent = 0
        try:
            while sent < total:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
        except OSError:
            pass

    threading.Thread(target=feed, daemon=True).start()
    return sock


def _status_line(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            part = sock.recv(65536)
            if not part:
                break
            data += part
    except (TimeoutError, ConnectionResetError):
        pass
    return data


def test_a_chunked_body_over_the_limit_is_413_before_it_is_read(serve, master):
    served = serve(MEMORY_MAX_BODY_BYTES=str(LIMIT))
    for credentials in ("", "Authorization: Token nope\r\n"):
        sock = _send_chunked(served.port, "/api/memory/user", 2 * LIMIT, credentials)
        try:
            answer = _status_line(sock, timeout=15)
            assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
            # Nothing past the limit was stored: no temporary file of the server's grew.
            assert all(size <= LIMIT for _, size in _files_under(served.pid, served.tmp))
        finally:
            sock.close()
    # A declared length over the limit is refused at once, on /mcp as on Django's paths.
    sock = socket.create_connection(("127.0.0.1", served.port))
    try:
        sock.sendall(
            b"PUT /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1500000000\r\n\r\n"
        )
        assert _status_line(sock, timeout=10).startswith(b"HTTP/1.1 413")
    finally:
        sock.close()
    # A body within the limit still goes through (to the 401 of no credentials); one over
    # it sent whole is 413 with the JSON every 413 has.
    small = httpx.put(f"{served.url}/api/memory/user", json={"body": "x" * 100})
    assert small.status_code == 401
    big = httpx.put(f"{served.url}/api/memory/user", json={"body": "x" * (LIMIT + 10)})
    assert big.status_code == 413
    assert big.json() == {"detail": "Request body is too large.", "code": "too_large"}


def test_an_answer_past_the_buffer_streams_whole_and_a_small_one_has_its_length(
    serve, master, workspace
):
    """memoryproject.wsgi_threads under uvicorn: an answer larger than its buffer (a MEMORY.md
    of 1.5 MB as JSON) arrives byte for byte; a small one comes in one piece."""
    from memory.models import ApiToken
    from memoryproject.wsgi_threads import BUFFER

    lines = [f"- dòng {n:06d}: đo huyết áp buổi sáng, ghi chú dài cho đủ cỡ" for n in range(24000)]
    text = "# Memory\n\n" + "\n".join(lines) + "\n"
    assert len(text.encode()) > 5 * BUFFER
    (workspace / "MEMORY.md").write_text(text, encoding="utf-8")
    _, key = ApiToken.issue(agent=master)
    served = serve()
    headers = {"Authorization": f"Bearer {key}"}

    big = httpx.get(f"{served.url}/api/agents/master/memory", headers=headers, timeout=30)
    assert big.status_code == 200
    assert big.json()["body"] == text

    small = httpx.get(f"{served.url}/api/agents/master", headers=headers)
    assert small.status_code == 200 and small.json()["id"] == "master"
    assert int(small.headers["content-length"]) == len(small.content)
