"""The agent tool surface (SPEC §5, §6.1, §16): a registry of plain functions, each with a
JSON schema and a description the model reads, both kept in files.

A tool function has the signature `func(agent, *, source: str, **arguments) -> str` and
returns the text the model reads (or a ToolResult when it also made a proposal the REST
caller should hear about). It raises memory.errors on bad input; call_tool() validates the
arguments against the schema first, so a function only ever sees the keys its schema
declares, with the declared types.

Every schema gets a required `source` property (SPEC §5: the presence rule needs it); it is
added at registration from `prompts/tools/_source.json` when a schema does not declare it.

Importing this module has no side effects: the memory tools (MEMORY_TOOLS) are registered
from MemoryConfig.ready(), other apps' (the wiki's) from their own AppConfig.ready().
Registering a name again replaces it, so registration is idempotent.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import jsonschema

from memory.errors import InvalidInput, NotFound
from memory.models import Agent

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts" / "tools"
SOURCE_SCHEMA_FILE = PROMPTS_DIR / "_source.json"

ToolFunc = Callable[..., "str | ToolResult"]


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns when the text is not all: the proposal it made (REST answers
    202 with it)."""

    text: str
    proposal: object | None = None  # proposals.models.Proposal


@dataclass(frozen=True)
class Tool:
    name: str
    func: ToolFunc
    description: str
    parameters: dict

    def as_dict(self) -> dict:
        """The shape OpenAI and Anthropic tool calling take."""
        # A copy: a caller adjusting its list must not change what call_tool validates.
        return {
            "name": self.name,
            "description": self.description,
            "parameters": copy.deepcopy(self.parameters),
        }


_registry: dict[str, Tool] = {}
_registry_lock = threading.Lock()


# --- the JSON-schema subset the tool schemas use ----------------------------------------
# jsonschema checks arguments; this guard refuses a schema keyword outside the subset the
# tool schemas are written in, so no schema can claim a rule nobody has looked at.

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
}
_KEYWORDS = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "items",
    "minItems",
    "maxItems",
    # annotations, not checked
    "description",
    "title",
    "default",
    "examples",
    "$schema",
}


def _check_schema(schema: object, where: str) -> None:
    """Refuse a schema that uses a keyword the validator does not check: silently ignoring
    it would accept arguments the schema claims to refuse."""
    if not isinstance(schema, dict):
        raise ValueError(f"{where}: a schema must be an object.")
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise ValueError(f"{where}: unsupported schema keywords {sorted(unknown)}.")
    kind = schema.get("type")
    if kind not in _TYPES:
        raise ValueError(f"{where}: type must be one of {sorted(_TYPES)}, not {kind!r}.")
    if schema.get("additionalProperties", False) not in (False, True):
        raise ValueError(f"{where}: additionalProperties must be true or false.")
    for name, sub in schema.get("properties", {}).items():
        _check_schema(sub, f"{where}.{name}")
    if "items" in schema:
        _check_schema(schema["items"], f"{where}[]")


def _where(path: Iterable[object], name: str = "arguments") -> str:
    """`sources[1]`, `text`: where in the arguments a problem is."""
    where = ""
    for part in path:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    return where or name


def _problem(error: jsonschema.ValidationError) -> str:
    """One jsonschema error in the words the tools have always used."""
    where = _where(error.absolute_path)
    schema, rule = error.schema, error.validator
    if rule == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return f"Missing argument: {missing}."
    if rule == "additionalProperties":
        allowed = set(schema.get("properties", {}))
        unknown = sorted(key for key in error.instance if key not in allowed)
        return " ".join(f"Unknown argument: {key}." for key in unknown)
    if rule == "type":
        return f"{where} must be of type {schema['type']}."
    if rule == "enum":
        return f"{where} must be one of {', '.join(json.dumps(c) for c in schema['enum'])}."
    if rule == "minLength":
        if schema["minLength"] == 1:
            return f"{where} must not be empty."
        return f"{where} must be at least {schema['minLength']} characters."
    if rule == "maxLength":
        return f"{where} must be at most {schema['maxLength']} characters."
    if rule == "minimum":
        return f"{where} must be at least {schema['minimum']}."
    if rule == "maximum":
        return f"{where} must be at most {schema['maximum']}."
    if rule == "minItems":
        return f"{where} must have at least {schema['minItems']} items."
    if rule == "maxItems":
        return f"{where} must have at most {schema['maxItems']} items."
    return f"{where}: {error.message}."


def validate(value: object, schema: dict) -> list[str]:
    """The problems of `value` against `schema` (empty when it is valid), checked by
    jsonschema (Draft 2020-12), in document order: missing arguments first."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(
        validator.iter_errors(value),
        key=lambda error: (error.validator != "required", list(error.absolute_path)),
    )
    return [_problem(error) for error in errors]


# --- the registry -----------------------------------------------------------------------


def _load_schema(schema_file: Path, name: str) -> dict:
    schema = json.loads(Path(schema_file).read_text(encoding="utf-8"))
    _check_schema(schema, name)
    if schema["type"] != "object":
        raise ValueError(f"{name}: a tool's parameters must be an object schema.")
    properties = schema.setdefault("properties", {})
    if "source" not in properties:
        properties["source"] = json.loads(SOURCE_SCHEMA_FILE.read_text(encoding="utf-8"))
    required = schema.setdefault("required", [])
    if "source" not in required:
        required.append("source")
    return schema


def register_tool(name: str, func: ToolFunc, *, schema_file: Path, description_file: Path) -> Tool:
    """Register (or replace) a tool. The schema and description are read from their files
    now; a schema with keywords the validator cannot check raises ValueError."""
    tool = Tool(
        name=name,
        func=func,
        description=Path(description_file).read_text(encoding="utf-8").strip(),
        parameters=_load_schema(schema_file, name),
    )
    with _registry_lock:
        _registry[name] = tool
    return tool


def register_tools(tools: Iterable[tuple[str, ToolFunc]], prompts_dir: Path) -> None:
    """Register each (name, func), its schema and description read from
    <prompts_dir>/<name>.json and <prompts_dir>/<name>.md."""
    for name, func in tools:
        register_tool(
            name,
            func,
            schema_file=prompts_dir / f"{name}.json",
            description_file=prompts_dir / f"{name}.md",
        )


def list_tools() -> list[dict]:
    """Every tool as `{"name", "description", "parameters"}`, in registration order
    (memory's first: its app comes first in INSTALLED_APPS)."""
    with _registry_lock:
        return [tool.as_dict() for tool in _registry.values()]


def get_tool_or_404(name: str) -> Tool:
    with _registry_lock:
        tool = _registry.get(name)
    if tool is None:
        raise NotFound(f"No tool named {name!r}.")
    return tool


def call_tool_result(agent: Agent, name: str, arguments: dict) -> ToolResult:
    """Validate the arguments against the tool's schema, check `source`, and call it.

    Raises NotFound for an unknown tool and InvalidInput (422) for bad arguments, before
    the tool runs: nothing is read or written then. Errors the tool raises propagate.
    """
    from memory.writes import validate_source

    tool = get_tool_or_404(name)
    if not isinstance(arguments, dict):
        raise InvalidInput("Tool arguments must be a JSON object.")
    problems = validate(arguments, tool.parameters)
    if problems:
        raise InvalidInput(" ".join(problems), errors=problems)
    arguments = dict(arguments)
    source = validate_source(arguments.pop("source"))
    result = tool.func(agent, source=source, **arguments)
    return result if isinstance(result, ToolResult) else ToolResult(text=str(result))


def call_tool(agent: Agent, name: str, arguments: dict) -> str:
    """The text the model reads. Raises like call_tool_result()."""
    return call_tool_result(agent, name, arguments).text


def run_tool(agent: Agent, name: str, arguments: dict) -> str:
    """Like call_tool(), but a refused call comes back as an error text for the model
    (`Error: …`) instead of an exception — what an in-process agent loop hands back."""
    from memory.errors import DomainError

    try:
        return call_tool(agent, name, arguments)
    except DomainError as error:
        return f"Error: {error.message}"


# --- the memory tools ---------------------------------------------------------------------


def _proposed(proposal, what: str) -> ToolResult:
    return ToolResult(
        text=(
            f"Proposed for review (proposal #{proposal.pk}): {what}. Nothing is written "
            "until a person approves it."
        ),
        proposal=proposal,
    )


def memory_save(agent: Agent, *, source: str, text: str) -> str:
    """Append `- HH:MM <text>` to today's note (SPEC §5)."""
    from memory import notes

    saved = notes.memory_save(agent, text)
    return f"Saved to {notes.NOTES_DIR}/{saved.name}: {saved.line}"


def memory_search(agent: Agent, *, source: str, query: str) -> str:
    """The §6.1 search of this agent's memory and the shared facts."""
    from memory import text

    if not text.words(query):
        raise InvalidInput("The query has no letters or digits to search for.")
    from memory import search

    hits = search.search(query, agent=agent)
    if not hits:
        return f'No memory matches "{query}".'
    return search.format_hits(hits)


def memory_get(
    agent: Agent,
    *,
    source: str,
    path: str,
    from_line: int | None = None,
    lines: int | None = None,
) -> str:
    """Read a memory file of this agent or a shared fact (SPEC §5)."""
    from memory import reading

    return reading.read_memory_file(agent, path, from_line=from_line, lines=lines)


def user_memory_save(
    agent: Agent, *, source: str, name: str, description: str, type: str, body: str
) -> ToolResult:
    """Save a shared fact now (a person present) or propose it (a job)."""
    from memory import facts, writes

    fact, proposal = writes.save_fact_or_propose(
        name,
        description=description,
        type=type,
        body=body,
        source=source,
        written_by=agent.id,
    )
    if proposal is not None:
        return _proposed(proposal, f"save the fact {name!r}")
    return ToolResult(
        text=f"Saved {facts.fact_path(name)} ({type}): {description}. INDEX.md is updated."
    )


def user_memory_forget(agent: Agent, *, source: str, name: str) -> ToolResult:
    """Forget a shared fact now (a person present) or propose it (a job)."""
    from memory import facts, writes

    proposal = writes.forget_fact_or_propose(name, source=source, written_by=agent.id)
    if proposal is not None:
        return _proposed(proposal, f"forget the fact {name!r}")
    return ToolResult(text=f"Forgot {facts.fact_path(name)}. INDEX.md is updated.")


MEMORY_TOOLS: tuple[tuple[str, ToolFunc], ...] = (
    ("memory_save", memory_save),
    ("memory_search", memory_search),
    ("memory_get", memory_get),
    ("user_memory_save", user_memory_save),
    ("user_memory_forget", user_memory_forget),
)
