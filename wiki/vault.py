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

**A page is its path.** Its key is `<folder>/<slug>` (`sources/0010-alpha`): two folders
may hold pages of one file name (OpenClaw's vaults do, a source beside the concept drawn
from it), and both are pages — listed, read, searched, linked and linted apart. A link
`[[folder/slug]]` names exactly that page; a bare `[[name]]` names the page of that slug,
the first in folder order when several share it — which lint reports (`ambiguous`), since
the author meant one of them.

**Which block is the machine's.** Only a block that closes the file counts: the last line
is MACHINE_BLOCK_END, the block opens at the last line that is exactly MACHINE_BLOCK_START,
and nothing between them is another marker. Anything else that looks like a block (pasted
into a body, or followed by text) is author text and never read as the machine's; when the
code writes an author part it neutralises the markers in it (`neutralise`), so author text
written through this app can never contain them. Links are read from the author body only,
so a pasted block can never add links or backlinks.

**Loading, and what stays fresh.** Parsing 20,000 pages on every request would be far too
slow, so each process keeps the vault it parsed — records, the backlink map, which machine
blocks are verified, the lint issues — as an immutable snapshot, and derives the next one
from the files that changed (`Vault.changed`: the pages, backlinks and issues of what
changed, not of the whole vault). Which files changed, without a stat of every page:

- **Through the app** (wiki.pages writes every page under the vault lock): each write
  appends its paths to the vault's change list, a small file under `.memory-state/` with a
  generation number (`record_changes`); every load reads it first and re-reads exactly
  the pages named since the generation it knows. So an edit in one process or host is in
  the very next load of every other.
- **By hand** (an editor, Obsidian, a sync tool): a load at least MEMORY_RECONCILE_SECONDS
  after this process's last reconcile stats every page (`workspace.scan_files`) and
  re-reads those whose (size, mtime_ns, ctime_ns, inode) differ; `refresh` always does. A
  page asked for by slug is stat'ed on every load (`paths`), so the page one opens is
  always its current file; its backlinks from other hand-edited pages follow within the
  bound.

A record read less than RACY_SECONDS after its file's ctime is "racily clean" (as git
calls it): a same-size in-place rewrite within the same clock tick would keep every stamp,
so such a record is re-read whenever it is looked at, until its file is old enough.
Nothing here is memory: every snapshot is rebuildable from the files alone.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import functools
import gc
import hashlib
import re
import secrets
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import yaml
from django.conf import settings

from memory import workspace
from memory.errors import InvalidInput, PathRefused
from memory.text import (
    MACHINE_BLOCK_END,
    MACHINE_BLOCK_START,
    fold,
    refuse_unstorable,
    slugify,
    yaml_plain,
)

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


def _header_end(text: str) -> int:
    """Where the frontmatter of a page's author text ends (the index of its closing
    `\n---`), or -1 when it has none."""
    if not text.startswith("---\n"):
        return -1
    end = text.find("\n---", 3)
    while end >= 0 and text[end + 4 : end + 5] not in ("", "\n"):
        end = text.find("\n---", end + 4)
    return end


_TOP_KEY = re.compile(r"([A-Za-z_][\w-]*)[ \t]*:")


def _key_blocks(header: str) -> list[tuple[str | None, list[str]]]:
    """The frontmatter's lines grouped by top-level key: (key, its lines — the key's own
    and the indented or `- ` lines after it); (None, [line]) for a line of no key (a
    comment)."""
    blocks: list[tuple[str | None, list[str]]] = []
    for line in header.split("\n"):
        match = _TOP_KEY.match(line)
        if match:
            blocks.append((match.group(1), [line]))
        elif (
            blocks
            and blocks[-1][0] is not None
            and (line[:1] in (" ", "\t") or line == "-" or line.startswith("- ") or not line)
        ):
            blocks[-1][1].append(line)
        else:
            blocks.append((None, [line]))
    return blocks


def edit_frontmatter(text: str, changes: dict[str, object], *, body: str | None = None) -> str:
    """A page's author text with only `changes` made to its frontmatter ({key: new value,
    or None to remove the key}): each changed key's lines are replaced by the key dumped
    alone, a new key goes last, and every other line stays byte for byte — unknown keys,
    their order, comments, quoting. `body` (when given) replaces the text after the
    frontmatter. A text without frontmatter gets one of the changes alone."""
    end = _header_end(text)
    if end < 0 and all(value is None for value in changes.values()):
        return (body if body is not None else text).strip("\n")  # no frontmatter to add
    if end < 0:
        blocks: list[tuple[str | None, list[str]]] = []
        rest = "\n\n" + text.strip("\n") if text.strip() else ""
    else:
        header = text[4:end] if end > 3 else ""
        blocks = _key_blocks(header) if header else []
        rest = text[end + 4 :]
    pending = dict(changes)
    lines: list[str] = []
    for key, block in blocks:
        if key is not None and key in pending:
            value = pending.pop(key)
            if value is not None:
                lines += _dump_key(key, value)
            continue
        lines += block
    for key, value in pending.items():
        if value is not None:
            lines += _dump_key(key, value)
    if body is not None:
        stripped = body.strip("\n")
        rest = f"\n\n{stripped}" if stripped else ""
    return "---\n" + "\n".join(lines) + "\n---" + rest


_ISO_MOMENT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


def _dump_key(key: str, value: object) -> list[str]:
    refuse_unstorable(value, "frontmatter", numbers=False)
    if isinstance(value, str) and _ISO_MOMENT.fullmatch(value):
        return [f"{key}: {value}"]  # as OpenClaw writes `updatedAt` (toISOString), unquoted
    dumped = yaml.safe_dump(
        {key: value}, allow_unicode=True, sort_keys=False, default_flow_style=False
    )
    return dumped.rstrip("\n").split("\n")


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


_NOT_A_PAGE = ""  # link_ref's answer for a link into a folder of non-pages (reports/)


@functools.lru_cache(maxsize=131072)  # a vault pass resolves every link of every page
def link_ref(target: str) -> str | None:
    """What a `[[target]]` names: a page key `folder/slug` when it says its folder, as
    OpenClaw writes links (`[[entities/alpha|Alpha]]`, `[[sources/alpha-notes.md]]`), else
    the bare slug of the title (any page of that slug: Vault.resolve); None when it names
    nothing (`[[???]]`). A link into reports/ names no page and is not a page link ("")."""
    target = target.strip()
    if "/" in target:
        folder, _, rest = target.partition("/")
        stem = rest[:-3] if rest.endswith(".md") else rest
        if folder in NON_PAGE_FOLDERS:
            return _NOT_A_PAGE
        if folder in FOLDERS and stem and "/" not in stem:
            return f"{folder}/{stem}"
    try:
        return page_slug(target)
    except InvalidInput:
        return None


def is_key(ref: str) -> bool:
    """Whether a link's ref (link_ref) names one page by its folder (`folder/slug`)."""
    return "/" in ref


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
            meta = _simple_header(header) if header.strip() else {}
            if meta is not None:  # strings, lists of strings and None only
                return meta, author_text[end + 4 :].strip("\n")
            try:
                meta = yaml.load(header, Loader=_Loader)
            except yaml.YAMLError:
                meta = None
            if isinstance(meta, dict):
                body = author_text[end + 4 :].strip("\n")
                return {str(key): yaml_plain(value) for key, value in meta.items()}, body
    return {}, author_text.strip("\n")


# The header this app writes (yaml.safe_dump: `key: value`, `key: []`, `key:` then `- item`
# lines, single quotes where YAML needs them) is read without the YAML library: a third of
# a vault load went into PyYAML's constructors. Only lines whose meaning is beyond doubt
# are read so — a plain scalar YAML's own resolver calls a string, a one-line single-quoted
# string — and any other line sends the whole header to YAML. A test holds the two to the
# same answers on generated headers.
_RESOLVER = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"
_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(?: (.*))?")
_NOT_PLAIN_START = frozenset("-?:,[]{}#&*!|>'\"%@`")


@functools.lru_cache(maxsize=65536)
def _plain_string(value: str) -> bool:
    """Is `value`, as a one-line plain scalar in block context, read by YAML as exactly
    this string? No to anything it would read otherwise (yes, 1:20, 2026-11-30, null…)
    or that needs care (indicators, ': ', ' #', surrounding or unusual whitespace)."""
    return bool(
        value
        and value[0] not in _NOT_PLAIN_START
        and value == value.strip()
        and value.isprintable()
        and ": " not in value
        and " #" not in value
        and not value.endswith(":")
        and _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) == _STR_TAG
    )


_UNREAD = object()


def _simple_scalar(raw: str) -> object:
    if raw[:1] == "'":
        inner = raw[1:-1]
        if len(raw) >= 2 and raw[-1] == "'" and "'" not in inner.replace("''", ""):
            if inner.isprintable():
                return inner.replace("''", "'")
        return _UNREAD
    return raw if _plain_string(raw) else _UNREAD


@functools.lru_cache(maxsize=65536)  # `kind: entity`, `status: ok`, `- note:…` repeat
def _header_line(line: str) -> tuple:
    """("item", value) for `- value`; ("key", key, value) for `key: value`, value
    _LIST for `key:` (a list follows, or nothing: None) and [] for `key: []`; () for a
    line the fast reading leaves to YAML."""
    if line[:2] == "- ":
        item = _simple_scalar(line[2:])
        return () if item is _UNREAD else ("item", item)
    match = _KEY_LINE.fullmatch(line)
    if match is None or not _plain_string(match.group(1)):
        return ()
    key, raw = match.groups()
    if not raw:
        return ("key", key, _LIST)
    if raw == "[]":
        return ("key", key, [])
    value = _simple_scalar(raw)
    return () if value is _UNREAD else ("key", key, value)


_LIST = object()


def _simple_header(header: str) -> dict | None:
    """The mapping of a header made only of lines read above, or None (read it with
    YAML)."""
    meta: dict = {}
    key = None  # the key whose list is being read
    for line in header.split("\n"):
        kind = _header_line(line)
        if not kind:
            return None
        if kind[0] == "item":
            if key is None:
                return None
            if meta[key] is None:
                meta[key] = []
            meta[key].append(kind[1])
            continue
        _, name, value = kind
        if value is _LIST:
            meta[name], key = None, name
        else:
            meta[name], key = (list(value) if isinstance(value, list) else value), None
    return meta


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
        "path", "folder", "slug", "key", "text", "author_text", "block", "meta", "body",
        "links", "title", "kind", "sources", "questions", "status", "updated", "out",
        "link_md", "key_link_md", "stamp", "read_at_ns", "_folded", "_lint", "page_id",
        "source_ids", "openclaw", "foreign_block", "foreign_tail", "raw_source",
        "questions_md",
    )  # fmt: skip

    def __init__(self, path: str, folder: str, slug: str, text: str) -> None:
        self.path, self.folder, self.slug, self.text = path, folder, slug, text
        self.key = f"{folder}/{slug}"  # the page's identity: its path in the vault
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
        # (target as written, its ref — a key or a bare slug, link_ref — or None when it
        # names no possible page); links in another tool's machine block, or into
        # reports/, are not the author's links.
        self.links = [
            (target.strip(), found)
            for target, _ in LINK_RE.findall(without_foreign_blocks(self.body))
            if (found := link_ref(target)) != _NOT_A_PAGE
        ]
        seen: dict[str, None] = {}
        for _, target in self.links:
            if target is not None and target != slug and target != self.key:
                seen.setdefault(target, None)
        self.out = list(seen)  # refs linked to, first appearance first, not itself
        # Filled by the graph: how other blocks link to this page, by slug and by key.
        self.link_md = ""
        self.key_link_md = ""
        self.stamp: tuple = ()
        self.read_at_ns = 0
        self._folded: list[str] | None = None
        self._lint: tuple | None = None
        self.questions_md: str | None = None  # the page's section of open-questions.md

    @property
    def owns_block(self) -> bool:
        """Whether this app keeps its machine block on the page: not on OpenClaw's pages,
        whose Related section is OpenClaw's (one tool, one block)."""
        return not self.openclaw and not self.foreign_block and not self.raw_source

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

_RANK = {folder: index for index, folder in enumerate(FOLDERS)}


def _order_key(record: Record) -> tuple[int, str]:
    return (_RANK[record.folder], record.path)


class Vault:
    """One snapshot of an agent's vault: never changed once handed out (`changed` makes
    the next one), so a request can read it while another derives its successor.

    - `records`: path → record of every page file; `pages`: key (`folder/slug`) → record,
      in folder order then path — every page, also two of one slug in two folders;
      `named`: slug → the keys of the pages of that slug, in folder order;
    - `incoming`: ref → keys of the pages linking with that ref (a key, or a bare slug:
      the links as written, kept from snapshot to snapshot); a page's backlinks are the
      links to its key and, when it is what its bare slug names, to its slug
      (`backlinks`);
    - `unverified`: keys whose machine block may not match the graph (None: all of them)
      — what the next rebuild must look at (wiki.graph.plan_blocks);
    - `lint_base` / `lint_dirty`: the per-page lint issues of an ancestor and the keys
      changed since (wiki.lint keeps them);
    - `key` names the vault across workspaces.
    """

    __slots__ = (
        "base", "key", "records", "pages", "named", "incoming", "unverified",
        "lint_base", "lint_dirty", "lint_cache", "lock", "_order",
    )  # fmt: skip

    def __init__(
        self,
        base: str,
        key: str,
        records: dict[str, Record],
        pages: dict[str, Record] | None = None,
        named: dict[str, tuple[str, ...]] | None = None,
        incoming: dict[str, set[str]] | None = None,
    ) -> None:
        self.base, self.key, self.records = base, key, records
        if pages is None:
            pages = {r.key: r for r in sorted(records.values(), key=_order_key)}
        if named is None:
            found: dict[str, list[str]] = {}
            for page_key, record in pages.items():
                found.setdefault(record.slug, []).append(page_key)
            named = {slug: tuple(keys) for slug, keys in found.items()}
        self.pages, self.named = pages, named
        self.incoming = compute_incoming(pages) if incoming is None else incoming
        self.unverified: set[str] | None = None
        self.lint_base: tuple | None = None
        self.lint_dirty: set[str] | None = None
        self.lint_cache: tuple | None = None
        self.lock = threading.Lock()
        self._order: list[tuple[int, str]] | None = None

    def links_in(self) -> dict[str, set[str]]:
        """ref → keys of the pages linking with it (read only)."""
        return self.incoming

    def resolve(self, ref: str | None) -> str | None:
        """The key of the page a link's ref names (link_ref), or None: a key names that
        page; a bare slug the page of that slug, the first in folder order when several
        share it (lint says so: `ambiguous`)."""
        if not ref:
            return None
        if is_key(ref):
            return ref if ref in self.pages else None
        keys = self.named.get(ref)
        return keys[0] if keys else None

    def holders(self, slug: str) -> tuple[str, ...]:
        """The keys of the pages named `slug`, in folder order."""
        return self.named.get(slug, ())

    def name_of(self, record: Record) -> str:
        """How to name the page where a name must pick one page: its slug, or its key
        when another folder holds a page of the same slug."""
        return record.slug if len(self.named.get(record.slug, ())) <= 1 else record.key

    def backlinks(self, key: str) -> set[str]:
        """Keys of the pages linking to the page `key`: by its key, and by its bare slug
        when that names it."""
        record = self.pages.get(key)
        found = set(self.incoming.get(key, ()))
        if record is not None and self.resolve(record.slug) == key:
            found |= self.incoming.get(record.slug, set())
        found.discard(key)
        return found

    def path_for(self, folder: str, slug: str) -> str:
        """The file of the page `folder/slug`, whether or not it exists."""
        return f"{self.base}/{folder}/{slug}.md"

    def candidate_paths(self, slug: str) -> list[str]:
        """Every path a page of this slug could have (one per folder)."""
        return [f"{self.base}/{folder}/{slug}.md" for folder in FOLDERS]

    def changed(self, changes: dict[str, Record | None], *, verified: bool = False) -> Vault:
        """The next snapshot: `changes` ({path: new record, or None when the file is
        gone}) applied to pages, backlinks, the unverified blocks and the lint state, at
        the cost of what changed (plus a copy of the maps).

        With `verified`, the changes are only machine blocks just written to match the
        graph (same author parts): their keys become verified instead of dirty. A change
        of which pages share a slug (one appears beside another of its name, or one of
        two goes) changes how every page names them: everything is dirty then."""
        records, keys = self._records_after(changes)
        if verified:
            return self._verified(records, changes, keys)
        pages, order = self._pages_after(records, keys)
        named, shared = self._named_after(pages, keys)
        incoming, dirty = self._backlinks_after(pages, named, keys)
        child = Vault(self.base, self.key, records, pages, named, incoming)
        child._order = order
        if shared:
            child.unverified, child.lint_base, child.lint_dirty = None, self.lint_base, None
            return child
        child.unverified = None if self.unverified is None else self.unverified | dirty
        child.lint_base = self.lint_base
        child.lint_dirty = None if self.lint_dirty is None else self.lint_dirty | dirty
        return child

    def _records_after(
        self, changes: dict[str, Record | None]
    ) -> tuple[dict[str, Record], set[str]]:
        """The records with `changes` applied, and the keys of every record changed."""
        records = dict(self.records)
        keys: set[str] = set()
        for path, record in changes.items():
            old = records.pop(path, None)
            if old is not None:
                keys.add(old.key)
            if record is not None:
                records[path] = record
                keys.add(record.key)
        return records, keys

    def _verified(
        self, records: dict[str, Record], changes: dict[str, Record | None], keys: set[str]
    ) -> Vault:
        """The next snapshot when only machine blocks changed: same pages, same links;
        the keys written become verified."""
        pages = dict(self.pages)
        for record in changes.values():
            if record is not None and record.key in pages:
                pages[record.key] = record
        child = Vault(self.base, self.key, records, pages, self.named, self.incoming)
        child._order = self._order
        child.unverified = None if self.unverified is None else self.unverified - keys
        # Blocks are not linted: the lint state carries over as it is.
        child.lint_base, child.lint_dirty = self.lint_base, self.lint_dirty
        child.lint_cache = self.lint_cache
        return child

    def _pages_after(
        self, records: dict[str, Record], keys: set[str]
    ) -> tuple[dict[str, Record], list[tuple[int, str]] | None]:
        """key → record after the change, in folder then path order, and that order. The
        order list is edited (bisect) only when a page appeared or went."""
        by_key = {record.key: record for record in records.values() if record.key in keys}
        appeared = {key for key in by_key if key not in self.pages}
        gone = {key for key in keys if key not in by_key and key in self.pages}
        if not appeared and not gone:
            pages = dict(self.pages)
            pages.update(by_key)
            return pages, self._order
        order = list(self._order_list())
        for key in gone:
            del order[bisect.bisect_left(order, _order_key(self.pages[key]))]
        for key in appeared:
            bisect.insort(order, _order_key(by_key[key]))
        return {records[path].key: records[path] for _, path in order}, order

    def _named_after(
        self, pages: dict[str, Record], keys: set[str]
    ) -> tuple[dict[str, tuple[str, ...]], bool]:
        """slug → keys after the change, and whether a slug went from one page to several
        or back (every name of those pages changes then)."""
        slugs = {key.partition("/")[2] for key in keys}
        named = dict(self.named)
        shared = False
        for slug in slugs:
            now = tuple(key for key in (f"{f}/{slug}" for f in FOLDERS) if key in pages)
            before = named.get(slug, ())
            if (len(now) > 1 or len(before) > 1) and now != before:
                shared = True
            if now:
                named[slug] = now
            else:
                named.pop(slug, None)
        return named, shared

    def _backlinks_after(
        self, pages: dict[str, Record], named: dict[str, tuple[str, ...]], keys: set[str]
    ) -> tuple[dict[str, set[str]], set[str]]:
        """The backlinks after the change (copy on write: a set shared with this snapshot
        is never changed), and the keys whose block or lint may differ now."""
        incoming = dict(self.incoming)
        copied: set[str] = set()
        dirty: set[str] = set(keys)
        after = Vault(self.base, self.key, {}, pages, named, incoming)

        def edit(ref: str) -> set[str]:
            if ref not in copied:
                incoming[ref] = set(incoming.get(ref, ()))
                copied.add(ref)
            return incoming[ref]

        for key in keys:
            before, now = self.pages.get(key), pages.get(key)
            if before is now:
                continue
            for ref in before.out if before is not None else ():
                edit(ref).discard(key)
                dirty.add(after.resolve(ref) or "")
            for ref in now.out if now is not None else ():
                edit(ref).add(key)
                dirty.add(after.resolve(ref) or "")
            # A page that appeared, went or was retitled shows differently in the
            # blocks (and lint) of every page linking to it.
            if before is None or now is None or before.title != now.title:
                dirty |= self.backlinks(key)
        for ref in copied:
            if not incoming[ref]:
                del incoming[ref]
        for key in keys:
            dirty |= after.backlinks(key)  # backlinks gained in this batch
        dirty.discard("")
        return incoming, dirty

    def _order_list(self) -> list[tuple[int, str]]:
        if self._order is None:
            self._order = [_order_key(record) for record in self.pages.values()]
        return self._order


def compute_incoming(pages: dict[str, Record]) -> dict[str, set[str]]:
    incoming: dict[str, set[str]] = {}
    for key, record in pages.items():
        for ref in record.out:
            incoming.setdefault(ref, set()).add(key)
    return incoming


def _page_location(base: str, path: str) -> tuple[str, str] | None:
    rel = path[len(base) + 1 :] if base else path
    parts = rel.split("/")
    if len(parts) != 2 or parts[0] not in FOLDERS or not parts[1].endswith(".md"):
        return None
    return parts[0], parts[1][:-3]


def record_for(base: str, path: str, text: str) -> Record:
    """A record of a page file's text, not read from disk (no stamp: it will be read
    again before it is trusted). InvalidInput for a path that is not a page's."""
    location = _page_location(base, path)
    if location is None:
        raise InvalidInput(f"Not a page path: {path}.")
    return Record(path, location[0], location[1], text)


def from_texts(base: str, texts: dict[str, str]) -> Vault:
    """A vault of these page texts ({path: text}), nothing read from disk."""
    records = {path: record_for(base, path, text) for path, text in texts.items()}
    return Vault(base, f"texts::{base}", records)


def with_changes(vault: Vault, changes: dict[str, str | None]) -> Vault:
    """The vault as it would be with `changes` ({path: whole new text, or None to
    delete}) applied — in memory only."""
    return vault.changed(
        {
            path: None if text is None else record_for(vault.base, path, text)
            for path, text in changes.items()
        }
    )


# --- the change list -----------------------------------------------------------------------
#
# `.memory-state/wiki/<sha1 of the vault dir>.changes`: a first line `<token> <generation>`
# and one `<generation> <path>` line per page (or report) a write through the app changed,
# the last CHANGES_KEPT of them. Written under the vault lock, after the files, with
# workspace.write_unsynced (atomic, not fsynced: it only says "look at these again"; a lost
# or garbled list makes every reader reconcile). A reader that knows an older generation
# re-reads the paths named since; one whose generation is no longer in the list, or that
# sees another token (the list was lost and restarted), reconciles.

CHANGES_DIR = f"{workspace.STATE_DIR}/wiki"
CHANGES_KEPT = 512


def changes_path(base: str) -> str:
    return f"{CHANGES_DIR}/{hashlib.sha1(base.encode('utf-8')).hexdigest()}.changes"


def _read_changes(base: str) -> tuple[str, int, list[tuple[int, str]]] | None:
    """(token, generation, [(generation, path)…] oldest first), or None."""
    text = workspace.read(changes_path(base))
    if not text:
        return None
    head, _, rest = text.partition("\n")
    token, _, generation = head.partition(" ")
    if not token or not generation.isdigit():
        return None
    entries = []
    for line in rest.split("\n"):
        number, _, path = line.partition(" ")
        if number.isdigit() and path:
            entries.append((int(number), path))
    return token, int(generation), entries


def record_changes(base: str, paths: Iterable[str]) -> tuple[str, int]:
    """Add a generation naming `paths` to the vault's change list; returns (token, the
    new generation). Caller holds the vault lock."""
    known = _read_changes(base)
    token, generation, entries = known if known else (secrets.token_hex(8), 0, [])
    generation += 1
    entries += [(generation, path) for path in dict.fromkeys(paths)]
    entries = entries[-CHANGES_KEPT:]
    lines = [f"{token} {generation}", *(f"{number} {path}" for number, path in entries)]
    workspace.write_unsynced(changes_path(base), "\n".join(lines) + "\n")
    return token, generation


# --- loading -------------------------------------------------------------------------------


@dataclass
class _Known:
    vault: Vault
    token: str | None
    generation: int
    reconciled_at: float  # time.monotonic() of the last stat of every page


_known: dict[str, _Known] = {}
_known_lock = threading.Lock()


def _cache_key(base: str) -> str:
    return f"{workspace.root()}::{base}"


def clear_cache() -> None:
    """Forget every vault this process parsed (as in a fresh process)."""
    with _known_lock:
        _known.clear()


def _read_record(
    base: str, scanned: workspace.ScannedFile, location: tuple[str, str] | None = None
) -> Record | None:
    location = location or _page_location(base, scanned.path)
    if location is None:
        return None
    read_at_ns = time.time_ns()
    text = workspace.read_scanned(scanned)
    if text is None:
        return None  # deleted since the scan
    record = Record(scanned.path, location[0], location[1], text)
    record.stamp = (scanned.size, scanned.mtime_ns, scanned.ctime_ns, scanned.ino)
    record.read_at_ns = read_at_ns
    return record


@contextlib.contextmanager
def collector_paused(*, freeze: bool = False) -> Iterator[None]:
    """Parsing a whole vault makes a quarter of a million objects (20,000 pages), and the
    cyclic collector would walk the growing heap again and again (a fifth of a cold
    pass). Nothing here makes cycles; the collector runs again right after (other threads
    only keep their garbage a moment longer).

    With `freeze`, what exists when the block ends is moved out of the collector's sight
    for good (gc.freeze, as servers do after loading): the parsed vault is long-lived and
    acyclic, so walking it once more (~0.2 s) and at every full collection after would
    find nothing; its objects are still freed, by reference counting, when a later
    snapshot drops them. Used after parsing a whole vault only."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was_enabled:
            gc.enable()


def _reconciled(base: str, records: dict[str, Record]) -> dict[str, Record | None]:
    """{path: record or None} of every page whose file differs from `records`: one stat
    of every page, a read of each that changed, appeared or is racily clean."""
    changes: dict[str, Record | None] = {}
    seen: set[str] = set()
    with collector_paused():
        for scanned in workspace.scan_files(base, recursive=True):
            location = _page_location(base, scanned.path)
            if location is None:
                continue
            seen.add(scanned.path)
            record = records.get(scanned.path)
            stamp = (scanned.size, scanned.mtime_ns, scanned.ctime_ns, scanned.ino)
            if record is None or not record.trusted(stamp, scanned.ctime_ns):
                fresh = _read_record(base, scanned, location)
                if fresh is None:
                    seen.discard(scanned.path)
                elif record is None or fresh.text != record.text:
                    changes[scanned.path] = fresh
                else:  # same text: keep the record (and what was derived from it)
                    record.stamp, record.read_at_ns = fresh.stamp, fresh.read_at_ns
    for path in records.keys() - seen:
        changes[path] = None
    return changes


def look_at(base: str, records: dict[str, Record], paths: Iterable[str]) -> dict:
    """Like _reconciled, for these paths only (a stat each)."""
    changes: dict[str, Record | None] = {}
    for path in dict.fromkeys(paths):
        if _page_location(base, path) is None:
            continue
        try:
            scanned = workspace.scan_one(path)
        except PathRefused:  # e.g. a folder that is a symlink: no page there (as a scan)
            scanned = None
        record = records.get(path)
        if scanned is None:
            if record is not None:
                changes[path] = None
            continue
        stamp = (scanned.size, scanned.mtime_ns, scanned.ctime_ns, scanned.ino)
        if record is None or not record.trusted(stamp, scanned.ctime_ns):
            fresh = _read_record(base, scanned)
            if fresh is None:
                if record is not None:
                    changes[path] = None
            elif record is None or fresh.text != record.text:
                changes[path] = fresh
            else:
                record.stamp, record.read_at_ns = fresh.stamp, fresh.read_at_ns
    return changes


@dataclass
class Loaded:
    """What `load_state` found: the vault, and the paths it saw changed that the change
    list did not name (a writer records those, so other processes learn of them)."""

    vault: Vault
    noticed: set[str]


def load_state(agent, *, paths: Iterable[str] = (), reconcile: bool = False) -> Loaded:
    """The vault as it is on disk now (see the module docstring for what "now" covers):
    the change list, then the pages it names since this process last looked, `paths`,
    and every page when reconciling (`reconcile`, a first load, a lost change list, or
    MEMORY_RECONCILE_SECONDS since the last). Reads; writes nothing."""
    base = vault_dir(agent)
    key = _cache_key(base)
    with _known_lock:
        known = _known.get(key)
    listed = _read_changes(base)
    token, generation, entries = listed if listed else (None, 0, [])
    now = time.monotonic()
    if known is None:
        with collector_paused(freeze=True):
            changes = _reconciled(base, {})
            vault = Vault(base, key, {path: r for path, r in changes.items() if r is not None})
        noticed: set[str] = set()
        reconciled_at = now
    else:
        vault = known.vault
        behind = token != known.token or (
            generation > known.generation and (not entries or entries[0][0] > known.generation + 1)
        )
        due = now - known.reconciled_at >= settings.MEMORY_RECONCILE_SECONDS
        named = [path for number, path in entries if number > known.generation]
        if reconcile or behind or due:
            changes = _reconciled(base, vault.records)
            noticed = set(changes) - set(named)
            reconciled_at = now
        else:
            changes = look_at(base, vault.records, [*named, *paths])
            noticed = set(changes) - set(named)
            reconciled_at = known.reconciled_at
        if changes:
            vault = vault.changed(changes)
    remember(vault, token, generation, reconciled_at)
    return Loaded(vault, noticed)


def remember(vault: Vault, token: str | None, generation: int, reconciled_at: float) -> None:
    """Keep `vault` as this process's current snapshot (unless a newer generation is
    already kept)."""
    with _known_lock:
        current = _known.get(vault.key)
        if current is None or current.token != token or generation >= current.generation:
            _known[vault.key] = _Known(vault, token, generation, reconciled_at)


def known_generation(vault: Vault) -> tuple[str | None, int, float] | None:
    with _known_lock:
        known = _known.get(vault.key)
    return None if known is None else (known.token, known.generation, known.reconciled_at)


def load(agent, *, paths: Iterable[str] = ()) -> Vault:
    """The vault as it is on disk now (see load_state)."""
    return load_state(agent, paths=paths).vault
