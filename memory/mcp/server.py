"""The MCP server for one agent's memory, on the SDK's low-level `Server`.

Who is calling is a `memory.presence.Caller` held in a context variable: set once per
process for stdio (`manage.py mcp --agent …`), per request for HTTP (memory/mcp/http.py,
from the agent token). The agent is always the caller's: no tool, resource or prompt takes
an agent argument, so a token of agent A reaches only A.

- **Tools** are the registry's (memory.tools), memory_context included, listed with their
  schemas, titles, annotations and output schemas as in their files. A call goes through
  `memory.tools.call_tool_result` with the caller's source (`mcp` unless the credential or
  `X-Memory-Source` says otherwise); a refused call is a tool error result
  (`isError: true`, the reason as text), never a protocol error.
- **Resources**: `memory://user/USER.md`, `memory://user/facts/INDEX.md`, each fact
  `memory://user/facts/<name>.md`, and `memory://agents/<id>/<path>` for the agent's
  MEMORY.md and every Markdown file below its memory/ (notes, wiki pages), readable by the
  rules memory_get applies. A refused or missing resource is a protocol error (-32602),
  as MCP defines for resources.
- **Instructions** (memory/mcp/prompts/instructions.md) name only what the model can do
  itself: call tools. Prompts are the user's to choose (MCP), so they are not mentioned.
- **Prompts**: `setup_memory` (what goes where, SPEC §5) and `memory_flush` (store durable
  memories before a conversation is compacted; NO_REPLY when there is nothing to keep),
  read from memory/mcp/prompts/.

Every operation is synchronous Django code: it runs through `sync_to_async` in Django's
thread-sensitive executor, with stale database connections closed around it as Django
does around a request.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, unquote

import mcp.types as types
from asgiref.sync import sync_to_async
from django.db import close_old_connections
from mcp import MCPError
from mcp.server import Server, ServerRequestContext

from memory import facts, reading
from memory.agents import get_agent_or_404
from memory.errors import DomainError
from memory.presence import MCP_DEFAULT, Caller
from memory.tool_formats import mcp_tool
from memory.tools import call_tool_result, get_tool_or_404, registered_tools

log = logging.getLogger(__name__)

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
SERVER_NAME = "agent-memory"
USER_URI = "memory://user/USER.md"
INDEX_URI = "memory://user/facts/INDEX.md"
FACTS_URI = "memory://user/facts/"
MARKDOWN = "text/markdown"

current_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "memory_mcp_caller", default=None
)

T = TypeVar("T")


def caller_of(ctx: ServerRequestContext) -> Caller:
    """The caller of this request: what the HTTP layer put in the request's scope, else
    the context variable (stdio). Never None inside a served request."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict) and isinstance(scope.get("memory.caller"), Caller):
        return scope["memory.caller"]
    caller = current_caller.get()
    if caller is None or caller.agent_id is None:
        raise MCPError(types.INVALID_REQUEST, "No agent: this connection is not authenticated.")
    return caller


def _in_django(func: Callable[[], T]) -> T:
    close_old_connections()
    try:
        return func()
    finally:
        close_old_connections()


async def _run(func: Callable[[], T]) -> T:
    """Run Django code off the event loop (the thread Django's own ASGI views use)."""
    return await sync_to_async(_in_django, thread_sensitive=True)(func)


def _agent(caller: Caller):
    return get_agent_or_404(caller.agent_id)


# --- tools ------------------------------------------------------------------------------


def _mcp_tools() -> list[types.Tool]:
    return [
        types.Tool.model_validate(mcp_tool(tool))
        for tool in registered_tools(include_mcp_only=True)
    ]


async def list_tools(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=await _run(_mcp_tools))


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def call_tool_now(
    caller: Caller, name: str, arguments: dict[str, Any] | None
) -> types.CallToolResult:
    """One tool call as `caller`, synchronously: the result the model reads, or a tool
    error result for anything refused."""
    try:
        agent = _agent(caller)
        tool = get_tool_or_404(name, include_mcp_only=True)
        result = call_tool_result(
            agent,
            name,
            arguments if arguments is not None else {},
            source=caller.source(default=MCP_DEFAULT),
            include_mcp_only=True,
            runtime=caller.runtime,
        )
    except DomainError as error:
        return _error(f"Error: {error.message}")
    except Exception:  # a bug must still answer the model, and be logged
        log.exception("MCP tool %s failed", name)
        return _error("Error: the tool failed unexpectedly; nothing more is known here.")
    structured = result.data if tool.output_schema is not None else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.text)],
        structured_content=structured,
    )


async def call_tool(
    ctx: ServerRequestContext, params: types.CallToolRequestParams
) -> types.CallToolResult:
    caller = caller_of(ctx)
    return await _run(lambda: call_tool_now(caller, params.name, params.arguments))


# --- resources --------------------------------------------------------------------------


def _agent_uri(agent_id: str, path: str) -> str:
    return f"memory://agents/{agent_id}/{quote(path, safe='/')}"


def _resources(caller: Caller) -> list[types.Resource]:
    agent = _agent(caller)
    found = [
        types.Resource(name="USER.md", title="Who the owner is", uri=USER_URI, mime_type=MARKDOWN),
        types.Resource(
            name="INDEX.md",
            title="The shared facts, one line each",
            uri=INDEX_URI,
            mime_type=MARKDOWN,
        ),
    ]
    for fact in facts.list_facts():
        found.append(
            types.Resource(
                name=f"facts/{fact.name}.md",
                description=fact.description,
                uri=f"{FACTS_URI}{fact.name}.md",
                mime_type=MARKDOWN,
            )
        )
    for path in reading.list_memory_files(agent):
        found.append(types.Resource(name=path, uri=_agent_uri(agent.id, path), mime_type=MARKDOWN))
    return found


async def list_resources(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    caller = caller_of(ctx)
    return types.ListResourcesResult(resources=await _run(lambda: _resources(caller)))


def _not_readable(uri: str, why: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, why, {"uri": uri})


def read_resource_now(caller: Caller, uri: str) -> str:
    """The text of one resource for `caller`. Raises MCPError (-32602) for a URI that is
    not one of this agent's resources or names no file."""
    agent = _agent(caller)
    try:
        if uri == USER_URI:
            return facts.read_user()
        if uri == INDEX_URI:
            return facts.read_index()
        if uri.startswith(FACTS_URI):
            path = f"{reading.FACTS_PREFIX}{unquote(uri[len(FACTS_URI) :])}"
            return reading.read_whole_memory_file(agent, path)
        prefix = f"memory://agents/{agent.id}/"
        if uri.startswith("memory://agents/") and not uri.startswith(prefix):
            raise _not_readable(uri, "This connection reaches only its own agent's memory.")
        if not uri.startswith(prefix):
            raise _not_readable(uri, f"Not a memory resource: {uri}.")
        return reading.read_whole_memory_file(agent, unquote(uri[len(prefix) :]))
    except DomainError as error:
        raise _not_readable(uri, error.message) from None


async def read_resource(
    ctx: ServerRequestContext, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    caller = caller_of(ctx)
    uri = str(params.uri)
    text = await _run(lambda: read_resource_now(caller, uri))
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=MARKDOWN, text=text)]
    )


# --- prompts ----------------------------------------------------------------------------

PROMPTS = [
    types.Prompt(
        name="setup_memory",
        title="How to use this memory",
        description=(
            "What goes where (USER.md, facts, MEMORY.md, today's note) and when to call each tool."
        ),
    ),
    types.Prompt(
        name="memory_flush",
        title="Store durable memories before compaction",
        description=(
            "Run before a conversation is compacted: the model saves what should last with "
            "memory_save / user_memory_save, or answers NO_REPLY when there is nothing to keep."
        ),
    ),
]


def _prompt_text(name: str) -> str:
    return (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8").strip()


def _message(text: str) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))


def prompt_messages(name: str) -> tuple[str, list[types.PromptMessage]]:
    """The description and messages of one prompt. `memory_flush` is two messages: the
    system part (MCP prompts have no system role; a runtime may move it into its system
    prompt) and the turn the model answers."""
    if name == "setup_memory":
        return PROMPTS[0].description or "", [_message(_prompt_text("setup_memory"))]
    if name == "memory_flush":
        return PROMPTS[1].description or "", [
            _message(_prompt_text("memory_flush_system")),
            _message(_prompt_text("memory_flush_user")),
        ]
    raise MCPError(types.INVALID_PARAMS, f"No prompt named {name!r}.")


async def list_prompts(
    ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


async def get_prompt(
    ctx: ServerRequestContext, params: types.GetPromptRequestParams
) -> types.GetPromptResult:
    caller_of(ctx)  # authenticated like everything else
    description, messages = prompt_messages(params.name)
    return types.GetPromptResult(description=description, messages=messages)


def instructions() -> str:
    """What the server tells the model when it connects (memory/mcp/prompts)."""
    return _prompt_text("instructions")


def build_server() -> Server:
    """A new low-level Server with every handler of this module."""
    return Server(
        SERVER_NAME,
        version=version("agent-memory"),
        title="Agent memory",
        instructions=instructions(),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
