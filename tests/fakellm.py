"""A fake model server for tests: real HTTP on 127.0.0.1, scripted answers.

Serves `POST /v1/chat/completions` (OpenAI-compatible) and `POST /v1/messages`
(Anthropic). Each request takes the next scripted reply from the queue (the last one
repeats when the queue runs dry; with none scripted, the answer is `{}`). Every request is
recorded (`requests`: path, headers, parsed JSON body) so tests can assert on the prompts.

A reply is one of:
- a dict → the model's content is that object as JSON;
- a str → the model's content is that text, verbatim (e.g. prose, a fenced block);
- `Reply(status=…, body=…, delay=…, content=…, usage=…)` for HTTP errors, slowness,
  and special cases (e.g. `reject_json_mode=True` answers 400 when `response_format`
  is present);
- `Reply(tool_calls=[{"name": …, "arguments": {…}}, …])` → the model calls those tools:
  OpenAI's `message.tool_calls` (finish_reason `tool_calls`, arguments as a JSON string)
  or Anthropic's `tool_use` blocks (stop_reason `tool_use`), with ids `call_<n>` /
  `toolu_<n>`; `content`, if any, is the text said before the calls.

A query string on the path (Anthropic's SDK adds `?beta=true`) is ignored.
`Reply(finish_reason="length")` is an answer cut at max_tokens (Anthropic: stop_reason
`max_tokens`).

Endpoint behaviour, set on the server: `refuse_formats` — response_format forms
("json_schema", "json_object_schema", "json_object") answered with `refuse_status`
without taking a reply, as a server that does not know them; `tokenizer` —
"llama-cpp-python" (POST /extras/tokenize/count) or "llama.cpp" (POST /tokenize) counts
`count_tokens(text)` tokens (default: one per 4 characters, rounded up), None: no such
endpoint (404).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: Any = None  # dict (JSON) or str (verbatim)
    status: int = 200
    body: str | None = None  # a raw body overriding everything
    delay: float = 0.0
    usage: tuple[int, int] = (120, 45)
    reject_json_mode: bool = False
    tool_calls: list[dict] | None = None  # [{"name", "arguments"}]
    finish_reason: str = "stop"


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict = field(default_factory=dict)
    client: str = ""  # the caller's address
    started: float = 0.0  # time.monotonic() when the request arrived
    finished: float = 0.0  # … and when its answer was sent (0 while in flight)


def format_form(body: dict) -> str | None:
    """Which form of response_format a request asked for."""
    response_format = body.get("response_format")
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_schema":
        return "json_schema"
    if response_format.get("type") == "json_object":
        return "json_object_schema" if "schema" in response_format else "json_object"
    return str(response_format.get("type"))


class FakeLLM:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.refuse_formats: set[str] = set()
        self.refuse_status = 400
        self.tokenizer: str | None = None
        self.count_tokens = lambda text: -(-len(text) // 4)
        self.replies: list[Any] = []
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    # --- control ------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> FakeLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def script(self, *replies: Any) -> None:
        with self._lock:
            self.replies = list(replies)

    def _next(self) -> Any:
        with self._lock:
            if not self.replies:
                return {}
            if len(self.replies) == 1:
                return self.replies[0]
            return self.replies.pop(0)

    # --- HTTP ---------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                record = Recorded(
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    client=self.client_address[0],
                    started=time.monotonic(),
                )
                with fake._lock:
                    fake.requests.append(record)
                try:
                    self._answer(body)
                finally:
                    record.finished = time.monotonic()

            def _answer(self, body: dict) -> None:
                path = self.path.split("?", 1)[0]
                tokenizers = {
                    "/extras/tokenize/count": "llama-cpp-python",
                    "/tokenize": "llama.cpp",
                }
                if path in tokenizers and fake.tokenizer == tokenizers[path]:
                    text = body.get("input" if fake.tokenizer == "llama-cpp-python" else "content")
                    count = fake.count_tokens(text or "")
                    if fake.tokenizer == "llama-cpp-python":
                        self._send(200, json.dumps({"count": count}))
                    else:
                        self._send(200, json.dumps({"tokens": list(range(count))}))
                    return
                if path not in ("/v1/chat/completions", "/v1/messages"):
                    self._send(404, json.dumps({"error": "not found"}))
                    return
                if format_form(body) in fake.refuse_formats:
                    message = f"response_format {format_form(body)} is not supported"
                    self._send(fake.refuse_status, json.dumps({"error": {"message": message}}))
                    return
                reply = fake._next()
                if not isinstance(reply, Reply):
                    reply = Reply(content=reply)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.reject_json_mode and "response_format" in body:
                    self._send(400, json.dumps({"error": "response_format not supported"}))
                    return
                if reply.body is not None or reply.status != 200:
                    self._send(reply.status, reply.body or json.dumps({"error": "scripted"}))
                    return
                content = reply.content
                text = content if isinstance(content, str) else json.dumps(content)
                model = body.get("model", "")
                tokens_in, tokens_out = reply.usage
                if reply.tool_calls is not None:
                    self._send(200, json.dumps(fake._tool_answer(path, reply, model)))
                    return
                if path == "/v1/messages":
                    answer = {
                        "id": "msg_fake",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [{"type": "text", "text": text}],
                        "stop_reason": (
                            "max_tokens" if reply.finish_reason == "length" else "end_turn"
                        ),
                        "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
                    }
                else:
                    answer = {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "model": model,
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": reply.finish_reason,
                            }
                        ],
                        "usage": {
                            "prompt_tokens": tokens_in,
                            "completion_tokens": tokens_out,
                            "total_tokens": tokens_in + tokens_out,
                        },
                    }
                self._send(200, json.dumps(answer))

            def _send(self, status: int, text: str) -> None:
                data = text.encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        return Handler

    def _tool_answer(self, path: str, reply: Reply, model: str) -> dict:
        tokens_in, tokens_out = reply.usage
        said = reply.content if isinstance(reply.content, str) else None
        calls = [(f"{index}", call) for index, call in enumerate(reply.tool_calls, 1)]
        if path == "/v1/messages":
            blocks = [{"type": "text", "text": said}] if said else []
            blocks += [
                {"type": "tool_use", "id": f"toolu_{n}", "name": c["name"], "input": c["arguments"]}
                for n, c in calls
            ]
            return {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": blocks,
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
            }
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": said,
                        "tool_calls": [
                            {
                                "id": f"call_{n}",
                                "type": "function",
                                "function": {
                                    "name": c["name"],
                                    "arguments": json.dumps(c["arguments"]),
                                },
                            }
                            for n, c in calls
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {
                "prompt_tokens": tokens_in,
                "completion_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            },
        }

    # --- helpers for assertions -----------------------------------------------------------

    def chat_requests(self) -> list[Recorded]:
        """The chat requests (not the tokenizer's), in order."""
        chat = ("/v1/chat/completions", "/v1/messages")
        return [r for r in self.requests if r.path.split("?", 1)[0] in chat]

    def prompts(self) -> list[str]:
        """The user message of every chat request, in order."""
        out = []
        for request in self.chat_requests():
            messages = request.body.get("messages") or []
            out.append(next((m["content"] for m in messages if m.get("role") == "user"), ""))
        return out
