"""Reading the wiki vault (SPEC §10.1): page files → parsed records.

A page is `<agent dir>/memory/wiki/{entities,concepts,syntheses}/<slug>.md`:

    ---                                   ┐
    title: Hạn Eco                        │
    kind: entity                          │ the author part: frontmatter + body,
    sources: [note:2026-11-20]            │ owned by whoever wrote it (model or person)
    ...                                   │
    ---                                   │
                                          │
    Body with [[Eco Retreat]] links.      ┘

    <!-- wiki:related:start … -->         ┐ the machine block: owned by the code,
    ...links out and backlinks...         │ rewritten on every compile and edit
    <!-- wiki:related:end -->             ┘

**Which block is the machine's.** Only a block that closes the file counts: the last line
is MACHINE_BLOCK_END, the block opens at the last line that is exactly MACHINE_BLOCK_START,
and nothing between them is another marker. Anything else that looks like a block (pasted
into a body, or followed by text) is author text and never read as the machine's; when the
code writes an author part it neutralises the markers in it (`neutralise`), so author text
written through this app can never contain them. Links are read from the author body only,
so a pasted block can never add links or backlinks.

**The cache.** Parsing 5,000 pages on every edit would be too slow, so parsed records are
kept per process, keyed by path and checked against (size, mtime_ns, ctime_ns, inode) from
a scan of the vault on every load (`workspace.scan_files`) — never served without that
check. An atomic rewrite gets a new inode, and ctime changes with every write and cannot
be set back by a user. Because file times are coarse (a few ms), a record read less than
RACY_SECONDS after its file's ctime is "racily clean" (as git calls it): a same-size
in-place rewrite within the same tick would look unchanged, so such a record is re-read on
every load until its file is old enough. Everything here is rebuildable from disk alone.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import threading
import time
from dataclasses import dataclass

import yaml

from memory import workspace
from memory.errors import InvalidInput
from memory.text import MACHINE_BLOCK_END, MACHINE_BLOCK_START, fold, slugify, yaml_plain

VAULT_DIR = "memory/wiki"
REPORTS_DIR = "reports"
# The folders whose files are pages, also the order in which a slug is found. `sources/`
# is OpenClaw's memory-wiki folder of source pages (its kind `source`): read and linked to
# like the others; the app itself writes only the three kinds of KINDS.
FOLDERS = ("entities", "concepts", "syntheses", "sources")
KIND_FOLDERS = {"entity": "entities", "concept": "concepts", "synthesis": "syntheses"}
FOLDER_KINDS = {**{folder: kind for kind, folder in KIND_FOLDERS.items()}, "sources": "source"}
KINDS = tuple(KIND_FOLDERS)
# Folders of a vault whose files are not pages: a `[[reports/…]]` link is no page link.
NON_PAGE_FOLDERS = (REPORTS_DIR,)
FIELDS = ("title", "kind", "sources", "questions", "status", "updated")
RACY_SECONDS = 1.0
RACY_NS = int(RACY_SECONDS * 1e9)
MAX_SLUG_BYTES = 200  # file names are at most 255 bytes on the usual filesystems

# [[Page]] or [[Page|label]]; a target never spans lines or holds brackets or a pipe.
LINK_RE = re.compile(r"\[\[([^\[\]|\n]+)(?:\|([^\[\]\n]*))?\]\]")
# This app's markers only: `openclaw:wiki:related:start` (another tool's) is left alone.
_MARKER_RE = re.compile(r"(?<![\w:])wiki:related:(start|end)")

# OpenClaw's memory-wiki (extensions/memory-wiki): pages carry `id`, `pageType`,
# `sourceIds` (ids of source pages) and `updatedAt` (an ISO timestamp), and its compile
# keeps machine blocks between `<!-- openclaw:wiki:<name>:start/end -->` markers (a
# `## Related` block of sources and backlinks, generated summaries, indexes). Human note
# blocks (`openclaw:human:…`) are the author's.
OPENCLAW_FIELDS = ("id", "pageType", "sourceIds", "updatedAt")
OPENCLAW_RELATED_START = "<!-- openclaw:wiki:related:start -->"
OPENCLAW_RAW_SOURCE = "<!-- openclaw:wiki:raw-source -->"
_FOREIGN_BLOCK_RE = re.compile(
    r"<!--\s*openclaw:wiki:([a-z][a-z-]*):start\s*-->.*?<!--\s*openclaw:wiki:\1:end\s*-->",
    re.DOTALL,
)
_HEADING_RE = re.compile(r"^#[ \t]+(.+?)[ \t]*$", re.MULTILINE)

try:  # libyaml parses a page header ~7x faster than the pure-Python loader
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader


class _AsWrittenLoader(yaml.SafeLoader):
    """YAML as written: timestamps stay the text they were (`updatedAt:
    2026-03-20T09:15:00.000Z` is not turned into a day), so a page rewritten by the app
    keeps every other tool's value exactly."""


_AsWrittenLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def meta_as_written(record: Record) -> dict:
    """The page's frontmatter with every value as written (see _AsWrittenLoader): what a
    rewrite keeps of the keys it does not set. {} when the header is not a mapping."""
    text = record.author_text
    if not text.startswith("---\n"):
        return {}
    end = text.find("\n---", 3)
    while end >= 0 and text[end + 4 : end + 5] not in ("", "\n"):
        end = text.find("\n---", end + 4)
    if end < 0:
        return {}
    try:
        meta = yaml.load(text[4:end], Loader=_AsWrittenLoader) or {}
    except yaml.YAMLError:
        return {}
    return {str(key): value for key, value in meta.items()} if isinstance(meta, dict) else {}


def vault_dir(agent) -> str:
    """The agent's vault, workspace-relative."""
    return agent.path(VAULT_DIR)


_ASCII_RUN = re.compile(r"[^a-z0-9]+")


@functools.lru_cache(maxsize=65536)
def _slug(title: str) -> str:
    if title.isascii():
        # The same result as slugify for ASCII (no marks, NFKC changes nothing, the
        # letters and digits are [a-z0-9] after lowering), ~10x faster: a vault pass
        # slugifies every link target.
        slug = _ASCII_RUN.sub("-", title.lower()).strip("-")
        if slug:
            return slug
    return slugify(title)


def page_slug(title: str) -> str:
    """The slug of a title (§10.2), refusing titles that leave no letter or digit and
    slugs too long to be a file name (422)."""
    if not isinstance(title, str):
        raise InvalidInput("A page title must be text.")
    slug = _slug(title)
    if len(slug.encode("utf-8")) > MAX_SLUG_BYTES:
        raise InvalidInput(f"The title is too long to name a page ({MAX_SLUG_BYTES} bytes).")
    return slug


_NOT_A_PAGE = ""  # link_slug's answer for a link into a folder of non-pages (reports/)


def link_slug(target: str) -> str | None:
    """The slug a `[[target]]` points to, or None when it names nothing (`[[???]]`).

    A target with a folder, as OpenClaw writes links (`[[entities/alpha|Alpha]]`,
    `[[sources/alpha-notes.md]]`), names the page file in that folder: its slug is the
    file name. A link into reports/ names no page and is not a page link ("")."""
    target = target.strip()
    if "/" in target:
        folder, _, rest = target.partition("/")
        stem = rest[:-3] if rest.endswith(".md") else rest
        if folder in NON_PAGE_FOLDERS:
            return _NOT_A_PAGE
        if folder in FOLDERS and stem and "/" not in stem:
            return stem
    try:
        return page_slug(target)
    except InvalidInput:
        return None


def is_openclaw_meta(meta: dict) -> bool:
    """Whether a page's frontmatter is OpenClaw memory-wiki's (`id`, `pageType`…)."""
    return any(key in meta for key in OPENCLAW_FIELDS)


def without_foreign_blocks(body: str) -> str:
    """The body with other tools' machine blocks (`openclaw:wiki:*`) taken out: their
    links are that tool's view of the graph, not the author's links."""
    if "openclaw:wiki:" not in body:
        return body
    return _FOREIGN_BLOCK_RE.sub("", body)


def split_foreign_tail(body: str) -> tuple[str, str]:
    """(body, tail): the tail is OpenClaw's Related block when it closes the page — from its
    `## Related` heading (when right above the start marker) to the end marker — else "".
    """
    end_marker = "<!-- openclaw:wiki:related:end -->"
    stripped = body.rstrip()
    if not stripped.endswith(end_marker):
        return body, ""
    start = stripped.rfind(OPENCLAW_RELATED_START)
    if start < 0:
        return body, ""
    head = stripped[:start].rstrip(" \t")
    if head.endswith("## Related\n"):
        start = len(head) - len("## Related\n")
    return stripped[:start].rstrip("\n"), stripped[start:]


def _day_of(value: object) -> str:
    """`updated` / `updatedAt` as a day: `2026-03-20T09:15:00.000Z` → `2026-03-20`."""
    text = str(value).strip() if value is not None else ""
    if len(text) > 10 and text[10] in "T ":
        head = text[:10]
        try:
            dt.date.fromisoformat(head)
        except ValueError:
            return text
        return head
    return text


def neutralise(text: str) -> str:
    """Author text with the machine-block markers defused (`wiki:related:start` →
    `wiki:related-quoted:start`), so no author text can pose as the machine block."""
    return _MARKER_RE.sub(r"wiki:related-quoted:\1", text)


# --- one file -----------------------------------------------------------------------------


def split_machine_block(text: str) -> tuple[str, str | None]:
    """(author part without trailing newlines, machine block or None). See the module
    docstring for which block counts."""
    stripped = text.rstrip()
    if not stripped.endswith("\n" + MACHINE_BLOCK_END):
        return text.rstrip("\n"), None
    start = stripped.rfind("\n" + MACHINE_BLOCK_START + "\n")
    if start < 0:
        return text.rstrip("\n"), None
    block = stripped[start + 1 :]
    inner = block[len(MACHINE_BLOCK_START) : -len(MACHINE_BLOCK_END)]
    if MACHINE_BLOCK_START in inner or MACHINE_BLOCK_END in inner:
        return text.rstrip("\n"), None
    return stripped[:start].rstrip("\n"), block


def join_page(author_text: str, block: str) -> str:
    """The whole file text: author part, a blank line, the machine block."""
    return f"{author_text.rstrip(chr(10))}\n\n{block}\n"


def parse_author(author_text: str) -> tuple[dict, str]:
    """(frontmatter, body) of an author part. A header that is not a YAML mapping is
    read as body, so a hand-broken page still shows.

    The vault's fast path: the same reading as memory.text.parse_frontmatter (python-
    frontmatter, what facts use) — a test holds the two to the same answers — with libyaml
    and no intermediate objects, since lint and the graph parse every page of a vault."""
    if author_text.startswith("---\n"):
        end = author_text.find("\n---", 3)
        while end >= 0:
            after = author_text[end + 4 : end + 5]
            if after in ("", "\n"):
                break
            end = author_text.find("\n---", end + 4)
        if end >= 0:
            header = author_text[4:end]
            try:
                meta = yaml.load(header, Loader=_Loader) if header.strip() else {}
            except yaml.YAMLError:
                meta = None
            if isinstance(meta, dict):
                body = author_text[end + 4 :].strip("\n")
                return {str(key): yaml_plain(value) for key, value in meta.items()}, body
    return {}, author_text.strip("\n")


def _text_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(item) for item in value if item is not None and str(item).strip()]
    return [str(value)] if str(value).strip() else []


class Record:
    """One parsed page file. `meta` is the frontmatter as written; the typed fields
    (`title`, `sources`…) are read from it leniently, once, so a hand-made page always
    shows. `stamp` identifies the file version it was read from (see `trusted`)."""

    __slots__ = (
        "path", "folder", "slug", "text", "author_text", "block", "meta", "body", "links",
        "title", "kind", "sources", "questions", "status", "updated", "out", "link_md",
        "stamp", "read_at_ns", "_folded", "_lint", "page_id", "source_ids", "openclaw",
        "foreign_block", "foreign_tail", "raw_source",
    )  # fmt: skip

    def __init__(self, path: str, folder: str, slug: str, text: str) -> None:
        self.path, self.folder, self.slug, self.text = path, folder, slug, text
        self.author_text, self.block = split_machine_block(text)
        self.meta, self.body = parse_author(self.author_text)
        meta = self.meta
        # OpenClaw's pages are read as what they are: kind from `pageType`, sources from
        # `sourceIds`, updated from `updatedAt`, the title from the first heading when
        # the frontmatter has none.
        self.openclaw = is_openclaw_meta(meta)
        # OpenClaw's `## Related` block closing the page is OpenClaw's, kept apart from the
        # body and put back exactly as it is on every write (render_author's `tail`).
        self.body, self.foreign_tail = split_foreign_tail(self.body)
        self.foreign_block = bool(self.foreign_tail) or OPENCLAW_RELATED_START in self.body
        self.raw_source = folder == "sources" and OPENCLAW_RAW_SOURCE in self.body
        page_id = meta.get("id")
        self.page_id = str(page_id).strip() if page_id is not None else ""
        title = meta.get("title")
        title = " ".join(str(title).split()) if title is not None else ""
        if not title:
            heading = _HEADING_RE.search(without_foreign_blocks(self.body))
            title = " ".join(heading.group(1).split()) if heading else ""
        self.title = title or slug
        kind = meta.get("kind", meta.get("pageType"))
        self.kind = str(kind) if kind is not None else FOLDER_KINDS[folder]
        self.source_ids = _text_list(meta.get("sourceIds"))
        sources = _text_list(meta.get("sources"))
        self.sources = sources + [item for item in self.source_ids if item not in sources]
        self.questions = _text_list(meta.get("questions"))
        status = meta.get("status")
        self.status = str(status).strip() if status is not None else ""
        updated = meta.get("updated", meta.get("updatedAt"))
        self.updated = _day_of(updated) if updated is not None else ""
        # (target as written, its slug or None when it names no possible page); links in
        # another tool's machine block, or into reports/, are not the author's links.
        self.links = [
            (match.group(1).strip(), found)
            for match in LINK_RE.finditer(without_foreign_blocks(self.body))
            if (found := link_slug(match.group(1))) != _NOT_A_PAGE
        ]
        seen: dict[str, None] = {}
        for _, target in self.links:
            if target is not None and target != slug:
                seen.setdefault(target, None)
        self.out = list(seen)  # slugs linked to, first appearance first, not itself
        self.link_md = ""  # filled by the graph: how other blocks link to this page
        self.stamp: tuple = ()
        self.read_at_ns = 0
        self._folded: list[str] | None = None
        self._lint: tuple | None = None

    @property
    def owns_block(self) -> bool:
        """Whether this app keeps its machine block on the page: not on OpenClaw's pages,
        whose Related section is OpenClaw's (one tool, one block)."""
        return not self.openclaw and not self.foreign_block

    def out_slugs(self) -> list[str]:
        """Slugs this page links to, first appearance first, without repeats or itself."""
        return self.out

    def folded_lines(self) -> list[str]:
        """Title then body lines, folded (§6.1); computed once per record."""
        if self._folded is None:
            self._folded = fold(self.title + "\n" + self.body).split("\n")
        return self._folded

    def trusted(self, stamp: tuple, ctime_ns: int) -> bool:
        """May this cached record stand for a file listed with `stamp` (size, mtime,
        ctime, inode)? Not when the file changed less than RACY_SECONDS before it was
        read: a same-size rewrite within the same clock tick would look unchanged."""
        return stamp == self.stamp and ctime_ns < self.read_at_ns - RACY_NS


# --- the whole vault ----------------------------------------------------------------------


@dataclass
class Vault:
    """The parsed pages of one agent's vault. `pages` maps slug → record; when two
    folders hold the same slug (only possible by hand), the first of FOLDERS wins and
    the other is listed in `shadowed`. `key` names the vault across workspaces (cache
    key); `incoming` is the backlink map once computed (see `links_in`)."""

    base: str
    key: str
    records: dict[str, Record]  # path → record
    pages: dict[str, Record]
    shadowed: list[Record]
    incoming: dict[str, set[str]] | None = None

    def links_in(self) -> dict[str, set[str]]:
        """slug → slugs of the pages linking to it, for every linked slug, existing or
        not. Computed once per Vault (or handed over by the incremental graph pass)."""
        if self.incoming is None:
            self.incoming = compute_incoming(self.pages)
        return self.incoming

    def path_for(self, slug: str, kind: str) -> str:
        """Where a page of this slug lives: its existing file, else the kind's folder."""
        record = self.pages.get(slug)
        if record is not None:
            return record.path
        return f"{self.base}/{KIND_FOLDERS[kind]}/{slug}.md"


def compute_incoming(pages: dict[str, Record]) -> dict[str, set[str]]:
    incoming: dict[str, set[str]] = {}
    for slug, record in pages.items():
        for target in record.out:
            incoming.setdefault(target, set()).add(slug)
    return incoming


_cache: dict[str, dict[str, Record]] = {}
_cache_lock = threading.Lock()


def _cache_key(base: str) -> str:
    return f"{workspace.root()}::{base}"


def forget_cached(base: str, path: str) -> None:
    """Drop one record, e.g. after this process wrote the file (its new mtime is not
    known without a stat that could already see someone else's write)."""
    with _cache_lock:
        _cache.get(_cache_key(base), {}).pop(path, None)


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _page_location(base: str, path: str) -> tuple[str, str] | None:
    rel = path[len(base) + 1 :] if base else path
    parts = rel.split("/")
    if len(parts) != 2 or parts[0] not in FOLDERS or not parts[1].endswith(".md"):
        return None
    return parts[0], parts[1][:-3]


def load(agent) -> Vault:
    """The vault as it is on disk now: one scan, and a read of each page whose cached
    record cannot be trusted. Reports and other files are not pages."""
    base = vault_dir(agent)
    key = _cache_key(base)
    with _cache_lock:
        cached = dict(_cache.get(key, {}))
    records: dict[str, Record] = {}
    for scanned in workspace.scan_files(base, recursive=True):
        location = _page_location(base, scanned.path)
        if location is None:
            continue
        stamp = (scanned.size, scanned.mtime_ns, scanned.ctime_ns, scanned.ino)
        record = cached.get(scanned.path)
        if record is None or not record.trusted(stamp, scanned.ctime_ns):
            read_at_ns = time.time_ns()
            text = workspace.read_scanned(scanned)
            if text is None:
                continue  # deleted since the scan
            record = Record(scanned.path, location[0], location[1], text)
            record.stamp, record.read_at_ns = stamp, read_at_ns
        records[scanned.path] = record
    with _cache_lock:
        _cache[key] = records
    return _assemble(base, key, records)


def _assemble(base: str, key: str, records: dict[str, Record]) -> Vault:
    pages: dict[str, Record] = {}
    shadowed: list[Record] = []
    rank = {folder: index for index, folder in enumerate(FOLDERS)}
    for record in sorted(records.values(), key=lambda r: (rank[r.folder], r.path)):
        if record.slug in pages:
            shadowed.append(record)
        else:
            pages[record.slug] = record
    return Vault(base, key, records, pages, shadowed)


def with_changes(vault: Vault, changes: dict[str, str | None]) -> Vault:
    """The vault as it would be with `changes` ({path: whole new text, or None to
    delete}) applied — in memory only."""
    records = dict(vault.records)
    for path, text in changes.items():
        if text is None:
            records.pop(path, None)
            continue
        location = _page_location(vault.base, path)
        if location is None:
            raise InvalidInput(f"Not a page path: {path}.")
        records[path] = Record(path, location[0], location[1], text)
    return _assemble(vault.base, vault.key, records)
