"""The tool registry in each provider's own shape (`GET /api/agents/{id}/tools?format=`).

- (none): `[{"name", "title", "description", "parameters", "annotations", "output_schema"?}]`
- `openai` (Chat Completions):
  `[{"type": "function", "function": {"name", "description", "parameters", "strict"}}]`
- `responses` (Responses API): `[{"type": "function", "name", "description", "parameters",
  "strict"}]`
- `anthropic` (Messages API): `[{"name", "description", "input_schema"}]`
- `mcp` (what MCP `tools/list` answers): `[{"name", "title", "description", "inputSchema",
  "outputSchema"?, "annotations"}]`; an optional argument that may be null is listed by its
  one type (no `type` array: the Inspector's --strict finds none)

`strict` (OpenAI's Structured Outputs for function calls) is true only where the schema
allows it: every object's properties all required (an optional one that may be null, a
write's `reason`, is exported as required and nullable) and no other keys. For those tools the
exported schema leaves out `minLength`/`maxLength`, which strict mode does not support;
the server still checks them (422, or a tool error). A tool with optional arguments is
exported with `strict: false` and its schema as it is (the Responses API would otherwise
default to strict and reject it).

Every format is built from memory.tools' one registry; the MCP server lists its tools
with `mcp_tool()` too.
"""

from __future__ import annotations

import copy

from memory.errors import InvalidInput
from memory.tools import Tool, registered_tools

FORMATS = ("openai", "responses", "anthropic", "mcp")
# Keywords OpenAI's strict mode does not take; the server checks them after the call.
_NOT_IN_STRICT = ("minLength", "maxLength")


def _nullable(schema: dict) -> bool:
    kinds = schema.get("type")
    return isinstance(kinds, list) and "null" in kinds


def _allows_strict(schema: dict) -> bool:
    if schema.get("type") == "object":
        properties = schema.get("properties", {})
        if schema.get("additionalProperties", False) is not False:
            return False
        # An optional argument that may be null (a write's `reason`) is exported as required
        # and nullable: the model sends null when it has nothing to say.
        optional = set(properties) - set(schema.get("required", []))
        if any(not _nullable(properties[name]) for name in optional):
            return False
        return all(_allows_strict(sub) for sub in properties.values())
    if schema.get("type") == "array" and "items" in schema:
        return _allows_strict(schema["items"])
    return True


def _strict_schema(schema: dict) -> dict:
    out = {key: value for key, value in schema.items() if key not in _NOT_IN_STRICT}
    if "properties" in out:
        out["properties"] = {key: _strict_schema(sub) for key, sub in out["properties"].items()}
        out["additionalProperties"] = False
        if out.get("type") == "object":
            out["required"] = list(out["properties"])
    if "items" in out:
        out["items"] = _strict_schema(out["items"])
    return out


def _function_parts(tool: Tool) -> tuple[dict, bool]:
    """The parameters to export and whether the function is strict."""
    if _allows_strict(tool.parameters):
        return _strict_schema(tool.parameters), True
    return copy.deepcopy(tool.parameters), False


def openai_tool(tool: Tool) -> dict:
    parameters, strict = _function_parts(tool)
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters,
            "strict": strict,
        },
    }


def responses_tool(tool: Tool) -> dict:
    parameters, strict = _function_parts(tool)
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": parameters,
        "strict": strict,
    }


def anthropic_tool(tool: Tool) -> dict:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": copy.deepcopy(tool.parameters),
    }


def _single_typed(schema: dict) -> dict:
    """`schema` with each optional argument that may be null (a write's `reason`) listed by
    its one type: leaving it out says what null says, and a `type` array is what the MCP
    Inspector's --strict flags as unportable (SPEC §16). The server still takes null."""
    out = copy.deepcopy(schema)
    required = set(out.get("required", []))
    for name, sub in out.get("properties", {}).items():
        if name not in required and _nullable(sub):
            kinds = [kind for kind in sub["type"] if kind != "null"]
            sub["type"] = kinds[0] if len(kinds) == 1 else kinds
    return out


def mcp_tool(tool: Tool) -> dict:
    """One entry of MCP's `tools/list` result (camelCase, as on the wire)."""
    entry = {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": _single_typed(tool.parameters),
        "annotations": dict(tool.annotations),
    }
    if tool.output_schema is not None:
        entry["outputSchema"] = copy.deepcopy(tool.output_schema)
    return entry


_CONVERTERS = {
    "openai": openai_tool,
    "responses": responses_tool,
    "anthropic": anthropic_tool,
    "mcp": mcp_tool,
}


def export_tools(format: str | None) -> list[dict]:
    """The registry in `format` (None: the registry's own shape). memory_context, which
    exists for runtimes without another slot for the prompt context, is in the `mcp`
    list only. InvalidInput for an unknown format."""
    if format is None:
        return [tool.as_dict() for tool in registered_tools()]
    converter = _CONVERTERS.get(format)
    if converter is None:
        raise InvalidInput(f"`format` must be one of {', '.join(FORMATS)}, not {format!r}.")
    return [converter(tool) for tool in registered_tools(include_mcp_only=format == "mcp")]
