"""`manage.py mcp --agent <id> [--job <job-id>] [--source <channel>] [--runtime openclaw]`:
serve one agent's memory over MCP on stdin/stdout (what Claude Code, Claude Desktop,
Cursor and OpenClaw launch). Nothing but the protocol is written to stdout.

A pipe has no credential: whoever may start this command may act as the agent, as with
any local MCP server. `--job` makes it a job's connection (every shared write becomes a
proposal); `--source` names the channel of an interactive one (default `mcp`); `--runtime`
the runtime that launched it, so memory_context leaves out what that runtime injects itself
(OpenClaw: USER.md and MEMORY.md, SPEC §4.2)."""

from __future__ import annotations

import anyio
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.binding import require_own_workspace
from memory.context import RUNTIMES, clean_runtime
from memory.errors import InvalidInput
from memory.mcp.stdio import serve_stdio
from memory.models import Agent
from memory.presence import Caller, validate_job_id, validate_source


class Command(BaseCommand):
    help = "Serve one agent's memory over MCP on stdio."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", required=True, help="the agent's id")
        parser.add_argument("--job", help="a job's connection: every write is job:<job-id>")
        parser.add_argument("--source", help="the channel of an interactive connection")
        parser.add_argument(
            "--runtime",
            choices=sorted(RUNTIMES),
            help="the runtime that launched this: memory_context leaves out what it injects",
        )

    def handle(
        self,
        *args,
        agent: str,
        job: str | None,
        source: str | None,
        runtime: str | None = None,
        **options,
    ) -> None:
        require_own_workspace()
        if not Agent.objects.filter(pk=agent).exists():
            raise CommandError(f"No agent {agent!r}.")
        try:
            caller = Caller(
                agent_id=agent,
                job=validate_job_id(job) if job is not None else None,
                channel=validate_source(source) if source is not None else None,
                runtime=clean_runtime(runtime),
            )
        except InvalidInput as error:
            raise CommandError(error.message) from None

        anyio.run(serve_stdio, caller)
