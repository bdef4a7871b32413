"""memoryproject.wsgi_threads: a WSGI app answered through ASGI with one crossing each way
— the whole answer handed to the event loop at once — and a large answer streamed in
pieces from its thread, never held whole."""

from __future__ import annotations

import asyncio
import threading

import pytest

from memoryproject.wsgi_threads import WsgiOnThreads


def _scope(method: str = "GET", path: str = "/x", headers=()) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"q=ph%E1%BB%9F",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), *headers],
        "client": ("127.0.0.1", 5555),
        "server": ("127.0.0.1", 8000),
    }


def _call(app, scope: dict, bodies=(b"",), *, on_send=None) -> list[dict]:
    """The messages `app` sends for a request whose body comes in `bodies`."""
    sent: list[dict] = []

    async def main() -> None:
        incoming = [
            {"type": "http.request", "body": body, "more_body": i < len(bodies) - 1}
            for i, body in enumerate(bodies)
        ]

        async def receive():
            if incoming:
                return incoming.pop(0)
            await asyncio.sleep(3600)

        async def send(message):
            sent.append(message)
            if on_send:
                on_send(message)

        await app(scope, receive, send)

    asyncio.run(main())
    return sent


def test_a_small_answer_is_sent_whole_from_the_event_loop_in_two_messages():
    ran_on = []

    def app(environ, start_response):
        ran_on.append(threading.current_thread().name)
        start_response("201 Created", [("Content-Type", "text/plain"), ("Set-Cookie", "a=1")])
        return [b"hello ", b"", b"world"]

    sent = _call(WsgiOnThreads(app, threads=2), _scope())

    assert sent == [
        {
            "type": "http.response.start",
            "status": 201,
            "headers": [(b"content-type", b"text/plain"), (b"set-cookie", b"a=1")],
        },
        {"type": "http.response.body", "body": b"hello world", "more_body": False},
    ]
    assert ran_on[0].startswith("WSGI") and ran_on[0] != threading.current_thread().name


def test_the_body_reaches_the_app_whole_with_the_request_as_wsgi_says():
    seen = {}

    def app(environ, start_response):
        seen["body"] = environ["wsgi.input"].read()
        seen["method"] = environ["REQUEST_METHOD"]
        seen["query"] = environ["QUERY_STRING"]
        seen["type"] = environ["CONTENT_TYPE"]
        seen["auth"] = environ["HTTP_AUTHORIZATION"]
        start_response("200 OK", [])
        return [b""]

    scope = _scope(
        "POST",
        headers=[(b"content-type", b"application/json"), (b"authorization", b"Token k")],
    )
    sent = _call(WsgiOnThreads(app, threads=1), scope, [b'{"query": ', b'"ph\xe1\xbb\x9f"}'])

    assert seen == {
        "body": '{"query": "phở"}'.encode(),
        "method": "POST",
        "query": "q=ph%E1%BB%9F",
        "type": "application/json",
        "auth": "Token k",
    }
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


def test_a_client_gone_before_its_body_came_in_never_reaches_the_app():
    ran = []

    def app(environ, start_response):
        ran.append(1)
        start_response("200 OK", [])
        return [b""]

    sent: list[dict] = []

    async def main() -> None:
        messages = [
            {"type": "http.request", "body": b"part", "more_body": True},
            {"type": "http.disconnect"},
        ]

        async def receive():
            return messages.pop(0)

        async def send(message):
            sent.append(message)

        await WsgiOnThreads(app, threads=1)(_scope("PUT"), receive, send)

    asyncio.run(main())
    assert ran == [] and sent == []


def test_a_large_answer_is_streamed_in_pieces_while_the_app_still_runs():
    piece = b"x" * 1000
    sent_before_the_end = []
    sent: list[dict] = []

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        for number in range(10):
            if number == 9:
                sent_before_the_end.append(len(sent))  # what the client had by then
            yield piece

    _call(WsgiOnThreads(app, threads=1, buffer=2500), _scope(), on_send=sent.append)

    assert sent[0]["type"] == "http.response.start"
    bodies = sent[1:]
    assert [len(m["body"]) for m in bodies] == [3000, 3000, 3000, 1000]
    assert [m["more_body"] for m in bodies] == [True, True, True, False]
    assert b"".join(m["body"] for m in bodies) == piece * 10
    assert sent_before_the_end == [4]  # the head and three pieces, sent from the thread


def test_the_legacy_write_callable_and_the_iterable_are_one_body_and_close_is_called():
    closed = []

    class Body:
        def __iter__(self):
            yield b" and returned"

        def close(self):
            closed.append(True)

    def app(environ, start_response):
        write = start_response("200 OK", [])
        write(b"written")
        return Body()

    sent = _call(WsgiOnThreads(app, threads=1), _scope())
    assert sent[1]["body"] == b"written and returned"
    assert closed == [True]


def test_an_app_that_fails_raises_to_the_server_and_its_iterable_is_closed():
    closed = []

    class Body:
        def __iter__(self):
            raise ValueError("broken view")
            yield b""

        def close(self):
            closed.append(True)

    def app(environ, start_response):
        start_response("200 OK", [])
        return Body()

    with pytest.raises(ValueError, match="broken view"):
        _call(WsgiOnThreads(app, threads=1), _scope())
    assert closed == [True]


def test_an_app_that_never_starts_its_answer_is_an_error_not_an_empty_200():
    def app(environ, start_response):
        return [b"body without a status"]

    with pytest.raises(RuntimeError, match="start_response"):
        _call(WsgiOnThreads(app, threads=1), _scope())


def test_an_error_after_the_head_was_streamed_cannot_replace_it():
    def app(environ, start_response):
        start_response("200 OK", [])
        yield b"x" * 100
        try:
            raise OSError("disk gone")
        except OSError as error:
            start_response("500 Internal Server Error", [], (OSError, error, None))
        yield b"never"

    with pytest.raises(OSError, match="disk gone"):
        _call(WsgiOnThreads(app, threads=1, buffer=50), _scope())


def test_a_websocket_is_closed_at_once():
    sent = []

    async def main() -> None:
        async def receive():
            return {"type": "websocket.connect"}

        async def send(message):
            sent.append(message)

        await WsgiOnThreads(lambda e, s: [], threads=1)(
            {"type": "websocket", "path": "/"}, receive, send
        )

    asyncio.run(main())
    assert sent == [{"type": "websocket.close", "code": 1000}]
