"""Fixtures for wiki tests: page helpers and the fake model server (real HTTP)."""

from __future__ import annotations

import os
import time

import pytest

from memory import workspace
from tests.fakellm import FakeLLM


@pytest.fixture
def fake_llm(settings):
    """An OpenAI-compatible fake at MEMORY_LLM_BASE_URL, fast retries, short timeout."""
    server = FakeLLM().start()
    settings.MEMORY_LLM_PROVIDER = "openai"
    settings.MEMORY_LLM_BASE_URL = server.base_url
    settings.MEMORY_LLM_API_KEY = "sk-test"
    settings.MEMORY_LLM_MODEL = "gpt-4o-mini"
    settings.MEMORY_LLM_TIMEOUT = 2
    settings.MEMORY_LLM_RETRY_DELAY = 0.01
    yield server
    server.stop()


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
