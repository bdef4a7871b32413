"""The link graph (SPEC §10.3) and the machine-owned `wiki:related` block of each page.

Links are `[[Page]]` or `[[Page|label]]` in a page's author body; the target is the page
whose slug is slugify(Page), or, as OpenClaw writes them, `[[folder/slug|label]]` the page
file in that folder (a page is its path: wiki.vault.Vault.resolve). A block names a page by
its slug, or by `folder/slug` when another folder holds a page of the same slug, so every
link it writes means one page. The app keeps its block only on pages it wrote (keeps_block): a page
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


def _link(name: str, title: str) -> str:
    # [[slug|Title]] resolves to the file in Obsidian too (files are named by slug), and
    # slugify(slug) == slug, so the block's links mean what they say; [[folder/slug|…]]
    # where two folders hold the slug.
    return f"[[{name}|{_label(title)}]]"


def _link_md(record: Record, vault: Vault) -> str:
    # Cached on the record (records live as long as their file is unchanged): a pass
    # over 20,000 pages renders 80,000 of these.
    if len(vault.named.get(record.slug, ())) > 1:
        if not record.key_link_md:
            record.key_link_md = f"- {_link(record.key, record.title)}"
        return record.key_link_md
    if not record.link_md:
        record.link_md = f"- {_link(record.slug, record.title)}"
    return record.link_md


def _backlink_order(key: str) -> tuple[str, str]:
    # By slug, as the blocks have always listed them; the folder tells two of one slug apart.
    return key.partition("/")[2], key


def sorted_backlinks(vault: Vault, key: str) -> list[str]:
    """The keys of the pages linking to `key`, in the block's order."""
    return sorted(vault.backlinks(key), key=_backlink_order)


def render_block(record: Record, vault: Vault, incoming: list[str]) -> str:
    """The machine block of one page, from the graph of `vault`; `incoming`: the keys of
    the pages linking to it (sorted_backlinks)."""
    pages = vault.pages
    out: list[str] = []
    shown: set[str] = set()
    raw_names: dict[str, str] | None = None
    for ref in record.out:
        found = vault.resolve(ref)
        if found is not None:
            if found not in shown and found != record.key:
                shown.add(found)
                out.append(_link_md(pages[found], vault))
        else:
            if raw_names is None:
                raw_names = {r: raw for raw, r in record.links if r is not None}
            out.append(f"- {_link(ref, raw_names.get(ref, ref))} (no page yet)")
    own = record.key
    back = [_link_md(pages[key], vault) for key in incoming if key != own]
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
    changes: dict[str, str] = {}
    for key, record in vault.pages.items():
        if only is not None and record.path not in only:
            continue
        if not keeps_block(record, writing=only is not None):
            continue
        block = render_block(record, vault, sorted_backlinks(vault, key))
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
    only at the unverified keys of `vault` (all of them for a vault parsed from
    scratch)."""
    if vault.unverified is None:
        return block_changes(vault)
    pages = vault.pages
    changes: dict[str, str] = {}
    for key in vault.unverified:
        record = pages.get(key)
        if record is None or not keeps_block(record):
            continue
        block = render_block(record, vault, sorted_backlinks(vault, key))
        if block != record.block:
            changes[record.path] = join_page(record.author_text, block)
    return changes


def _row(vault: Vault, record: Record) -> dict:
    return {
        "slug": record.slug,
        "key": record.key,
        "folder": record.folder,
        "title": record.title,
        "exists": True,
    }


def links_of(vault: Vault, key: str) -> tuple[list[dict], list[dict]]:
    """(links out, links in) of the page `key` as `{"slug", "key", "folder", "title",
    "exists"}` rows (a link to no page: its key, or "" for a bare name, and exists
    false)."""
    record = vault.pages[key]
    raw_names = {ref: raw for raw, ref in record.links if ref}
    out = []
    seen: set[str] = set()
    for ref in record.out:
        found = vault.resolve(ref)
        if found is None:
            folder, _, slug = ref.rpartition("/")
            out.append(
                {
                    "slug": slug,
                    "key": ref if folder else "",
                    "folder": folder,
                    "title": raw_names.get(ref, ref),
                    "exists": False,
                }
            )
        elif found not in seen and found != key:
            seen.add(found)
            out.append(_row(vault, vault.pages[found]))
    incoming = [_row(vault, vault.pages[source]) for source in sorted_backlinks(vault, key)]
    return out, incoming
