"""Model providers (SPEC §13): one small interface over real HTTP.

`get_provider()` reads the MEMORY_LLM_* settings and returns an `OpenAIProvider` (any
OpenAI-compatible endpoint) or an `AnthropicProvider`, or None when no model is
configured — callers then record their run as `skipped` with NO_MODEL. A provider's main
method, `complete_json(system, user, schema=…, max_tokens=…) -> Answer`, asks for one JSON
object (§13.1) — constrained to the step's JSON schema (`<step>_schema.json` beside its
prompts) where the endpoint supports it —, strips a Markdown code fence, and returns the
parsed object with the token usage the endpoint reported and its cost from the price
table (memory/jobs/prices.toml, read by `prices()`). Anything else raises `LLMError`,
which carries whatever usage was reported before the failure; an answer cut at the token
limit is such a failure, never a shorter answer. `count_tokens(text)` counts with the
server's own tokenizer where it has one (llama.cpp, llama-cpp-python), else with
memory.jobs.window's upper estimate.

The answer is checked against the schema it was sent (memory.jobs.answers), then read by
the step's parser, which keeps what no schema can say; both raise `BadAnswer`. The run
bookkeeping around a call (heartbeat, usage, the failure as the run's summary) is
`memory.jobs.runs.ask_for_run`.
Prompt text lives in files under memory/prompts/ (or another app's prompts directory:
`load_prompt`, `render_prompt`).
"""

from __future__ import annotations

import functools
import json
import logging
import re
import time
import tomllib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import httpx
from django.conf import settings

from memory.jobs import window

log = logging.getLogger(__name__)

NO_MODEL = "no model configured"
PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
PRICES_FILE = Path(__file__).resolve().parent / "prices.toml"
TRIES = 3  # one call and two retries on 429 / 5xx / connection errors
ANTHROPIC_VERSION = "2023-06-01"


@dataclass
class Answer:
    """A parsed JSON answer and what it cost."""

    data: dict
    model: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost: Decimal = field(default_factory=lambda: Decimal("0"))
    raw: str = ""


class LLMError(Exception):
    """The model call failed: HTTP error, timeout, or an answer that is not one JSON
    object. Usage reported before the failure (e.g. a 200 with prose instead of JSON) is
    kept so the run can still record tokens and cost."""

    def __init__(
        self,
        message: str,
        *,
        model: str = "",
        tokens_in: int = 0,
        tokens_out: int = 0,
        cost: Decimal | None = None,
        raw: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.model = model
        self.tokens_in = tokens_in
        self.tokens_out = tokens_out
        self.cost = cost if cost is not None else Decimal("0")
        self.raw = raw


@functools.cache
def prices() -> dict[str, tuple[Decimal, Decimal]]:
    """The price table, PRICES_FILE: {model: ($ per million tokens in, $ per million out)},
    read once per process. Raises ValueError naming the file and the model when an entry
    is not two prices of 0 or more."""
    table = tomllib.loads(PRICES_FILE.read_text(encoding="utf-8"), parse_float=Decimal)
    read: dict[str, tuple[Decimal, Decimal]] = {}
    for model, rates in table.items():
        if (
            not isinstance(rates, dict)
            or set(rates) != {"input", "output"}
            or any(type(rate) not in (int, Decimal) or rate < 0 for rate in rates.values())
        ):
            raise ValueError(
                f"{PRICES_FILE}: {model} needs an `input` and an `output` price, 0 or more"
            )
        read[model] = (Decimal(rates["input"]), Decimal(rates["output"]))
    return read


def price(model: str, tokens_in: int, tokens_out: int) -> Decimal:
    """US dollars for this usage from the price table (`prices()`). A model missing from
    the table costs 0 (a local server is free)."""
    rates = prices().get(model)
    if rates is None:
        return Decimal("0")
    rate_in, rate_out = rates
    total = (rate_in * tokens_in + rate_out * tokens_out) / Decimal(1_000_000)
    return total.quantize(Decimal("0.000001"))


_FENCE_RE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\n(?P<body>.*?)\n?[ \t]*```\s*\Z", re.DOTALL)


def strip_fence(text: str) -> str:
    """The text inside one Markdown code fence (```json … ```), or the text itself."""
    match = _FENCE_RE.match(text)
    return match.group("body") if match else text.strip()


def parse_json_object(text: str) -> dict:
    """One JSON object, optionally fenced. Raises ValueError otherwise. A raw line break
    inside a string is accepted as that character: grammar-constrained servers
    (llama.cpp's JSON-schema grammar) let the model write one."""
    data = json.loads(strip_fence(text), strict=False)
    if not isinstance(data, dict):
        raise ValueError("the answer is JSON but not an object")
    return data


def load_prompt(name: str, directory: Path = PROMPTS_DIR) -> str:
    """The text of <directory>/<name> (memory/prompts/ unless another app's is given)."""
    return (directory / name).read_text(encoding="utf-8")


def load_schema(name: str, directory: Path = PROMPTS_DIR) -> dict:
    """The JSON schema of a step's answer, <directory>/<name> (§13.1 as a schema)."""
    return json.loads(load_prompt(name, directory))


_PLACEHOLDER_RE = re.compile(r"\{\{(\w+)\}\}")


def render_prompt(name: str, directory: Path = PROMPTS_DIR, **values: object) -> str:
    """A prompt template with its `{{key}}` placeholders replaced, in one pass over the
    template (so braces inside the values — notes are full of them — are left alone).
    A placeholder without a value, or a value the template never uses, raises
    ValueError: a renamed placeholder must fail loudly, not reach the model as `{{x}}`."""
    text = load_prompt(name, directory)
    used = set(_PLACEHOLDER_RE.findall(text))
    missing = used - set(values)
    unused = set(values) - used
    if missing or unused:
        raise ValueError(
            f"prompt {name}: no value for {sorted(missing)}; not in the template {sorted(unused)}"
        )
    return _PLACEHOLDER_RE.sub(lambda match: str(values[match.group(1)]), text)


class Provider(ABC):
    """One configured chat model. Subclasses build the request and read the answer."""

    name = "provider"

    def __init__(self, *, base_url: str, api_key: str, model: str, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.timeout = timeout

    # --- the public methods ----------------------------------------------------------

    def complete_json(
        self,
        system: str,
        user: str,
        *,
        schema: dict | None = None,
        max_tokens: int | None = None,
    ) -> Answer:
        """Ask for one JSON object — matching `schema` where the endpoint can constrain
        its output to one — in at most `max_tokens` tokens (None: the endpoint's own
        limit). Returns an Answer; raises LLMError on HTTP errors (after retries),
        timeouts, an answer cut at the token limit and answers that are not one JSON
        object."""
        body = self._call(system, user, schema, max_tokens)
        text = self._text_of(body)
        model = str(body.get("model") or self.model)
        tokens_in, tokens_out = self._usage_of(body)
        cost = price(self.model, tokens_in, tokens_out)
        if self._was_cut(body):
            raise LLMError(
                f"the answer was cut off at the token limit ({tokens_out} tokens); "
                "an unfinished answer is not used",
                model=model,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost=cost,
                raw=text,
            )
        try:
            data = parse_json_object(text)
        except ValueError as exc:
            raise LLMError(
                f"the model did not answer with one JSON object ({exc})",
                model=model,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost=cost,
                raw=text,
            ) from None
        return Answer(data, model, tokens_in, tokens_out, cost, text)

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` for this model: the upper estimate of memory.jobs.window unless a
        subclass knows the server's tokenizer."""
        return window.estimate_tokens(text)

    # --- HTTP --------------------------------------------------------------------------

    @abstractmethod
    def _call(
        self, system: str, user: str, schema: dict | None, max_tokens: int | None
    ) -> dict: ...

    @abstractmethod
    def _text_of(self, body: dict) -> str: ...

    @abstractmethod
    def _usage_of(self, body: dict) -> tuple[int, int]: ...

    @abstractmethod
    def _was_cut(self, body: dict) -> bool:
        """True when the answer stopped at the token limit, not at its end."""

    def _post(
        self,
        url: str,
        payload: dict,
        headers: dict[str, str],
        refused: Callable[[httpx.Response], bool] | None = None,
    ) -> httpx.Response:
        """POST with retries: 429, 5xx and connection errors are tried TRIES times with
        exponential backoff (MEMORY_LLM_RETRY_DELAY, doubled each time). Timeouts are not
        retried — a slow model would multiply the wait. Any other 4xx, and a response for
        which `refused` is true (the endpoint refusing the request's shape, which asking
        again would not change), is returned to the caller, which decides (e.g. the
        response-format fallback)."""
        base_delay = float(settings.MEMORY_LLM_RETRY_DELAY)
        last_error = ""
        for attempt in range(TRIES):
            if attempt:
                time.sleep(base_delay * (2 ** (attempt - 1)))
            try:
                response = httpx.post(url, json=payload, headers=headers, timeout=self.timeout)
            except httpx.TimeoutException:
                raise LLMError(
                    f"the model did not answer within {self.timeout:g} s", model=self.model
                ) from None
            except httpx.TransportError as exc:
                last_error = f"cannot reach {url}: {exc.__class__.__name__}"
                log.warning("model call failed (try %d/%d): %s", attempt + 1, TRIES, last_error)
                continue
            if refused is not None and refused(response):
                return response
            if response.status_code == 429 or response.status_code >= 500:
                last_error = f"HTTP {response.status_code} from {url}"
                log.warning("model call failed (try %d/%d): %s", attempt + 1, TRIES, last_error)
                continue
            return response
        raise LLMError(f"{last_error} (after {TRIES} tries)", model=self.model)

    def _json_or_error(self, response: httpx.Response) -> dict:
        if response.status_code >= 400 and _context_exceeded(response):
            raise LLMError(
                f"prompt too long for model (the endpoint says: {_error_text(response)})",
                model=self.model,
            )
        if response.status_code >= 400:
            raise LLMError(
                f"HTTP {response.status_code} from the model endpoint: {response.text[:300]}",
                model=self.model,
            )
        try:
            body = response.json()
        except ValueError:
            raise LLMError("the model endpoint answered with something that is not JSON") from None
        if not isinstance(body, dict):
            raise LLMError("the model endpoint answered with an unexpected shape")
        return body


# How each OpenAI-compatible endpoint constrains an answer, most exact first:
# - "json_schema": OpenAI's structured outputs, also llama.cpp's own server, vLLM, Ollama;
# - "json_object_schema": {"type": "json_object", "schema": …}, llama-cpp-python's server
#   (it compiles the schema to a grammar) — it refuses the first form;
# - "json_object": plain JSON mode; None: no response_format (the prompt asks for JSON).
FORMATS: tuple[str | None, ...] = ("json_schema", "json_object_schema", "json_object", None)
# The first format each endpoint (base URL, model, with or without a schema) accepted, so
# later calls do not ask again for what it refused. Per process.
_accepted_format: dict[tuple[str, str, bool], int] = {}
# Each endpoint's tokenizer: "llama-cpp-python", "llama.cpp" or "" (none, estimate).
_tokenizer: dict[str, str] = {}


def forget_endpoints() -> None:
    """Forget which response format and tokenizer each endpoint accepted (tests start a
    new server on a port an earlier one may have used)."""
    _accepted_format.clear()
    _tokenizer.clear()


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"][:300]
    if isinstance(error, str):
        return error[:300]
    return response.text[:300]


def _context_exceeded(response: httpx.Response) -> bool:
    """The endpoint refused the prompt as longer than its context window (OpenAI and
    llama-cpp-python say `context_length_exceeded`; llama.cpp `exceed_context_size`)."""
    text = response.text
    return "context_length_exceeded" in text or "exceed_context_size" in text


def _refuses_format(response: httpx.Response) -> bool:
    """The endpoint refused the response_format we asked for: a 400/422, or a 5xx whose
    error names response_format (llama-cpp-python answers a request it cannot validate
    with a 500). A prompt too long for the window is not such a refusal."""
    if _context_exceeded(response):
        return False
    if response.status_code in (400, 422):
        return True
    return response.status_code >= 500 and "response_format" in response.text


class OpenAIProvider(Provider):
    """Any OpenAI-compatible endpoint: POST {base}/chat/completions. The answer is
    constrained to the step's JSON schema in the first form the endpoint accepts
    (FORMATS), down to no response_format at all."""

    name = "openai"

    def _response_format(self, form: str | None, schema: dict | None) -> dict | None:
        if form == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
        if form == "json_object_schema":
            return {"type": "json_object", "schema": schema}
        if form == "json_object":
            return {"type": "json_object"}
        return None

    def _call(self, system: str, user: str, schema: dict | None, max_tokens: int | None) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        payload: dict = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
        }
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        url = f"{self.base_url}/chat/completions"
        key = (self.base_url, self.model, schema is not None)
        first = FORMATS.index("json_schema" if schema is not None else "json_object")
        start = max(first, _accepted_format.get(key, first))
        response = None
        for index in range(start, len(FORMATS)):
            response_format = self._response_format(FORMATS[index], schema)
            if response_format is None:
                payload.pop("response_format", None)
            else:
                payload["response_format"] = response_format
            last = index == len(FORMATS) - 1
            response = self._post(url, payload, headers, refused=None if last else _refuses_format)
            if last or not _refuses_format(response):
                if response.status_code < 400:
                    _accepted_format[key] = index
                break
            log.info(
                "endpoint refused response_format %s (HTTP %d); asking in the next form",
                FORMATS[index],
                response.status_code,
            )
        return self._json_or_error(response)

    def count_tokens(self, text: str) -> int:
        """The server's own count where it has a tokenizer endpoint — llama-cpp-python's
        POST /extras/tokenize/count, llama.cpp's POST /tokenize, beside /v1 — else the
        upper estimate. Which one works is remembered per endpoint. An endpoint that
        cannot be reached is tried as a call is (TRIES, with back-off), then LLMError."""
        root = self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        kind = _tokenizer.get(self.base_url)
        probes = {
            "llama-cpp-python": (f"{root}/extras/tokenize/count", {"input": text}),
            "llama.cpp": (f"{root}/tokenize", {"content": text}),
        }
        for name, (url, payload) in probes.items():
            if kind is not None and kind != name:
                continue
            # Any answer is final (a 404 means no such tokenizer); only silence is retried.
            response = self._post(url, payload, headers, refused=lambda response: True)
            count = _token_count(response)
            if count is not None:
                _tokenizer[self.base_url] = name
                return count
        _tokenizer[self.base_url] = ""
        return window.estimate_tokens(text)

    def _text_of(self, body: dict) -> str:
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            tokens_in, tokens_out = self._usage_of(body)
            raise LLMError(
                "the answer has no message content",
                model=self.model,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost=price(self.model, tokens_in, tokens_out),
            )
        return content

    def _usage_of(self, body: dict) -> tuple[int, int]:
        usage = body.get("usage") or {}
        return _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))

    def _was_cut(self, body: dict) -> bool:
        try:
            return body["choices"][0].get("finish_reason") == "length"
        except (KeyError, IndexError, TypeError, AttributeError):
            return False


def _token_count(response: httpx.Response) -> int | None:
    """The count in a tokenizer endpoint's answer ({"count": n} or {"tokens": [...]})."""
    if response.status_code != 200:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    if isinstance(body, dict) and isinstance(body.get("count"), int):
        return body["count"]
    if isinstance(body, dict) and isinstance(body.get("tokens"), list):
        return len(body["tokens"])
    return None


class AnthropicProvider(Provider):
    """Anthropic's messages API: POST {base}/v1/messages (or {base}/messages when the base
    already ends in /v1), x-api-key and anthropic-version headers."""

    name = "anthropic"

    def _call(self, system: str, user: str, schema: dict | None, max_tokens: int | None) -> dict:
        headers = {
            "Content-Type": "application/json",
            "x-api-key": self.api_key,
            "anthropic-version": ANTHROPIC_VERSION,
        }
        if max_tokens is None:
            max_tokens = int(settings.MEMORY_LLM_MAX_TOKENS)
        payload = {
            "model": self.model,
            "max_tokens": max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }
        base = self.base_url
        url = f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"
        return self._json_or_error(self._post(url, payload, headers))

    def _text_of(self, body: dict) -> str:
        blocks = body.get("content")
        if not isinstance(blocks, list):
            raise LLMError("the answer has no content", model=self.model)
        return "".join(
            block.get("text", "")
            for block in blocks
            if isinstance(block, dict) and block.get("type") == "text"
        )

    def _usage_of(self, body: dict) -> tuple[int, int]:
        usage = body.get("usage") or {}
        return _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))

    def _was_cut(self, body: dict) -> bool:
        return body.get("stop_reason") == "max_tokens"


def _int(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


class BadAnswer(ValueError):
    """The model answered, but not in the §13.1 shape."""


def get_provider() -> Provider | None:
    """The configured provider, or None when no model is configured (no MEMORY_LLM_MODEL,
    or an OpenAI-compatible provider without MEMORY_LLM_BASE_URL). Anthropic without a
    base URL talks to https://api.anthropic.com."""
    kind = settings.MEMORY_LLM_PROVIDER.strip().lower()
    model = settings.MEMORY_LLM_MODEL.strip()
    base_url = settings.MEMORY_LLM_BASE_URL.strip()
    api_key = settings.MEMORY_LLM_API_KEY
    timeout = float(settings.MEMORY_LLM_TIMEOUT)
    if not model:
        return None
    if kind == "anthropic":
        return AnthropicProvider(
            base_url=base_url or "https://api.anthropic.com",
            api_key=api_key,
            model=model,
            timeout=timeout,
        )
    if not base_url:
        return None
    return OpenAIProvider(base_url=base_url, api_key=api_key, model=model, timeout=timeout)
