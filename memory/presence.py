"""Who is present when memory is written (SPEC §5, §16): the one place that turns a caller
into the `source` of a write.

The presence rule needs to know whether a person is watching. That is stated by the
*caller* — the runtime holding a credential — never by the model: a model could be talked
into writing `"source": "chat"` from a nightly job and skip the review queue.

- A **job token** (`memory_token agent <id> --job <job-id>`) makes every write a
  `job:<job-id>` write, whatever the request says: shared writes become proposals.
- An **interactive** token (or the owner) may name its channel: `X-Memory-Source: telegram`
  on any request, or `"source"` in the body of the REST endpoints that take one (owner and
  runtime calls, never tool arguments). A statement that is a `job:<id>` wins over a
  present one, so a statement can only make a write more careful, never less.
- With nothing stated, a REST call is a person over HTTP (`http`) and an MCP call `mcp`.

Tool arguments are the model's words, so a `source` among them is refused (422): see
`refuse_source_argument`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.errors import InvalidInput

# `<kind>` or `<kind>:<id>`: a lowercase kind, then an id without spaces or control chars.
_SOURCE_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}(?::[!-~]{1,160})?", re.ASCII)
_JOB_ID_RE = re.compile(r"[!-~]{1,160}", re.ASCII)
JOB_PREFIX = "job:"
SOURCE_HEADER = "X-Memory-Source"
RUNTIME_HEADER = "X-Memory-Runtime"
REST_DEFAULT = "http"
MCP_DEFAULT = "mcp"


def validate_source(source: object) -> str:
    """The source of a write, checked: `chat`, `telegram`, `web`, `http`, `job:<id>`,
    `conv:<id>`… (a lowercase kind, optionally `:` and a printable ASCII id). Anything
    else — empty, spaces, control characters, `job:` without an id — is InvalidInput."""
    if not isinstance(source, str) or not _SOURCE_RE.fullmatch(source):
        raise InvalidInput(
            f"Invalid source {source!r}: expected e.g. chat, telegram, web, http or job:<id>."
        )
    return source


def is_job_source(source: str) -> bool:
    """True for `job:<id>`: a scheduled job, no person present (SPEC §5)."""
    return validate_source(source).startswith(JOB_PREFIX)


def validate_job_id(job: object) -> str:
    """A job id for a job token: 1–160 printable ASCII characters, no spaces."""
    if not isinstance(job, str) or not _JOB_ID_RE.fullmatch(job):
        raise InvalidInput(f"Invalid job id {job!r}: 1-160 printable characters, no spaces.")
    return job


@dataclass(frozen=True)
class Caller:
    """Who is calling, as the credential and the runtime state it.

    `agent_id` is None for the owner. `job` is the job id of a job token (None for an
    interactive one). `channel` is the validated `X-Memory-Source` header, if any.
    `runtime` is the runtime the connection names (`X-Memory-Runtime`, `mcp --runtime`):
    memory_context leaves out what it injects itself (memory.context.RUNTIMES).
    """

    agent_id: str | None = None
    job: str | None = None
    channel: str | None = None
    runtime: str | None = None

    def source(self, stated: object = None, *, default: str = REST_DEFAULT) -> str:
        """The source of a write this caller makes.

        `stated` is a `source` the runtime put in a REST body or query (None when it
        did not). A job token answers `job:<job>` whatever was stated; otherwise a
        stated or header `job:<id>` wins, then the stated source, then the header, then
        `default`. Raises InvalidInput for a stated source that is not one.
        """
        if self.job is not None:
            return f"{JOB_PREFIX}{self.job}"
        candidates = []
        if stated is not None:
            candidates.append(validate_source(stated))
        if self.channel is not None:
            candidates.append(self.channel)
        for candidate in candidates:
            if candidate.startswith(JOB_PREFIX):
                return candidate
        return candidates[0] if candidates else default


def caller_with_header(*, agent_id: str | None, job: str | None, header: str | None) -> Caller:
    """A Caller from a credential and the raw `X-Memory-Source` header (None when absent).
    A header that is not a valid source is InvalidInput (422), never ignored."""
    channel = validate_source(header) if header is not None else None
    return Caller(agent_id=agent_id, job=job, channel=channel)


def refuse_source_argument(arguments: dict) -> None:
    """Tool arguments are written by the model: one naming `source` is refused (422)."""
    if "source" in arguments:
        raise InvalidInput(
            "`source` is not a tool argument: where a call comes from is stated by the "
            "runtime (a job token, or the X-Memory-Source header), never by the model.",
            errors=["Unknown argument: source."],
        )
