"""The link graph (SPEC §10.3) and the machine-owned `wiki:related` block of each page.

Links are `[[Page]]` or `[[Page|label]]` in a page's author body; the target is the page
whose slug is slugify(Page), or, as OpenClaw writes them, `[[folder/slug|label]]` the page
file in that folder. The app keeps its block only on pages it wrote (keeps_block): a page
carrying another tool's Related block (OpenClaw's) is left exactly as it is. Each page's
machine block lists its links out (existing pages and pages nobody wrote yet) and its
backlinks. A change to one page's links changes
the blocks of the pages it links to, so after every compile or edit the blocks of the pages
that could have changed are recomputed (`plan_blocks`; the whole vault on a first pass,
`block_changes`) and those whose block text differs — only those — are rewritten.
"""

from __future__ import annotations

from memory.text import MACHINE_BLOCK_END, MACHINE_BLOCK_START
from wiki.vault import Record, Vault, join_page, neutralise

HEADING = "## Related"


def _label(text: str) -> str:
    # One line, no link syntax, no markers: a title is shown, never interpreted.
    if "wiki:related" in text:
        text = neutralise(text)
    # A printable text has no whitespace but the space: single spaces and no ends of
    # them mean split/join would change nothing (the usual title, at no cost).
    if not text.isprintable() or "  " in text or text[:1] == " " or text[-1:] == " ":
        text = " ".join(text.split())
    return text.replace("[", "(").replace("]", ")").replace("|", "/")


def _link(slug: str, title: str) -> str:
    # [[slug|Title]] resolves to the file in Obsidian too (files are named by slug), and
    # slugify(slug) == slug, so the block's links mean what they say.
    return f"[[{slug}|{_label(title)}]]"


def _link_md(record: Record) -> str:
    # Cached on the record (records live as long as their file is unchanged): a pass
    # over 20,000 pages renders 80,000 of these.
    if not record.link_md:
        record.link_md = f"- {_link(record.slug, record.title)}"
    return record.link_md


def render_block(record: Record, vault: Vault, incoming: list[str]) -> str:
    """The machine block of one page, from the graph of `vault`."""
    pages = vault.pages
    out: list[str] = []
    raw_names: dict[str, str] | None = None
    for slug in record.out:
        target = pages.get(slug)
        if target is not None:
            out.append(target.link_md or _link_md(target))
        else:
            if raw_names is None:
                raw_names = {s: raw for raw, s in record.links if s is not None}
            out.append(f"- {_link(slug, raw_names.get(slug, slug))} (no page yet)")
    own = record.slug
    back = [
        (source.link_md or _link_md(source))
        for source in (pages[slug] for slug in incoming if slug != own)
    ]
    return "\n".join(
        [
            MACHINE_BLOCK_START,
            HEADING,
            "",
            "Links out:",
            *(out or _NONE),
            "",
            "Linked from:",
            *(back or _NONE),
            MACHINE_BLOCK_END,
        ]
    )


_NONE = ["- none"]


def keeps_block(record: Record, *, writing: bool = False) -> bool:
    """Whether the app keeps its machine block on this page: on a page it is writing now,
    or that already carries its block — never on a page another tool keeps a Related block
    on (OpenClaw's pages), and never added to a page the app did not write."""
    return record.owns_block and (writing or record.block is not None)


def block_changes(vault: Vault, *, only: set[str] | None = None) -> dict[str, str]:
    """{path: whole new text} for every page whose machine block differs from what the
    graph says (see keeps_block). With `only`: just those paths, pages being written now,
    which gain a block when they have none. A full pass."""
    incoming = vault.links_in()
    changes: dict[str, str] = {}
    for slug, record in vault.pages.items():
        if only is not None and record.path not in only:
            continue
        if not keeps_block(record, writing=only is not None):
            continue
        sources = incoming.get(slug)
        block = render_block(record, vault, sorted(sources) if sources else [])
        if block != record.block:
            changes[record.path] = join_page(record.author_text, block)
    return changes


# --- the incremental pass -------------------------------------------------------------------
#
# A vault snapshot knows which slugs' blocks may not match the graph (`Vault.unverified`):
# every page whose record changed, the pages it links or linked to (a backlink came or
# went), and, when a page appeared, disappeared or changed its title, the pages linking to
# it — accumulated over loads until a rebuild verifies them. A snapshot parsed from scratch
# has them all unverified (None): its first rebuild is the full pass.


def plan_blocks(vault: Vault) -> dict[str, str]:
    """{path: whole new text} of every page whose machine block must change, looking
    only at the unverified slugs of `vault` (all of them for a vault parsed from
    scratch)."""
    if vault.unverified is None:
        return block_changes(vault)
    incoming, pages = vault.incoming, vault.pages
    changes: dict[str, str] = {}
    for slug in vault.unverified:
        record = pages.get(slug)
        if record is None or not keeps_block(record):
            continue
        block = render_block(record, vault, sorted(incoming.get(slug, ())))
        if block != record.block:
            changes[record.path] = join_page(record.author_text, block)
    return changes


def links_of(vault: Vault, slug: str) -> tuple[list[dict], list[dict]]:
    """(links out, links in) of one page as `{"slug", "title", "exists"}` rows."""
    record = vault.pages[slug]
    raw_names = {target_slug: raw for raw, target_slug in record.links if target_slug}
    out = []
    for target in record.out:
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
        for source in sorted(vault.links_in().get(slug, ()))
        if source != slug
    ]
    return out, incoming
