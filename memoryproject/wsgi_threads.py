"""A WSGI app (Django's handler) served to an ASGI server on a pool of threads, crossing
between the event loop and a thread once each way a request.

The request's body is read whole on the event loop first (`memoryproject.asgi.LimitBody`
keeps it within MEMORY_MAX_BODY_BYTES), so the app never waits on the loop for bytes. The
app then runs on a thread, and its answer is gathered there — the status, the headers and
the body up to BUFFER bytes — and handed back to the loop at once, which sends it. a2wsgi,
which served Django before, sent each of those from the thread and waited for the loop to
take each: three crossings more a request, 0.4–0.6 ms of a trivial GET over HTTP
(docs/decisions.md, "Deployment").

A body past BUFFER (a large static file) is streamed instead: from the thread, in pieces of
about BUFFER bytes, each waited for, so no answer is ever held whole in memory and a slow
client holds back the thread that serves it, not the worker's memory.
"""

from __future__ import annotations

import asyncio
import io
from concurrent.futures import ThreadPoolExecutor

from a2wsgi.wsgi import build_environ

BUFFER = 256 * 1024


class _Answer:
    """What the app said, gathered on its thread: the ASGI messages not sent yet."""

    def __init__(self) -> None:
        self.start: dict | None = None
        self.chunks: list[bytes] = []
        self.size = 0
        self.streaming = False

    def start_response(self, status: str, headers: list[tuple[str, str]], exc_info=None):
        if self.start is not None and not exc_info:
            raise RuntimeError("start_response was called twice without exc_info.")
        if self.streaming and exc_info:
            raise exc_info[1].with_traceback(exc_info[2])  # too late: the head is sent
        self.start = {
            "type": "http.response.start",
            "status": int(status.split(" ", 1)[0]),
            "headers": [
                (name.strip().lower().encode("latin-1"), value.strip().encode("latin-1"))
                for name, value in headers
            ],
        }
        return self.write

    def write(self, chunk: bytes) -> None:
        if chunk:
            self.chunks.append(chunk)
            self.size += len(chunk)

    def body(self, *, more: bool) -> dict:
        message = {"type": "http.response.body", "body": b"".join(self.chunks), "more_body": more}
        self.chunks, self.size = [], 0
        return message


class WsgiOnThreads:
    """An ASGI app running the WSGI `app` on up to `threads` threads (the rest of the
    requests wait their turn on the event loop)."""

    def __init__(self, app, *, threads: int, buffer: int = BUFFER) -> None:
        self.app = app
        self.buffer = buffer
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="WSGI")

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1000})
            return
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left before its body came in: no request to run
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        environ = build_environ(scope, io.BytesIO(b"".join(chunks)))
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(self.executor, self._run, environ, loop, send)
        if not answer.streaming:
            await send(answer.start)
            await send(answer.body(more=False))

    def _run(self, environ: dict, loop: asyncio.AbstractEventLoop, send) -> _Answer:
        """The app's answer, on this thread: gathered whole, or (past `buffer` bytes)
        streamed from here — `streaming` then says it was all sent."""
        answer = _Answer()

        def now(message: dict) -> None:
            asyncio.run_coroutine_threadsafe(send(message), loop).result()

        iterable = self.app(environ, answer.start_response)
        try:
            for chunk in iterable:
                answer.write(chunk)
                if answer.size >= self.buffer:
                    if not answer.streaming:
                        answer.streaming = True
                        now(self._head(answer))
                    now(answer.body(more=True))
        finally:
            close = getattr(iterable, "close", None)
            if close is not None:
                close()
        self._head(answer)
        if answer.streaming:
            now(answer.body(more=False))
        return answer

    @staticmethod
    def _head(answer: _Answer) -> dict:
        if answer.start is None:
            raise RuntimeError("The WSGI app returned without calling start_response.")
        return answer.start
