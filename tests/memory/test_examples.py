"""The tool loops of docs/examples/, each under 40 lines, run end to end: the official
OpenAI / Anthropic SDK against the fake model server's tool-call path, the memory over
real HTTP. What each provider receives is the format export, and the tool results carry
what the memory answered."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory import clock
from memory.models import ApiToken
from proposals.models import Proposal
from tests.fakellm import FakeLLM, Reply

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def model():
    server = FakeLLM().start()
    yield server
    server.stop()


def run_example(name, *args, live_server, model, key) -> str:
    env = {
        **os.environ,
        "MEMORY_URL": live_server.url,
        "MEMORY_TOKEN": key,
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "sk-test",
        "ANTHROPIC_BASE_URL": model.base_url.removesuffix("/v1"),
        "ANTHROPIC_API_KEY": "sk-ant-test",
    }
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_every_example_is_under_40_lines(name):
    assert len((EXAMPLES / name).read_text().splitlines()) < 40


@pytest.fixture
def memory_home(master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "MEMORY.md").write_text("# Memory\n- the owner runs on Tuesdays\n")
    return workspace


CALLS = [
    {"name": "memory_search", "arguments": {"query": "tuesdays"}},
    {"name": "memory_save", "arguments": {"text": "asked about running"}},
]


@pytest.mark.parametrize(
    "example, format, path",
    [
        ("openai_tool_loop.py", "openai", "/v1/chat/completions"),
        ("anthropic_tool_loop.py", "anthropic", "/v1/messages"),
    ],
)
def test_a_tool_loop_runs_the_models_calls_against_the_memory(
    live_server, model, master, memory_home, owner_client, example, format, path
):
    key = ApiToken.issue(agent=master)[1]
    model.script(Reply(tool_calls=CALLS), "You run on Tuesdays.")
    out = run_example(example, "conv-1", "turn-1", "When do I run?", live_server=live_server,
                      model=model, key=key)  # fmt: skip
    assert out.strip() == "You run on Tuesdays."
    first, second = model.requests
    assert first.path.startswith(path)
    exported = owner_client.get("/api/agents/master/tools", {"format": format}).json()
    assert first.body["tools"] == exported
    system = first.body["messages"][0]["content"] if format == "openai" else first.body["system"]
    assert "## MEMORY.md" in system
    # What small local servers need too (llama.cpp): a bound on the answer, the tool
    # choice stated, and the assistant's tool-call message sent back with its content.
    assert first.body["max_tokens"] == 1024
    assert first.body["tool_choice"] in ("auto", {"type": "auto"})
    (assistant,) = [m for m in second.body["messages"] if m["role"] == "assistant"]
    assert "content" in assistant
    # The second request carries both tool results.
    sent = str(second.body["messages"])
    assert "[MEMORY.md:2] (# Memory) - the owner runs on Tuesdays" in sent
    assert "Saved to memory/" in sent
    note = (memory_home / "memory" / f"{clock.today().isoformat()}.md").read_text()
    assert "asked about running" in note


def test_a_job_tokens_loop_only_proposes(live_server, model, master, memory_home):
    key = ApiToken.issue(agent=master, job="nightly")[1]
    fact = {"name": "runs", "description": "runs on Tuesdays", "type": "preference", "body": ""}
    model.script(Reply(tool_calls=[{"name": "user_memory_save", "arguments": fact}]), "Noted.")
    run_example("openai_tool_loop.py", "c", "t", "note it", live_server=live_server,
                model=model, key=key)  # fmt: skip
    assert Proposal.objects.get().source == "job:nightly"
    assert "Proposed for review" in str(model.requests[1].body["messages"])
    assert not (memory_home / "users/owner/facts/runs.md").exists()


def test_the_memory_tool_loop_edits_memory_md_through_the_endpoint(
    live_server, model, master, memory_home
):
    key = ApiToken.issue(agent=master)[1]
    model.script(
        Reply(
            tool_calls=[
                {"name": "memory", "arguments": {"command": "view", "path": "/memories"}},
                {
                    "name": "memory",
                    "arguments": {
                        "command": "str_replace",
                        "path": "/memories/MEMORY.md",
                        "old_str": "Tuesdays",
                        "new_str": "Tuesdays and Fridays",
                    },
                },
                {"name": "memory", "arguments": {"command": "view", "path": "/memories/../x"}},
            ]
        ),
        "Updated.",
    )
    out = run_example("anthropic_memory_tool.py", "I run on Fridays too.",
                      live_server=live_server, model=model, key=key)  # fmt: skip
    assert out.strip() == "Updated."
    assert model.requests[0].body["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = model.requests[1].body["messages"][-1]["content"]
    assert results[0]["content"].startswith("Here're the files and directories")
    assert results[1]["content"].startswith("The memory file has been edited.")
    assert results[2]["is_error"] is True
    assert "Tuesdays and Fridays" in (memory_home / "MEMORY.md").read_text()
