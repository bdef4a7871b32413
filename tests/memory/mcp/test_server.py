"""memory/mcp/server.py in this process: the tool calls and resource reads the MCP
transports hand to it (the transports themselves: tests/memory/mcp/test_mcp_server.py)."""

from __future__ import annotations

import unicodedata

import pytest

from memory.mcp.server import call_tool_now, read_resource_now
from memory.models import ApiToken
from memory.presence import Caller
from tests.hand_written import snapshot, write_hand_written

NFC = unicodedata.normalize("NFC", "sách-đang-đọc.md")
NFD = unicodedata.normalize("NFD", "sách-đang-đọc.md")


@pytest.mark.parametrize("spelling", [NFC, NFD])
def test_either_spelling_reads_the_one_file(master, workspace, spelling):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / NFD).write_text("# Sách\n\n- Dune, đọc xong\n", encoding="utf-8")
    caller = Caller(agent_id="master")
    got = call_tool_now(caller, "memory_get", {"path": f"memory/{spelling}"})
    assert not got.is_error and "Dune" in got.content[0].text
    resource = read_resource_now(caller, f"memory://agents/master/memory/{spelling}")
    assert "Dune" in resource


@pytest.fixture
def hand_written(workspace, master, helper_agent, owner_today):
    return write_hand_written(workspace, owner_today)


def test_no_mcp_read_writes_to_the_workspace(hand_written, master):
    """GETs never write (tests/spec/test_s01_workspace_layout.py): nor does any MCP read."""
    ApiToken.issue(agent=master)
    caller = Caller(agent_id="master")
    before = snapshot(hand_written)
    nfc = unicodedata.normalize("NFC", "sách-đang-đọc.md")
    for name, arguments in [
        ("memory_search", {"query": "minh"}),
        ("memory_get", {"path": "MEMORY.md"}),
        ("memory_get", {"path": "memory/2026-11-29.md"}),
        ("memory_get", {"path": f"memory/{nfc}"}),
        ("memory_get", {"path": "users/owner/facts/coffee.md"}),
        ("wiki_get", {"title": "Hạn Eco"}),
        ("wiki_search", {"query": "minh"}),
    ]:
        result = call_tool_now(caller, name, arguments)
        assert not result.is_error, (name, result.content[0].text)
        assert snapshot(hand_written) == before, name
    for uri in [
        "memory://user/USER.md",
        "memory://user/facts/INDEX.md",
        "memory://user/facts/coffee.md",
        "memory://agents/master/MEMORY.md",
        "memory://agents/master/memory/2026-11-29.md",
    ]:
        read_resource_now(caller, uri)
        assert snapshot(hand_written) == before, uri


def test_a_lone_surrogate_is_an_error_and_writes_nothing(workspace, master):
    """SPEC §17 over MCP (over REST: tests/spec/test_s17_errors.py)."""
    fact = {"name": "bad", "description": "x\ud800y", "type": "preference", "body": "b"}
    mcp = call_tool_now(Caller(agent_id="master"), "user_memory_save", fact)
    assert mcp.is_error and "lone surrogate" in mcp.content[0].text
    assert not (workspace / "users/owner/facts/bad.md").exists()


def _context_text(caller, **arguments) -> str:
    result = call_tool_now(caller, "memory_context", {"conversation": "c1", **arguments})
    assert not result.is_error, result.content[0].text
    assert result.structured_content is None  # one copy: the text (SPEC §16)
    return result.content[0].text


def test_a_runtime_that_injects_user_and_memory_md_gets_the_context_without_them(
    workspace, master, owner_today
):
    """SPEC §4.2: OpenClaw puts its workspace's USER.md and MEMORY.md in the prompt itself;
    its connection (X-Memory-Runtime, mcp --runtime) names it, and they are left out."""
    (workspace / "USER.md").write_text("# USER.md\n\n- Name: Sam\n")
    (workspace / "MEMORY.md").write_text("# MEMORY.md\n\n- The NAS holds the backups\n")
    (workspace / "users/owner/facts").mkdir(parents=True)
    (workspace / "users/owner/facts/INDEX.md").write_text("- [tea](tea.md) (preference) — tea\n")
    (workspace / "memory").mkdir()
    (workspace / f"memory/{owner_today}.md").write_text(f"# {owner_today}\n\n- 09:00 standup\n")
    plain = _context_text(Caller(agent_id="master"))
    assert "## USER.md\n# USER.md" in plain and "## MEMORY.md\n# MEMORY.md" in plain
    for caller, arguments in [
        (Caller(agent_id="master", runtime="openclaw"), {}),
        (Caller(agent_id="master"), {"runtime": "openclaw"}),  # the model may name it too
    ]:
        text = _context_text(caller, conversation=f"c-{bool(arguments)}", **arguments)
        assert "USER.md" not in text and "MEMORY.md" not in text and "Sam" not in text
        assert "## INDEX.md\n- [tea](tea.md)" in text and "09:00 standup" in text
    refused = call_tool_now(Caller(agent_id="master"), "memory_context",
                            {"conversation": "c2", "runtime": "hermes"})  # fmt: skip
    assert refused.is_error and "runtime" in refused.content[0].text


def test_the_instructions_name_only_what_the_model_can_do():
    """Prompts are chosen by the user, not the model (MCP): the server's instructions name
    tools only, each one it serves."""
    import re

    from memory.mcp.server import PROMPTS, instructions
    from memory.tools import registered_tools

    text = instructions()
    named = set(re.findall(r"\b[a-z]+_[a-z_]+\b", text))
    assert named and named <= {tool.name for tool in registered_tools(include_mcp_only=True)}
    assert not any(prompt.name in text for prompt in PROMPTS)
    assert "prompt" not in text


@pytest.mark.parametrize(
    "name, arguments",
    [
        ("memory_save", {"text": "a\x00b"}),
        ("memory_context", {"conversation": "tg-1", "turn": "t\x00"}),
        ("user_memory_save", {"name": "n", "description": "d\x00", "type": "preference",
                              "body": "b"}),
        ("memory_get", {"path": "MEMORY.md", "from_line": 2**63}),
    ],
)  # fmt: skip
def test_nul_and_numbers_past_64_bits_are_errors_over_mcp(workspace, master, name, arguments):
    """SPEC §17 over MCP: a NUL went through the tools to today's note (and on PostgreSQL
    broke the context); the same check as REST, in the tool dispatcher."""
    before = snapshot(workspace)
    result = call_tool_now(Caller(agent_id="master"), name, arguments)
    assert result.is_error
    assert "NUL character" in result.content[0].text or "out of range" in result.content[0].text
    assert snapshot(workspace) == before
