"""The tool registry (SPEC §16): schemas and descriptions from files, argument validation
before a tool runs, and the memory tools as plain functions."""

from __future__ import annotations

import json

import pytest

from memory import tools

MEMORY_TOOLS = [
    "memory_save",
    "memory_search",
    "memory_get",
    "user_memory_save",
    "user_memory_forget",
]


@pytest.fixture
def registry():
    """Restore the registry after a test registers its own tools."""
    tools.list_tools()
    saved = dict(tools._registry)
    yield
    with tools._registry_lock:
        tools._registry.clear()
        tools._registry.update(saved)


def write_tool_files(tmp_path, name, schema):
    schema_file = tmp_path / f"{name}.json"
    schema_file.write_text(json.dumps(schema))
    description_file = tmp_path / f"{name}.md"
    description_file.write_text(f"The {name} tool, as the model reads it.\n")
    return schema_file, description_file


def test_it_lists_every_memory_tool_with_its_description_from_its_file():
    listed = {tool["name"]: tool for tool in tools.list_tools()}
    assert set(MEMORY_TOOLS) <= set(listed)
    for name in MEMORY_TOOLS:
        description = (tools.PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8").strip()
        assert listed[name]["description"] == description
        schema = json.loads((tools.PROMPTS_DIR / f"{name}.json").read_text(encoding="utf-8"))
        parameters = listed[name]["parameters"]
        assert parameters["type"] == "object"
        assert parameters["additionalProperties"] is False
        assert parameters == schema  # as in the file: no `source` added (SPEC §16)
        assert "source" not in parameters["properties"]


def test_it_lists_the_memory_tools_first_in_a_stable_order():
    assert [tool["name"] for tool in tools.list_tools()][:5] == MEMORY_TOOLS


def test_its_descriptions_carry_the_guidance_the_spec_asks_for():
    listed = {tool["name"]: tool["description"] for tool in tools.list_tools()}
    assert "already in your prompt" in listed["memory_search"]
    assert "today and yesterday" in listed["memory_search"]
    assert "a measurement, a decision made today" in listed["memory_save"]
    assert "USER.md" in listed["user_memory_save"]
    assert "scheduled job" in listed["user_memory_save"]
    assert "120 lines / 12,000 characters" in listed["memory_get"]


# llama-index refuses a tool description over 1,024 characters; OpenAI's function
# descriptions have the same ceiling in several SDKs (SPEC §16).
DESCRIPTION_LIMIT = 1024


def test_every_tool_description_fits_the_clients_limit():
    described = {
        tool.name: tool.description for tool in tools.registered_tools(include_mcp_only=True)
    }
    assert {"memory_search", "memory_context", "wiki_apply"} <= set(described)
    too_long = {
        name: len(text) for name, text in described.items() if len(text) > DESCRIPTION_LIMIT
    }
    assert too_long == {}


def test_it_hands_out_copies_of_the_schemas():
    first = tools.list_tools()
    first[0]["parameters"]["properties"].clear()
    assert tools.list_tools()[0]["parameters"]["properties"]


def test_run_tool_turns_a_refusal_into_an_error_text_for_the_model(master):
    answer = tools.run_tool(master, "memory_get", {"path": "../x.md"}, source="chat")
    assert answer.startswith("Error: A path may not contain empty, '.' or '..' parts")


# --- registering --------------------------------------------------------------------------


def echo(agent, *, source, word, times=1):
    return f"{agent.id} {source} " + " ".join([word] * times)


ECHO_SCHEMA = {
    "type": "object",
    "properties": {
        "word": {"type": "string", "minLength": 1},
        "times": {"type": "integer", "minimum": 1, "maximum": 3},
    },
    "required": ["word"],
    "additionalProperties": False,
}


ECHO = tools.ToolSpec("echo", echo, "Echo", read_only=True)


def test_it_registers_a_tool_from_files_and_hands_it_the_callers_source(registry, tmp_path, master):
    schema_file, description_file = write_tool_files(tmp_path, "echo", ECHO_SCHEMA)
    tools.register_tool(ECHO, schema_file=schema_file, description_file=description_file)
    listed = {tool["name"]: tool for tool in tools.list_tools()}
    assert listed["echo"]["description"] == "The echo tool, as the model reads it."
    assert listed["echo"]["parameters"]["required"] == ["word"]
    assert listed["echo"]["title"] == "Echo"
    assert listed["echo"]["annotations"]["readOnlyHint"] is True
    assert tools.call_tool(master, "echo", {"word": "hi", "times": 2}, source="web") == (
        "master web hi hi"
    )


def test_it_refuses_a_schema_with_a_source_argument(registry, tmp_path):
    schema = {
        **ECHO_SCHEMA,
        "properties": {**ECHO_SCHEMA["properties"], "source": {"type": "string"}},
    }
    schema_file, description_file = write_tool_files(tmp_path, "echo", schema)
    with pytest.raises(ValueError, match="may not have a `source` argument"):
        tools.register_tool(ECHO, schema_file=schema_file, description_file=description_file)


def test_registering_twice_replaces_instead_of_duplicating(registry, tmp_path):
    schema_file, description_file = write_tool_files(tmp_path, "echo", ECHO_SCHEMA)
    for _ in range(2):
        tools.register_tool(ECHO, schema_file=schema_file, description_file=description_file)
    names = [tool["name"] for tool in tools.list_tools()]
    assert names.count("echo") == 1
    assert names[:5] == MEMORY_TOOLS


def test_it_refuses_a_schema_with_keywords_it_cannot_check(registry, tmp_path):
    schema = {**ECHO_SCHEMA, "properties": {"word": {"type": "string", "pattern": "^a"}}}
    schema_file, description_file = write_tool_files(tmp_path, "echo", schema)
    with pytest.raises(ValueError, match="unsupported schema keywords"):
        tools.register_tool(ECHO, schema_file=schema_file, description_file=description_file)
    assert "echo" not in [tool["name"] for tool in tools.list_tools()]


def test_it_validates_arrays_and_their_items():
    schema = {
        "type": "object",
        "properties": {
            "sources": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        },
        "required": ["sources"],
        "additionalProperties": False,
    }
    assert tools.validate({"sources": ["note:2026-11-30"]}, schema) == []
    assert tools.validate({"sources": []}, schema) == ["sources must have at least 1 items."]
    assert tools.validate({"sources": ["a", 2]}, schema) == ["sources[1] must be of type string."]


def test_a_very_long_wiki_title_is_422_from_the_tool(master, workspace):
    answer = tools.run_tool(
        master,
        "wiki_apply",
        {"title": "東京" * 60, "kind": "entity", "sources": ["note:2026-01-01"], "body": "x"},
        source="chat",
    )
    assert answer.startswith("Error:")
    assert not (workspace / "memory/wiki").exists() or not list(
        (workspace / "memory/wiki").rglob("*.md")
    )


def test_a_lone_surrogate_is_an_error_string_for_a_tool_loop(workspace, master):
    """SPEC §17 through run_tool, what an SDK's tool loop calls (over REST:
    tests/spec/test_s17_errors.py)."""
    fact = {"name": "bad", "description": "x\ud800y", "type": "preference", "body": "b"}
    loop = tools.run_tool(master, "user_memory_save", fact, source="chat")
    assert loop.startswith("Error:") and "lone surrogate" in loop
    saved = tools.run_tool(master, "memory_save", {"text": "a\udfffb"}, source="chat")
    assert "lone surrogate" in saved
    assert not (workspace / "users/owner/facts/bad.md").exists()
    assert not (workspace / "memory").exists() or not list((workspace / "memory").iterdir())


@pytest.mark.parametrize("name", ["user_memory_save", "user_memory_forget", "memory_save"])
def test_a_write_tool_s_description_fits_1024_characters_and_asks_for_a_reason(name):
    from memory.tools import PROMPTS_DIR

    text = (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8")
    assert len(text) <= 1024
    if name != "memory_save":  # written at once, never a proposal: no reason to give
        assert "`reason`" in text
