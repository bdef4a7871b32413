"""Helpers for wiki tests (the fake model server, `fake_llm`, and `no_model` are in
tests/conftest.py)."""

from __future__ import annotations

import os
import time

from memory import workspace


def write_note(agent, name: str, text: str, *, age: float = 0) -> str:
    rel = agent.path(f"memory/{name}")
    workspace.write(rel, text)
    when = time.time() - age
    os.utime(workspace.resolve(rel), (when, when))
    return rel


def page_file(agent, folder: str, slug: str) -> str:
    return agent.path(f"memory/wiki/{folder}/{slug}.md")
