"""Fixtures for wiki tests: page helpers and `no_model` (the fake model server,
`fake_llm`, is in tests/conftest.py)."""

from __future__ import annotations

import os
import time

import pytest

from memory import workspace


@pytest.fixture
def no_model(settings):
    settings.MEMORY_LLM_MODEL = ""
    settings.MEMORY_LLM_BASE_URL = ""


def write_note(agent, name: str, text: str, *, age: float = 0) -> str:
    rel = agent.path(f"memory/{name}")
    workspace.write(rel, text)
    when = time.time() - age
    os.utime(workspace.resolve(rel), (when, when))
    return rel


def page_file(agent, folder: str, slug: str) -> str:
    return agent.path(f"memory/wiki/{folder}/{slug}.md")
