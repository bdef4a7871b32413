"""The link graph (SPEC §10.3) and the machine-owned `wiki:related` block of each page.

Links are `[[Page]]` or `[[Page|label]]` in a page's author body; the target is the page
whose slug is slugify(Page). Each page's machine block lists its links out (existing
pages and pages nobody wrote yet) and its backlinks. A change to one page's links changes
the blocks of the pages it links to, so after every compile or edit the blocks of the
whole vault are recomputed and the pages whose block text differs — only those — are
rewritten (`block_changes`).
"""

from __future__ import annotations

from memory.text import MACHINE_BLOCK_END, MACHINE_BLOCK_START
from wiki.vault import Record, Vault, join_page, neutralise

HEADING = "## Related"


def _label(text: str) -> str:
    # One line, no link syntax, no markers: a title is shown, never interpreted.
    cleaned = " ".join(neutralise(text).split())
    return cleaned.replace("[", "(").replace("]", ")").replace("|", "/")


def _link(slug: str, title: str) -> str:
    # [[slug|Title]] resolves to the file in Obsidian too (files are named by slug), and
    # slugify(slug) == slug, so the block's links mean what they say.
    return f"[[{slug}|{_label(title)}]]"


def render_block(record: Record, vault: Vault, incoming: list[str]) -> str:
    """The machine block of one page, from the graph of `vault`."""
    raw_names = {slug: target for target, slug in record.links if slug is not None}
    lines = [MACHINE_BLOCK_START, HEADING, "", "Links out:"]
    out = record.out_slugs()
    for slug in out:
        target = vault.pages.get(slug)
        if target is not None:
            lines.append(f"- {_link(slug, target.title)}")
        else:
            lines.append(f"- {_link(slug, raw_names.get(slug, slug))} (no page yet)")
    if not out:
        lines.append("- none")
    lines += ["", "Linked from:"]
    backlinks = [slug for slug in incoming if slug != record.slug]
    for slug in backlinks:
        lines.append(f"- {_link(slug, vault.pages[slug].title)}")
    if not backlinks:
        lines.append("- none")
    lines.append(MACHINE_BLOCK_END)
    return "\n".join(lines)


def block_changes(vault: Vault, *, only: set[str] | None = None) -> dict[str, str]:
    """{path: whole new text} for every page (or every page whose path is in `only`)
    whose machine block is missing or differs from what the graph says."""
    incoming = vault.links_in()
    changes: dict[str, str] = {}
    for slug, record in vault.pages.items():
        if only is not None and record.path not in only:
            continue
        block = render_block(record, vault, incoming.get(slug, []))
        if block != record.block:
            changes[record.path] = join_page(record.author_text, block)
    return changes


def links_of(vault: Vault, slug: str) -> tuple[list[dict], list[dict]]:
    """(links out, links in) of one page as `{"slug", "title", "exists"}` rows."""
    record = vault.pages[slug]
    raw_names = {target_slug: raw for raw, target_slug in record.links if target_slug}
    out = []
    for target in record.out_slugs():
        page = vault.pages.get(target)
        out.append(
            {
                "slug": target,
                "title": page.title if page else raw_names.get(target, target),
                "exists": page is not None,
            }
        )
    incoming = [
        {"slug": source, "title": vault.pages[source].title, "exists": True}
        for source in vault.links_in().get(slug, [])
        if source != slug
    ]
    return out, incoming
