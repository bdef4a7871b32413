"""The MCP interface (SPEC §0, §16): the same tools, the same operations, over the Model
Context Protocol, built on the official `mcp` SDK's low-level `Server` (the schemas come
from memory.tools' one registry, exactly as in the files).

- `server.py` — the server: tools (the registry's, memory_context included), resources
  (USER.md, INDEX.md, the agent's MEMORY.md, notes and wiki pages), prompts
  (`setup_memory`, `memory_flush`). No rule of its own: every call goes to the registry or
  to an operation module, with the caller's presence (memory.presence).
- `http.py` — Streamable HTTP at `/mcp` (stateless), authenticated by an agent token.
- `manage.py mcp --agent <id> [--job <job-id>]` — stdio, what a local runtime launches.
"""
