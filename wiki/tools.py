"""The wiki's agent tools (SPEC §10.4), registered in the memory tool registry from
WikiConfig.ready(). Each is `func(agent, *, source, **arguments) -> str`; bad input raises
InvalidInput, which REST answers with 422 and `memory.tools.run_tool` hands the model as
an `Error: …` text."""

from __future__ import annotations

from pathlib import Path

from memory.errors import NotFound
from memory.models import Agent
from memory.query import Query
from memory.tools import ToolResult, ToolSpec, proposed_result
from wiki import pages, writes

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts" / "tools"


def wiki_get(agent: Agent, *, source: str, title: str) -> str:
    """The whole page a title names (frontmatter, body, machine block), as on disk; a
    `folder/slug` names that page (SPEC §10.1: a page is its path). A page that is not
    there is a tool error, as memory_get's missing file is (NotFound)."""
    page = pages.get_page_by_title(agent, title)
    if page is None:
        raise NotFound(
            f"No wiki page is titled {title!r} (page name {pages.page_slug(title)!r}). "
            "Try wiki_search."
        )
    return f"[{page.path}]\n{page.text}"


def wiki_search(agent: Agent, *, source: str, query: str) -> str:
    """At most 8 pages, `[name] <matching text>` each: the name wiki_get takes (the slug,
    or `folder/slug` where another folder holds a page of that slug)."""
    hits = pages.search_pages(agent, Query.parse(query))
    if not hits:
        return f'No wiki page matches "{query}".'
    return "\n".join(f"[{hit.name}] {hit.text}" for hit in hits)


def wiki_apply(
    agent: Agent,
    *,
    source: str,
    title: str,
    kind: str,
    sources: list[str],
    body: str,
    questions: list[str] | None = None,
    status: str | None = None,
) -> str | ToolResult:
    """Upsert a page's author part (never the machine block); refuses a page without
    sources (InvalidInput). From a job, the page is proposed instead (wiki.writes)."""
    page = writes.save_page_or_propose(
        agent,
        source=source,
        title=title,
        kind=kind,
        sources=sources,
        body=body,
        questions=questions,
        status=status,
    )
    if not isinstance(page, pages.Page):
        return proposed_result(page, f"write the wiki page {title!r}")
    verb = "Created" if page.created else "Updated"
    links = len(page.links_out)
    return (
        f"{verb} wiki page [{page.name}] ({page.path}), kind {page.kind}, status "
        f"{page.status}, updated {page.updated}; {len(page.sources)} source(s), "
        f"{links} link(s) out, {len(page.links_in)} link(s) in."
    )


WIKI_TOOLS = (
    ToolSpec("wiki_get", wiki_get, "Read a wiki page", read_only=True, idempotent=True),
    ToolSpec("wiki_search", wiki_search, "Search the wiki", read_only=True, idempotent=True),
    # Replaces the author part of an existing page: destructive, and the same call twice
    # leaves the same page.
    ToolSpec("wiki_apply", wiki_apply, "Write a wiki page", destructive=True, idempotent=True),
)
