"""The agent tool surface (SPEC §5, §6.1, §16): one registry of plain functions, each with a
JSON schema and a description the model reads, both kept in files, a title and behaviour
hints (annotations) for clients, and optionally an output schema for structured results.
REST (`memory/api/tools.py`), the provider formats (`memory/tool_formats.py`) and the MCP
server (`memory/mcp/`) all list and call tools through this module.

A tool function has the signature `func(agent, *, source: str, **arguments)` and returns
the text the model reads, or a ToolResult when it also made a proposal or has structured
data. It raises memory.errors on bad input; call_tool_result() validates the arguments
against the schema first, so a function only ever sees the keys its schema declares, with
the declared types.

No schema has a `source` argument: `source` is the presence rule's input (SPEC §5) and is
stated by the caller's credential (memory.presence), never by the model. Every call takes
it as a keyword from the interface; a `source` inside the arguments is refused (422).

Importing this module has no side effects: the memory tools are registered from
MemoryConfig.ready(), and other apps (the wiki) register theirs from their own ready().
Registering a name again replaces it, so registration is idempotent.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema

from memory import context, facts, notes, reading, search, writes
from memory.attribution import attributed
from memory.errors import DomainError, InvalidInput, NotFound
from memory.models import Agent
from memory.presence import refuse_source_argument, validate_source
from memory.query import Query
from memory.text import refuse_unstorable

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts" / "tools"

ToolFunc = Callable[..., "str | ToolResult"]


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns when the text is not all: the proposal it made (REST answers
    202 with it) and structured data matching the tool's output schema."""

    text: str
    proposal: object | None = None  # proposals.models.Proposal
    data: dict | None = None


@dataclass(frozen=True)
class ToolSpec:
    """How a tool is registered: its function and what clients are told about it besides
    the schema and description files. `read_only` tools change nothing; `destructive` ones
    may delete what they write over; `idempotent` ones do nothing more when called again
    with the same arguments. `mcp_only` tools are not in the REST lists (memory_context:
    REST runtimes have GET …/memory/context)."""

    name: str
    func: ToolFunc
    title: str
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    mcp_only: bool = False


@dataclass(frozen=True)
class Tool:
    name: str
    func: ToolFunc
    description: str
    parameters: dict
    title: str = ""
    annotations: dict = field(default_factory=dict)
    output_schema: dict | None = None
    mcp_only: bool = False

    def as_dict(self) -> dict:
        """`{"name", "title", "description", "parameters", "annotations"}` (and
        `output_schema` when there is one): what `GET …/tools` answers."""
        # A copy: a caller adjusting its list must not change what call_tool validates.
        answer = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "parameters": copy.deepcopy(self.parameters),
            "annotations": dict(self.annotations),
        }
        if self.output_schema is not None:
            answer["output_schema"] = copy.deepcopy(self.output_schema)
        return answer


_registry: dict[str, Tool] = {}
_registry_lock = threading.RLock()


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
    if isinstance(kind, list) and len(kind) == 2 and "null" in kind:
        # [type, "null"]: an optional argument that may be null (a write's `reason`).
        kind = next(item for item in kind if item != "null")
    if not isinstance(kind, str) or kind not in _TYPES:
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
        kinds = schema["type"]
        kinds = " or ".join(kinds) if isinstance(kinds, list) else kinds
        return f"{where} must be of type {kinds}."
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
    if "source" in schema.get("properties", {}):
        # The presence rule's input is the caller's, never the model's (SPEC §16).
        raise ValueError(f"{name}: a tool schema may not have a `source` argument.")
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    return schema


def _annotations(spec: ToolSpec) -> dict:
    # MCP's ToolAnnotations (the same keys MCP's tools/list answers). Destructive and
    # idempotent hints mean something only for tools that write.
    hints = {"title": spec.title, "readOnlyHint": spec.read_only, "openWorldHint": False}
    if not spec.read_only:
        hints["destructiveHint"] = spec.destructive
        hints["idempotentHint"] = spec.idempotent
    return hints


def register_tool(
    spec: ToolSpec,
    *,
    schema_file: Path,
    description_file: Path,
    output_schema_file: Path | None = None,
) -> Tool:
    """Register (or replace) a tool. The schema, description and output schema are read
    from their files now; a schema with keywords the validator cannot check, or with a
    `source` argument, raises ValueError."""
    output_schema = None
    if output_schema_file is not None and Path(output_schema_file).exists():
        output_schema = json.loads(Path(output_schema_file).read_text(encoding="utf-8"))
    tool = Tool(
        name=spec.name,
        func=spec.func,
        description=Path(description_file).read_text(encoding="utf-8").strip(),
        parameters=_load_schema(schema_file, spec.name),
        title=spec.title,
        annotations=_annotations(spec),
        output_schema=output_schema,
        mcp_only=spec.mcp_only,
    )
    with _registry_lock:
        _registry[spec.name] = tool
    return tool


def register_tools(specs: Iterable[ToolSpec], prompts_dir: Path) -> None:
    """Register each spec, its schema and description read from <prompts_dir>/<name>.json
    and <prompts_dir>/<name>.md, and its output schema from <name>.output.json if there."""
    for spec in specs:
        register_tool(
            spec,
            schema_file=prompts_dir / f"{spec.name}.json",
            description_file=prompts_dir / f"{spec.name}.md",
            output_schema_file=prompts_dir / f"{spec.name}.output.json",
        )


def registered_tools(*, include_mcp_only: bool = False) -> list[Tool]:
    """Every tool in registration order (memory's first: its app comes first in
    INSTALLED_APPS); memory_context only with include_mcp_only."""
    with _registry_lock:
        return [tool for tool in _registry.values() if include_mcp_only or not tool.mcp_only]


def list_tools(*, include_mcp_only: bool = False) -> list[dict]:
    """Every tool as Tool.as_dict(), memory tools first."""
    return [tool.as_dict() for tool in registered_tools(include_mcp_only=include_mcp_only)]


def get_tool_or_404(name: str, *, include_mcp_only: bool = False) -> Tool:
    with _registry_lock:
        tool = _registry.get(name)
    if tool is None or (tool.mcp_only and not include_mcp_only):
        raise NotFound(f"No tool named {name!r}.")
    return tool


def call_tool_result(
    agent: Agent,
    name: str,
    arguments: dict,
    *,
    source: str,
    include_mcp_only: bool = False,
    runtime: str | None = None,
) -> ToolResult:
    """Validate the arguments against the tool's schema and call it with `source`, the
    presence the interface took from its caller (memory.presence.Caller.source()).
    `runtime` is the runtime the connection named (memory.presence.Caller.runtime): a tool
    whose schema takes a `runtime` argument gets it when the model gave none.

    Raises NotFound for an unknown tool and InvalidInput (422) for bad arguments — a
    `source` among them included — before the tool runs: nothing is read or written
    then. Errors the tool raises propagate.
    """
    tool = get_tool_or_404(name, include_mcp_only=include_mcp_only)
    if not isinstance(arguments, dict):
        raise InvalidInput("Tool arguments must be a JSON object.")
    refuse_source_argument(arguments)
    if runtime is not None and "runtime" in tool.parameters["properties"]:
        arguments = {"runtime": runtime, **arguments}
    problems = validate(arguments, tool.parameters)
    if problems:
        raise InvalidInput(" ".join(problems), errors=problems)
    source = validate_source(source)
    # Every interface (REST, MCP, provider loops) passes here: text or a number that
    # cannot be stored (NUL, a lone surrogate, beyond 64 bits) is 422 before the tool runs.
    refuse_unstorable(arguments, "arguments")
    # Versions of the files the tool changes name this agent and the call's source.
    actor = source if source.startswith("job:") else f"agent:{agent.id}"
    with attributed(actor=actor, source=source, via="tool"):
        result = tool.func(agent, source=source, **arguments)
    return result if isinstance(result, ToolResult) else ToolResult(text=str(result))


def call_tool(agent: Agent, name: str, arguments: dict, *, source: str) -> str:
    """The text the model reads. Raises like call_tool_result()."""
    return call_tool_result(agent, name, arguments, source=source).text


def run_tool(agent: Agent, name: str, arguments: dict, *, source: str) -> str:
    """Like call_tool(), but a refused call comes back as an error text for the model
    (`Error: …`) instead of an exception — what an in-process agent loop hands back."""
    try:
        return call_tool(agent, name, arguments, source=source)
    except DomainError as error:
        return f"Error: {error.message}"


# --- the memory tools ---------------------------------------------------------------------


def _proposal_data(proposal) -> dict:
    return {"id": proposal.pk, "kind": proposal.kind, "status": proposal.status}


def proposed_result(proposal, what: str) -> ToolResult:
    """What a tool answers when its write became a proposal (REST: 202)."""
    return ToolResult(
        text=(
            f"Proposed for review (proposal #{proposal.pk}): {what}. Nothing is written "
            "until a person approves it."
        ),
        proposal=proposal,
        data={"status": "proposed", "proposal": _proposal_data(proposal)},
    )


def memory_save(agent: Agent, *, source: str, text: str) -> ToolResult:
    """Append `- HH:MM <text>` to today's note (SPEC §5)."""
    saved = notes.memory_save(agent, text)
    path = f"{notes.NOTES_DIR}/{saved.name}"
    return ToolResult(
        text=f"Saved to {path}: {saved.line}", data={"path": path, "line": saved.line}
    )


SEARCH_CAP = 12  # SPEC §6.1: at most 12 results, whatever maxResults asks


def memory_search(
    agent: Agent,
    *,
    source: str,
    query: str,
    maxResults: int | None = None,  # noqa: N803 - OpenClaw's argument names
    minScore: float | None = None,  # noqa: N803
    corpus: str | None = None,
) -> str:
    """The §6.1 search of this agent's memory and the shared facts. OpenClaw's arguments:
    `maxResults` (capped at 12), `minScore` (0–1: the share of the query's words an entry
    must hold), `corpus` (accepted and ignored: there is one corpus here)."""
    parsed = Query.parse(query)
    limit = min(maxResults or SEARCH_CAP, SEARCH_CAP)
    hits = search.search(parsed, agent=agent, limit=limit)
    if minScore:
        hits = [hit for hit in hits if hit.score / len(parsed.words) >= minScore]
    # The text is the one copy of the hits: no structured copy beside it (SPEC §16).
    if not hits:
        return f'No memory matches "{query}".'
    return search.format_hits(hits)


_CITATION_RE = re.compile(
    r"(?P<path>.+?)#L(?P<start>[1-9][0-9]{0,8})(?:-L(?P<end>[1-9][0-9]{0,8}))?"
)


def _split_citation(path: str) -> tuple[str, int | None, int | None]:
    """`memory/x.md#L3` → ("memory/x.md", 3, None); `…#L3-L5` → (…, 3, 3 lines)."""
    if "#" not in path:
        return path, None, None
    match = _CITATION_RE.fullmatch(path)
    if match is None:
        raise InvalidInput(f"A path may end in #L<line> or #L<first>-L<last>, not {path!r}.")
    start = int(match["start"])
    if match["end"] is None:
        return match["path"], start, None
    end = int(match["end"])
    if end < start:
        raise InvalidInput(f"#L{start}-L{end}: the last line comes before the first.")
    return match["path"], start, end - start + 1


def memory_get(
    agent: Agent,
    *,
    source: str,
    path: str,
    from_line: int | None = None,
    lines: int | None = None,
    **openclaw: int,
) -> str:
    """Read a memory file of this agent or a shared fact (SPEC §5). OpenClaw's shapes work
    too: `from` for from_line, and a citation suffix `path#L3` / `path#L3-L5`; explicit
    from_line/from/lines win over the suffix."""
    start = openclaw.get("from")
    if start is not None and from_line is not None and start != from_line:
        raise InvalidInput("Give `from` or `from_line`, not two different lines.")
    path, cited_start, cited_lines = _split_citation(path)
    start = from_line if from_line is not None else start
    if start is None:
        start = cited_start
        if lines is None:
            lines = cited_lines
    if lines is not None and lines > reading.MAX_LINES_PER_CALL:
        raise InvalidInput(f"lines must be at most {reading.MAX_LINES_PER_CALL}.")
    return reading.read_memory_file(agent, path, from_line=start, lines=lines)


def user_memory_save(
    agent: Agent,
    *,
    source: str,
    name: str,
    description: str,
    type: str,
    body: str,
    reason: str | None = None,
) -> ToolResult:
    """Save a shared fact now (a person present) or propose it (a job), with the model's
    `reason` on the card."""
    fact, proposal = writes.save_fact_or_propose(
        name,
        description=description,
        type=type,
        body=body,
        source=source,
        written_by=agent.id,
        reason=reason,
    )
    if proposal is not None:
        return proposed_result(proposal, f"save the fact {name!r}")
    return ToolResult(
        text=f"Saved {facts.fact_path(name)} ({type}): {description}. INDEX.md is updated.",
        data={"status": "written", "path": facts.fact_path(name)},
    )


def user_memory_forget(
    agent: Agent, *, source: str, name: str, reason: str | None = None
) -> ToolResult:
    """Forget a shared fact now (a person present) or propose it (a job), with the model's
    `reason` on the card."""
    proposal = writes.forget_fact_or_propose(
        name, source=source, written_by=agent.id, reason=reason
    )
    if proposal is not None:
        return proposed_result(proposal, f"forget the fact {name!r}")
    return ToolResult(
        text=f"Forgot {facts.fact_path(name)}. INDEX.md is updated.",
        data={"status": "written", "path": facts.fact_path(name)},
    )


def memory_context(
    agent: Agent,
    *,
    source: str,
    conversation: str,
    turn: str | None = None,
    runtime: str | None = None,
) -> str:
    """The §4 prompt context for a runtime that has no other slot for it (MCP): the
    system sections and the pre-turn notes block, retry-safe per `turn`, without what
    `runtime` injects itself. One copy: the text, its two parts tagged."""
    answer = context.build_context(agent, conversation, turn=turn, runtime=runtime)
    parts = []
    if answer["system"]:
        parts.append(f"<memory-system>\n{answer['system']}\n</memory-system>")
    if answer["pre_turn"]:
        parts.append(f"<memory-notes>\n{answer['pre_turn']}\n</memory-notes>")
    return "\n\n".join(parts) or "Memory is empty: nothing to add to this turn."


MEMORY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("memory_save", memory_save, "Save to today's note"),
    ToolSpec("memory_search", memory_search, "Search memory", read_only=True, idempotent=True),
    ToolSpec("memory_get", memory_get, "Read a memory file", read_only=True, idempotent=True),
    # Not idempotent: from a job, each call is one more proposal.
    ToolSpec("user_memory_save", user_memory_save, "Save a shared fact"),
    ToolSpec("user_memory_forget", user_memory_forget, "Forget a shared fact", destructive=True),
    # Reading the context advances what a conversation has seen, so it is not read-only.
    ToolSpec("memory_context", memory_context, "Memory for this turn", mcp_only=True),
)
