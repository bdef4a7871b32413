"""The link graph (SPEC §10.3) and the machine-owned `wiki:related` block of each page.

Links are `[[Page]]` or `[[Page|label]]` in a page's author body; the target is the page
whose slug is slugify(Page), or, as OpenClaw writes them, `[[folder/slug|label]]` the page
file in that folder. The app keeps its block only on pages it wrote (keeps_block): a page
carrying another tool's Related block (OpenClaw's) is left exactly as it is. Each page's
machine block lists its links out (existing pages and pages nobody wrote yet) and its
backlinks. A change to one page's links changes the blocks of the pages it links to, so
after every compile or edit the blocks of the whole vault are recomputed and the pages
whose block text differs — only those — are rewritten (`block_changes`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from memory.text import MACHINE_BLOCK_END, MACHINE_BLOCK_START
from wiki.vault import Record, Vault, compute_incoming, join_page, neutralise

HEADING = "## Related"


def _label(text: str) -> str:
    # One line, no link syntax, no markers: a title is shown, never interpreted.
    cleaned = " ".join(neutralise(text).split())
    return cleaned.replace("[", "(").replace("]", ")").replace("|", "/")


def _link(slug: str, title: str) -> str:
    # [[slug|Title]] resolves to the file in Obsidian too (files are named by slug), and
    # slugify(slug) == slug, so the block's links mean what they say.
    return f"[[{slug}|{_label(title)}]]"


def _link_md(record: Record) -> str:
    # Cached on the record (records live as long as their file is unchanged): a pass
    # over 5,000 pages renders 20,000 of these.
    if not record.link_md:
        record.link_md = _link(record.slug, record.title)
    return record.link_md


def render_block(record: Record, vault: Vault, incoming: list[str]) -> str:
    """The machine block of one page, from the graph of `vault`."""
    lines = [MACHINE_BLOCK_START, HEADING, "", "Links out:"]
    pages = vault.pages
    raw_names: dict[str, str] | None = None
    for slug in record.out:
        target = pages.get(slug)
        if target is not None:
            lines.append(f"- {_link_md(target)}")
        else:
            if raw_names is None:
                raw_names = {s: raw for raw, s in record.links if s is not None}
            lines.append(f"- {_link(slug, raw_names.get(slug, slug))} (no page yet)")
    if not record.out:
        lines.append("- none")
    lines += ["", "Linked from:"]
    backlinks = [slug for slug in incoming if slug != record.slug]
    for slug in backlinks:
        lines.append(f"- {_link_md(pages[slug])}")
    if not backlinks:
        lines.append("- none")
    lines.append(MACHINE_BLOCK_END)
    return "\n".join(lines)


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
        block = render_block(record, vault, sorted(incoming.get(slug, ())))
        if block != record.block:
            changes[record.path] = join_page(record.author_text, block)
    return changes


# --- the incremental pass -------------------------------------------------------------------
#
# After a pass, every page's block matched the graph. The next pass only needs to look at
# the pages whose block could have changed since: the pages whose file changed (a record
# that is not the very object the last pass verified — the vault cache hands out the same
# object only while the file is provably unchanged), the pages they link or linked to (a
# backlink came or went), and, when a page appeared, disappeared or changed its title, the
# pages linking to it. Anything unusual (no previous pass in this process, two folders
# holding one slug) falls back to the full pass. The state is taken out while a pass runs
# and put back only when it finished, so a failed pass leaves no half-updated state.


@dataclass
class _Verified:
    records: dict[str, Record]  # path → the record objects whose blocks were verified
    pages: dict[str, Record]
    incoming: dict[str, set[str]]


_verified: dict[str, _Verified] = {}
_verified_lock = threading.Lock()


def _dirty_slugs(vault: Vault, last: _Verified) -> tuple[set[str], dict[str, set[str]]]:
    incoming = last.incoming
    dirty: set[str] = set()
    old_records, new_records = last.records, vault.records
    changed = [path for path, record in new_records.items() if old_records.get(path) is not record]
    changed += [path for path in old_records if path not in new_records]
    olds = [old_records[path] for path in changed if path in old_records]
    news = [new_records[path] for path in changed if path in new_records]
    # Every old side first, then every new side: a page moved by hand between folders is
    # an old and a new record of one slug, and its links must end up counted once.
    for old in olds:
        for target in old.out:
            sources = incoming.get(target)
            if sources is not None:
                sources.discard(old.slug)
                if not sources:
                    del incoming[target]
            dirty.add(target)
        dirty.add(old.slug)
    for new in news:
        for target in new.out:
            incoming.setdefault(target, set()).add(new.slug)
            dirty.add(target)
        dirty.add(new.slug)
    # A page that appeared, disappeared or changed its title changes how every page
    # linking to it shows it.
    for slug in {record.slug for record in (*olds, *news)}:
        before, now = last.pages.get(slug), vault.pages.get(slug)
        if before is None or now is None or before.title != now.title:
            dirty |= incoming.get(slug, set())
    return dirty, incoming


def plan_blocks(vault: Vault) -> dict[str, str]:
    """{path: whole new text} of every page whose machine block must change, looking
    only at what changed since the last verified pass in this process (see above).
    Sets `vault.incoming`. Call `remember(vault)` once the writes are done."""
    with _verified_lock:
        last = _verified.pop(vault.key, None)
    if last is None or vault.shadowed:
        vault.incoming = compute_incoming(vault.pages)
        return block_changes(vault)
    dirty, incoming = _dirty_slugs(vault, last)
    vault.incoming = incoming
    changes: dict[str, str] = {}
    for slug in dirty:
        record = vault.pages.get(slug)
        if record is None or not keeps_block(record):
            continue
        block = render_block(record, vault, sorted(incoming.get(slug, ())))
        if block != record.block:
            changes[record.path] = join_page(record.author_text, block)
    return changes


def remember(vault: Vault) -> None:
    """Record `vault` (with `incoming` set) as the state whose blocks are all verified."""
    if vault.incoming is None or vault.shadowed:
        return
    with _verified_lock:
        _verified[vault.key] = _Verified(dict(vault.records), vault.pages, vault.incoming)


def forget_verified() -> None:
    with _verified_lock:
        _verified.clear()


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
