"""The model's context window (SPEC §13): a prompt must fit it with room left for the
answer, or the run fails before any call — never a truncated answer taken as a rewrite.

MEMORY_LLM_CONTEXT_TOKENS gives the window in tokens (0 or unset: not known — the
budgets of SPEC §8 apply as they are and nothing is counted; the endpoint itself refuses
a prompt that is too long). With a window M:

- **Room for the answer:** R = min(MEMORY_LLM_MAX_TOKENS, M // 4) tokens are kept free;
  the prompt may take the rest, and the call asks for at most M − N tokens of answer
  (capped at MEMORY_LLM_MAX_TOKENS), N being the prompt's tokens.
- **The budget follows the window:** each step builds its prompt at a size — the
  characters of the notes block (7 days within 40,000 characters at most, SPEC §8), or
  the number of facts shown (§9) — and `fit` picks the largest size whose prompt fits.
- **Still too long** (the smallest useful prompt does not fit): `PromptTooLong`,
  "prompt too long for model (N tokens, window M)", and the run fails with it.

Counting: the provider's `count_tokens` — the server's own tokenizer where it has one
(llama.cpp, llama-cpp-python), else `estimate_tokens`, which is an upper bound: one
token per UTF-8 byte. Byte-level BPE tokenizers (GPT, Llama 3, SmolLM2, …) and
SentencePiece with byte fallback never make more tokens than the text has bytes, so the
estimate can only be too cautious (about 3.7 times for English prose with SmolLM2's
49,152-token vocabulary, 1.7 for Vietnamese, exact for a run of digits). Each prompt adds
TEMPLATE_TOKENS for the chat template's own tokens (role markers, BOS) around the two
messages, which neither count sees.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from django.conf import settings

TEMPLATE_TOKENS = 64  # ChatML (SmolLM2, Qwen) adds 12; Llama 3's header with dates ~30

P = TypeVar("P")


class Counter(Protocol):
    def count_tokens(self, text: str) -> int: ...


def context_tokens() -> int | None:
    """The configured window in tokens, or None when it is not known."""
    value = int(settings.MEMORY_LLM_CONTEXT_TOKENS)
    return value if value > 0 else None


def answer_room(window: int) -> int:
    """Tokens of the window kept free for the answer."""
    cap = int(settings.MEMORY_LLM_MAX_TOKENS)
    return max(1, min(cap, window // 4))


def estimate_tokens(text: str) -> int:
    """An upper bound on the tokens of `text` for any byte-level tokenizer: its UTF-8
    bytes."""
    return len(text.encode("utf-8"))


class PromptTooLong(Exception):
    """The smallest prompt a step can make does not fit the model's window."""

    def __init__(self, tokens: int, window: int, room: int) -> None:
        self.tokens = tokens
        self.window = window
        self.room = room
        self.message = (
            f"prompt too long for model ({tokens} tokens, window {window}); "
            f"{room} tokens must stay free for the answer"
        )
        super().__init__(self.message)


@dataclass(frozen=True)
class Fitted(Generic[P]):
    """The prompt chosen: what `build` made at `size`, its tokens (None when no window is
    set, nothing counted) and the answer's token limit to ask for (None: the endpoint's)."""

    prompt: P
    size: int
    tokens: int | None = None
    max_tokens: int | None = None


def fit(
    counter: Counter,
    build: Callable[[int], P],
    texts: Callable[[P], tuple[str, str]],
    *,
    largest: int,
    smallest: int,
    step: int = 1,
) -> Fitted[P]:
    """The prompt of the largest size in [smallest, largest] (to within `step`) that fits
    the window with the answer's room. `build(size)` makes a prompt, `texts(prompt)` its
    (system, user) messages. Without a configured window: `build(largest)`, uncounted.
    Raises PromptTooLong when even `build(smallest)` does not fit."""
    window = context_tokens()
    if window is None:
        return Fitted(build(largest), largest)
    room = answer_room(window)
    limit = window - room

    def tokens_of(prompt: P) -> int:
        system, user = texts(prompt)
        return counter.count_tokens(f"{system}\n{user}") + TEMPLATE_TOKENS

    def fitted(prompt: P, size: int, tokens: int) -> Fitted[P]:
        cap = int(settings.MEMORY_LLM_MAX_TOKENS)
        return Fitted(prompt, size, tokens, min(cap, window - tokens))

    prompt = build(largest)
    tokens = tokens_of(prompt)
    if tokens <= limit:
        return fitted(prompt, largest, tokens)
    low = max(0, min(smallest, largest))
    best = build(low)
    best_tokens = tokens_of(best)
    if best_tokens > limit:
        raise PromptTooLong(best_tokens, window, room)
    best_size = low
    high = largest  # does not fit
    while high - low > step:
        middle = (low + high) // 2
        prompt = build(middle)
        tokens = tokens_of(prompt)
        if tokens <= limit:
            low, best, best_size, best_tokens = middle, prompt, middle, tokens
        else:
            high = middle
    return fitted(best, best_size, best_tokens)
