"""The presence rule (SPEC §5) for the vault, used alike by `wiki_apply` (REST, MCP, tool
loops) and the page endpoints: a write made while a person is present happens at once; a
scheduled job's (`source` = `job:<id>`) becomes a proposal of one page, of the nightly
compile's kind (§10.5), that a person approves — the vault is durable memory, and a job
never changes durable memory without a person. Checked in full before anything is
proposed: a bad write from a job is 422 exactly like a person's. A job may not delete a
page (403): no proposal kind deletes one.

The `source` comes from memory.presence.Caller.source(): the credential, never the model."""

from __future__ import annotations

from memory.attribution import attributed
from memory.errors import Forbidden
from memory.models import Agent
from memory.presence import is_job_source, validate_source
from proposals.actions import propose
from proposals.models import Proposal
from wiki import compile as wiki_compile
from wiki import pages
from wiki.vault import vault_dir


def save_page_or_propose(agent: Agent, *, source: str, **fields) -> pages.Page | Proposal:
    """`pages.save_page(agent, **fields)` with a person present; from a job, the page as
    that write would leave it, proposed (a pending `wiki_compile` proposal of one page)."""
    validate_source(source)
    if not is_job_source(source):
        with attributed(source=source):
            return pages.save_page(agent, **fields)
    planned = pages.plan_page(agent, **fields)
    return propose(
        wiki_compile.KIND,
        agent=agent,
        target=vault_dir(agent),
        payload={"pages": [planned], "dropped": []},
        reasons=[f"page {planned['title']!r} from {', '.join(planned['sources'])}"],
        source=source,
    )


def delete_page(agent: Agent, slug: str, *, source: str) -> None:
    """`pages.delete_page`; Forbidden (403) from a job."""
    validate_source(source)
    if is_job_source(source):
        raise Forbidden("A scheduled job may not delete a wiki page; a person deletes pages.")
    with attributed(source=source):
        pages.delete_page(agent, slug)
