"""Helpers for consolidation tests: notes and MEMORY.md with chosen modification times,
the prompts a step sent (the fake model server, `fake_llm`, is in tests/conftest.py)."""

from __future__ import annotations

import datetime as dt
import os
import time

from memory import clock, notes, workspace
from tests.fakellm import FakeLLM


def day(offset: int) -> dt.date:
    """Today (the owner's) plus offset days."""
    return clock.today() + dt.timedelta(days=offset)


def set_mtime(rel: str, when: float) -> None:
    path = workspace.resolve(rel)
    os.utime(path, (when, when))


def write_memory(agent, text: str, *, age: float = 8 * 86400) -> str:
    """MEMORY.md written `age` seconds ago: by default eight days ago, older than every
    note of the week a consolidation reads (its first run reads the notes since MEMORY.md
    last changed, SPEC §8)."""
    rel = notes.memory_path(agent)
    workspace.write(rel, text)
    set_mtime(rel, time.time() - age)
    return rel


def write_note(agent, name: str, text: str, *, age: float = 0) -> str:
    rel = agent.path(f"memory/{name}")
    workspace.write(rel, text)
    set_mtime(rel, time.time() - age)
    return rel


def rewrite_answer(memory: str, *reasons: tuple[str, str, str]) -> dict:
    return {
        "memory": memory,
        "reasons": [{"line": line, "action": action, "why": why} for line, action, why in reasons],
    }


def step_prompts(fake: FakeLLM, step: str) -> list[str]:
    """The user prompts of the requests one step made ("consolidate" or "hygiene"), told
    apart by their system prompt — the chained wiki compile talks to the same fake."""
    from memory.jobs.llm import load_prompt

    system = load_prompt(f"{step}_system.md")
    found = []
    for request in fake.requests:
        messages = request.body.get("messages") or []
        if any(m.get("role") == "system" and m.get("content") == system for m in messages):
            found.append(next(m["content"] for m in messages if m.get("role") == "user"))
    return found
