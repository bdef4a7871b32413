"""GET /api/agents/{id}/tools?format=… : the one registry in each provider's documented
shape (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, MCP tools/list)."""

from __future__ import annotations

import pytest

NAMES = {
    "memory_save", "memory_search", "memory_get", "user_memory_save", "user_memory_forget",
    "wiki_get", "wiki_search", "wiki_apply",
}  # fmt: skip


def listed(client, format):
    response = client.get("/api/agents/master/tools", {"format": format})
    assert response.status_code == 200
    return response.json()


def no_source_anywhere(value) -> bool:
    if isinstance(value, dict):
        return "source" not in value.get("properties", {}) and all(
            no_source_anywhere(v) for v in value.values()
        )
    if isinstance(value, list):
        return all(no_source_anywhere(v) for v in value)
    return True


def test_openai_chat_completions_shape(master_client):
    tools = listed(master_client, "openai")
    assert {tool["function"]["name"] for tool in tools} == NAMES
    for tool in tools:
        assert set(tool) == {"type", "function"} and tool["type"] == "function"
        assert set(tool["function"]) == {"name", "description", "parameters", "strict"}
        assert tool["function"]["parameters"]["type"] == "object"
    assert no_source_anywhere(tools)


def test_strict_only_where_the_schema_allows_it(master_client):
    strict = {t["function"]["name"]: t["function"] for t in listed(master_client, "openai")}
    # Every argument required → strict, without the keywords strict mode lacks.
    assert strict["memory_save"]["strict"] is True
    text = strict["memory_save"]["parameters"]["properties"]["text"]
    assert "maxLength" not in text and "minLength" not in text
    assert strict["user_memory_save"]["strict"] is True
    # An optional argument that may be null is required and nullable in the strict export.
    saved = strict["user_memory_save"]["parameters"]
    assert "reason" in saved["required"] and saved["properties"]["reason"]["type"] == [
        "string",
        "null",
    ]
    # Optional arguments → not strict, schema as it is.
    assert strict["memory_get"]["strict"] is False
    assert strict["memory_search"]["strict"] is False
    assert strict["wiki_apply"]["strict"] is False
    for function in strict.values():
        if function["strict"]:
            params = function["parameters"]
            assert params["additionalProperties"] is False
            assert set(params["required"]) == set(params["properties"])


def test_responses_shape_is_flat_with_strict(master_client):
    tools = listed(master_client, "responses")
    assert {tool["name"] for tool in tools} == NAMES
    for tool in tools:
        assert set(tool) == {"type", "name", "description", "parameters", "strict"}
        assert tool["type"] == "function" and isinstance(tool["strict"], bool)


def test_anthropic_shape(master_client):
    tools = listed(master_client, "anthropic")
    assert {tool["name"] for tool in tools} == NAMES
    for tool in tools:
        assert set(tool) == {"name", "description", "input_schema"}
        assert tool["input_schema"]["type"] == "object"
    assert no_source_anywhere(tools)


def test_mcp_shape_is_what_tools_list_answers(master_client):
    import mcp.types as types

    tools = listed(master_client, "mcp")
    assert {tool["name"] for tool in tools} == NAMES | {"memory_context"}
    for tool in tools:
        parsed = types.Tool.model_validate(tool)  # the SDK's own model of a tools/list entry
        assert parsed.title and parsed.annotations is not None
    by_name = {tool["name"]: tool for tool in tools}
    assert by_name["memory_search"]["annotations"]["readOnlyHint"] is True
    assert by_name["user_memory_forget"]["annotations"]["destructiveHint"] is True
    assert by_name["memory_save"]["annotations"]["readOnlyHint"] is False
    # Structured results only where they are not a second copy of the text (SPEC §16).
    assert "outputSchema" not in by_name["memory_search"]
    assert "outputSchema" not in by_name["memory_context"]
    assert "outputSchema" in by_name["user_memory_save"]
    # An optional argument that may be null is listed by its one type (no `type` array,
    # which the Inspector's --strict flags); the strict OpenAI export keeps it nullable.
    for name in ("user_memory_save", "user_memory_forget"):
        schema = by_name[name]["inputSchema"]
        assert schema["properties"]["reason"]["type"] == "string"
        assert "reason" not in schema["required"]
    assert no_source_anywhere(tools)


def test_an_unknown_format_is_422(master_client):
    assert master_client.get("/api/agents/master/tools", {"format": "gemini"}).status_code == 422


@pytest.mark.parametrize("format", ["openai", "responses", "anthropic", "mcp"])
def test_another_agents_token_gets_403(helper_client, master, format):
    assert helper_client.get("/api/agents/master/tools", {"format": format}).status_code == 403
