"""Model providers (SPEC §13): one small interface over real HTTP.

`get_provider()` reads the MEMORY_LLM_* settings and returns an `OpenAIProvider` (any
OpenAI-compatible endpoint) or an `AnthropicProvider`, or None when no model is
configured — callers then record their run as `skipped` with NO_MODEL. A provider has one
method, `complete_json(system, user) -> Answer`: it asks for one JSON object (§13.1),
strips a Markdown code fence, and returns the parsed object with the token usage the
endpoint reported and its cost from MEMORY_LLM_PRICES. Anything else raises `LLMError`,
which carries whatever usage was reported before the failure.

Validating the keys of the answer belongs to each step (consolidation, hygiene, compile):
its parser raises `BadAnswer`. The run bookkeeping around a call (heartbeat, usage, the
failure as the run's summary) is `memory.jobs.runs.ask_for_run`.
Prompt text lives in files under memory/prompts/ (or another app's prompts directory:
`load_prompt`, `render_prompt`).
"""

from __future__ import annotations

import json
import logging
import re
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import httpx
from django.conf import settings

log = logging.getLogger(__name__)

NO_MODEL = "no model configured"
PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
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


def price(model: str, tokens_in: int, tokens_out: int) -> Decimal:
    """US dollars for this usage from MEMORY_LLM_PRICES ({model: ($/Mtok in, $/Mtok out)}).
    A model missing from the table costs 0 (a local server is free)."""
    prices = getattr(settings, "MEMORY_LLM_PRICES", {}) or {}
    rates = prices.get(model)
    if rates is None:
        return Decimal("0")
    rate_in, rate_out = (Decimal(str(rate)) for rate in rates)
    total = (rate_in * tokens_in + rate_out * tokens_out) / Decimal(1_000_000)
    return total.quantize(Decimal("0.000001"))


_FENCE_RE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\n(?P<body>.*?)\n?[ \t]*```\s*\Z", re.DOTALL)


def strip_fence(text: str) -> str:
    """The text inside one Markdown code fence (```json … ```), or the text itself."""
    match = _FENCE_RE.match(text)
    return match.group("body") if match else text.strip()


def parse_json_object(text: str) -> dict:
    """One JSON object, optionally fenced. Raises ValueError otherwise."""
    data = json.loads(strip_fence(text))
    if not isinstance(data, dict):
        raise ValueError("the answer is JSON but not an object")
    return data


def load_prompt(name: str, directory: Path = PROMPTS_DIR) -> str:
    """The text of <directory>/<name> (memory/prompts/ unless another app's is given)."""
    return (directory / name).read_text(encoding="utf-8")


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

    # --- the one public method -------------------------------------------------------

    def complete_json(self, system: str, user: str) -> Answer:
        """Ask for one JSON object. Returns an Answer; raises LLMError on HTTP errors
        (after retries), timeouts and answers that are not one JSON object."""
        body = self._call(system, user)
        text = self._text_of(body)
        model = str(body.get("model") or self.model)
        tokens_in, tokens_out = self._usage_of(body)
        cost = price(self.model, tokens_in, tokens_out)
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

    # --- HTTP --------------------------------------------------------------------------

    @abstractmethod
    def _call(self, system: str, user: str) -> dict: ...

    @abstractmethod
    def _text_of(self, body: dict) -> str: ...

    @abstractmethod
    def _usage_of(self, body: dict) -> tuple[int, int]: ...

    def _post(self, url: str, payload: dict, headers: dict[str, str]) -> httpx.Response:
        """POST with retries: 429, 5xx and connection errors are tried TRIES times with
        exponential backoff (MEMORY_LLM_RETRY_DELAY, doubled each time). Timeouts are not
        retried — a slow model would multiply the wait. Any other 4xx is returned to the
        caller, which decides (e.g. the JSON-mode fallback)."""
        base_delay = float(getattr(settings, "MEMORY_LLM_RETRY_DELAY", 1.0))
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
            if response.status_code == 429 or response.status_code >= 500:
                last_error = f"HTTP {response.status_code} from {url}"
                log.warning("model call failed (try %d/%d): %s", attempt + 1, TRIES, last_error)
                continue
            return response
        raise LLMError(f"{last_error} (after {TRIES} tries)", model=self.model)

    def _json_or_error(self, response: httpx.Response) -> dict:
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


class OpenAIProvider(Provider):
    """Any OpenAI-compatible endpoint: POST {base}/chat/completions, JSON mode asked for
    and dropped once if the endpoint rejects it with a 400."""

    name = "openai"

    def _call(self, system: str, user: str) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        payload = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "response_format": {"type": "json_object"},
        }
        url = f"{self.base_url}/chat/completions"
        response = self._post(url, payload, headers)
        if response.status_code == 400:
            # Some servers (older llama.cpp, some vLLM builds) refuse response_format;
            # the prompt asks for JSON anyway.
            log.info("endpoint refused JSON mode; asking again without it")
            payload.pop("response_format")
            response = self._post(url, payload, headers)
        return self._json_or_error(response)

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


class AnthropicProvider(Provider):
    """Anthropic's messages API: POST {base}/v1/messages (or {base}/messages when the base
    already ends in /v1), x-api-key and anthropic-version headers."""

    name = "anthropic"

    def _call(self, system: str, user: str) -> dict:
        headers = {
            "Content-Type": "application/json",
            "x-api-key": self.api_key,
            "anthropic-version": ANTHROPIC_VERSION,
        }
        payload = {
            "model": self.model,
            "max_tokens": int(getattr(settings, "MEMORY_LLM_MAX_TOKENS", 8192)),
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


def _int(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


class BadAnswer(ValueError):
    """The model answered, but not in the §13.1 shape."""


def get_provider() -> Provider | None:
    """The configured provider, or None when no model is configured (no MEMORY_LLM_MODEL,
    or an OpenAI-compatible provider without MEMORY_LLM_BASE_URL). Anthropic without a
    base URL talks to https://api.anthropic.com."""
    kind = (getattr(settings, "MEMORY_LLM_PROVIDER", "") or "openai").strip().lower()
    model = (getattr(settings, "MEMORY_LLM_MODEL", "") or "").strip()
    base_url = (getattr(settings, "MEMORY_LLM_BASE_URL", "") or "").strip()
    api_key = getattr(settings, "MEMORY_LLM_API_KEY", "") or ""
    timeout = float(getattr(settings, "MEMORY_LLM_TIMEOUT", 120))
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
