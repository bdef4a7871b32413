"""The tool loop of docs/examples/ against the real model of this suite (SPEC §16): the
official OpenAI SDK talking to llama-cpp-python's server, the memory over real HTTP.

A small local server calls a tool only when `tool_choice` names it, answers within
`max_tokens`, and reads the assistant's tool-call message back only when it has its
`content`: the example names the first tool (TOOL_CHOICE), bounds the turn to five calls
(the last without tools) and keeps `content` on every message. The model's words are not
judged: what is proven is that the turn runs, calls the memory and ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory import clock
from memory.models import ApiToken
from tests.model.conftest import ALIAS, FIGURES

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "openai_tool_loop.py"
pytestmark = pytest.mark.django_db(transaction=True)


def test_the_openai_tool_loop_runs_against_the_llama_cpp_server(
    live_server, master, workspace, model_server
):
    (workspace / "MEMORY.md").write_text("- the owner runs on Tuesdays\n")
    key = ApiToken.issue(agent=master)[1]
    model_server.wait_idle()
    before = model_server.requests()
    env = {
        **os.environ,
        "MEMORY_URL": live_server.url,
        "MEMORY_TOKEN": key,
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": "none",
        "MODEL": ALIAS,
        "TOOL_CHOICE": "memory_save",
        "MAX_TOKENS": "64",
    }
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "conv-1", "turn-1", "I ran 5 km today, save it."],
        env=env, capture_output=True, text=True, timeout=1100,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    calls = model_server.requests() - before
    FIGURES.append(
        f"docs/examples/openai_tool_loop.py: {calls} model call(s), "
        f"{time.monotonic() - began:.0f} s, answer {done.stdout.strip()[:60]!r}"
    )
    assert 2 <= calls <= 5  # the forced call, then the model's own until it answers
    # The forced tool call reached the memory: a line in today's note.
    note = (workspace / "memory" / f"{clock.today().isoformat()}.md").read_text()
    assert note.startswith(f"# {clock.today().isoformat()}\n\n- ")
