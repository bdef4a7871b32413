"""Wiki pages (SPEC §10): the operations every interface calls — REST, tools, the
management pages and the compile alike.

- `list_pages(agent, q=None)`, `get_page(agent, name)`, `find_page(agent, name)`,
  `search_pages(agent, query)` read. A page is its path (wiki.vault): `name` is its key
  `folder/slug`, or its slug when no other folder holds that slug (`Page.name`); a slug
  several folders hold names none of them (422, the keys listed).
- `save_page(agent, …)` and `delete_page(agent, name)` write one page, then rebuild the
  graph (rewriting the machine blocks that changed) and regenerate the reports.
- `refresh(agent)` rebuilds the graph and the reports without changing a page's author
  part (edits and compiles call it); `report(agent)` computes the lint report as data and
  writes nothing (GETs never write).

Every write of the vault happens under one lock per vault (`vault_lock`), so two edits
never compute blocks from each other's half-written state; per-file locks are still taken
by the workspace module for each file. Pages live in `memory/wiki/<folder>/<slug>.md` of
the agent dir; `memory.workspace` does all IO.

Rules kept here:
- a page without a valid source is never written (422);
- the slug is slugify(title) (§10.2); a write by title lands on the page of that slug in
  whichever folder holds it (the one whose title it is, when several do), and an existing
  page keeps its folder on every write, even when its kind changes (moving it would break
  every link to it);
- an OpenClaw page is edited in place: only the frontmatter keys whose value changed are
  rewritten, every other line (unknown keys, their order, comments) kept as written;
- `updated` is set to today on every write of the author part;
- the machine block is recomputed, never taken from the caller.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial as partial_fn
from typing import TypeVar

from memory import clock, workspace
from memory.errors import InvalidInput, NotFound
from memory.query import Query, as_query
from memory.text import cap, dump_frontmatter, fold_single_line
from wiki import graph, lint
from wiki import vault as vault_module
from wiki.vault import (
    FOLDER_KINDS,
    FOLDERS,
    KIND_FOLDERS,
    KINDS,
    Record,
    Vault,
    edit_frontmatter,
    is_openclaw_meta,
    join_page,
    link_ref,
    load,
    meta_as_written,
    neutralise,
    page_slug,
    record_for,
    vault_dir,
    with_changes,
)

T = TypeVar("T")
SEARCH_LIMIT = 8
MATCH_TEXT_CHARS = 700
MAX_TITLE_CHARS = 300
MAX_STATUS_CHARS = 40


@dataclass
class Page:
    """One page as the interfaces see it. `body` is the author body (no frontmatter, no
    machine block); `text` is the whole file. `links_out` / `links_in` are
    `{"slug", "key", "folder", "title", "exists"}` rows (filled by get_page and
    save_page). `key` is the page's identity, `folder/slug`; `name` how a tool names it:
    its slug, or its key where another folder holds the same slug."""

    slug: str
    key: str
    name: str
    path: str
    folder: str
    title: str
    kind: str
    sources: list[str]
    questions: list[str]
    status: str
    updated: str
    body: str
    text: str
    links_out: list[dict] = field(default_factory=list)
    links_in: list[dict] = field(default_factory=list)
    created: bool = False

    def toc(self) -> dict:
        """The table-of-contents row (§14.1), without the body."""
        return {
            "slug": self.slug,
            "key": self.key,
            "title": self.title,
            "kind": self.kind,
            "status": self.status,
            "updated": self.updated,
            "sources": list(self.sources),
            "questions": list(self.questions),
            "folder": self.folder,
        }

    def as_dict(self) -> dict:
        """The whole page (§14.1)."""
        return {
            **self.toc(),
            "body": self.body,
            "links_out": self.links_out,
            "links_in": self.links_in,
        }


def _page(
    record: Record, vault: Vault | None = None, *, created: bool = False, links: bool = True
) -> Page:
    page = Page(
        slug=record.slug,
        key=record.key,
        name=vault.name_of(record) if vault is not None else record.slug,
        path=record.path,
        folder=record.folder,
        title=record.title,
        kind=record.kind,
        sources=record.sources,
        questions=record.questions,
        status=record.status,
        updated=record.updated,
        body=record.body,
        text=record.text,
        created=created,
    )
    if vault is not None and links:
        page.links_out, page.links_in = graph.links_of(vault, record.key)
    return page


# --- validation ---------------------------------------------------------------------------


def clean_title(title: object) -> str:
    if not isinstance(title, str):
        raise InvalidInput("A page title must be text.")
    title = fold_single_line(title)
    if len(title) > MAX_TITLE_CHARS:
        raise InvalidInput(f"A page title is at most {MAX_TITLE_CHARS} characters.")
    page_slug(title)  # 422 when no letter or digit is left
    return title


def clean_kind(kind: object) -> str:
    if kind not in KINDS:
        raise InvalidInput(f"Unknown page kind {kind!r}: one of {', '.join(KINDS)}.")
    return kind  # type: ignore[return-value]


def clean_sources(sources: object, *, loose: bool = False) -> list[str]:
    """A non-empty list of `note:YYYY-MM-DD[-suffix]` / `conv:<id>`, without repeats.
    Anything else is 422: a page that cannot say where it came from is never written.
    `loose` also accepts other tools' odd note names (lint.valid_source): for a compile,
    whose sources were checked against the notes it read."""
    if sources is None or (isinstance(sources, list | tuple) and not sources):
        raise InvalidInput(
            "A wiki page needs sources: the notes (note:YYYY-MM-DD) or conversations "
            "(conv:<id>) it was built from."
        )
    if not isinstance(sources, list | tuple) or not all(isinstance(s, str) for s in sources):
        raise InvalidInput("sources must be a list of texts.")
    cleaned = [source.strip() for source in sources]
    bad = [source for source in cleaned if not lint.valid_source(source, loose=loose)]
    if bad:
        raise InvalidInput(
            f"Invalid source(s) {', '.join(repr(s) for s in bad)}: each is "
            "note:YYYY-MM-DD (optionally with the note's suffix) or conv:<id>."
        )
    return list(dict.fromkeys(cleaned))


def clean_questions(questions: object) -> list[str]:
    if questions is None:
        return []
    if not isinstance(questions, list | tuple) or not all(isinstance(q, str) for q in questions):
        raise InvalidInput("questions must be a list of texts.")
    return [line for line in (fold_single_line(q) for q in questions) if line]


def clean_status(status: object) -> str:
    if status is None:
        return "ok"
    if not isinstance(status, str):
        raise InvalidInput("status must be text, e.g. ok or review.")
    status = fold_single_line(status)
    if not status or len(status) > MAX_STATUS_CHARS:
        raise InvalidInput(f"status is one word of 1–{MAX_STATUS_CHARS} characters, e.g. ok.")
    return status


def clean_body(body: object) -> str:
    if body is None:
        return ""
    if not isinstance(body, str):
        raise InvalidInput("body must be text.")
    return body.replace("\r\n", "\n").replace("\r", "\n")


def openclaw_timestamp() -> str:
    """Now as OpenClaw writes `updatedAt` (`new Date().toISOString()`)."""
    now = dt.datetime.now(dt.UTC)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def render_author(
    *,
    title: str,
    kind: str,
    sources: list[str],
    questions: list[str],
    status: str,
    updated: str,
    body: str,
    kept: dict | None = None,
    tail: str = "",
) -> str:
    """The author part of a page file (frontmatter + body, no machine block). Markers of
    the machine block inside the body are neutralised. `kept` is the page's frontmatter as
    it was (values as written, vault.meta_as_written): keys other than the six known ones
    (a person's `aliases:`…) are written back after them, since everything but the machine
    block belongs to its author (§10.1).

    An OpenClaw memory-wiki page (`kept` has `id`, `pageType`, `sourceIds` or
    `updatedAt`) stays one: its own keys, in its own order, are set — `pageType` to the
    kind, `sourceIds` to the sources, `updatedAt` to now — and the app's `kind`, `sources`
    and `updated` are not added. `tail` (OpenClaw's Related block, vault.split_foreign_tail)
    is put back after the body exactly as it was."""
    text_body = neutralise(body)
    if tail:
        text_body = f"{text_body.rstrip(chr(10))}\n\n{tail}"
    if kept and is_openclaw_meta(kept):
        meta = dict(kept)
        meta["title"] = title
        meta["pageType"] = kind
        meta["sourceIds"] = sources
        if questions:
            meta["questions"] = questions
        else:
            meta.pop("questions", None)
        meta["status"] = status
        meta["updatedAt"] = openclaw_timestamp()
        return dump_frontmatter(meta, text_body).rstrip("\n")
    meta = {
        "title": title,
        "kind": kind,
        "sources": sources,
        "questions": questions,
        "status": status,
        "updated": updated,
    }
    meta.update({key: value for key, value in (kept or {}).items() if key not in meta})
    return dump_frontmatter(meta, text_body).rstrip("\n")


def clean_source_ids(sources: object, *, allow_empty: bool = False) -> list[str]:
    """The sources of an OpenClaw page: a non-empty list of ids (`source.alpha-notes`),
    `note:`/`conv:` sources, or both — each one line of at most 200 characters. A source
    page itself may have none (`allow_empty`), as in OpenClaw."""
    if isinstance(sources, list | tuple) and not sources and allow_empty:
        return []
    if not isinstance(sources, list | tuple) or not sources:
        raise InvalidInput("An OpenClaw page needs sourceIds: the ids of its source pages.")
    cleaned = []
    for source in sources:
        if not isinstance(source, str) or not fold_single_line(source):
            raise InvalidInput("sourceIds must be a list of non-empty texts.")
        if len(source) > 200 or "\n" in source:
            raise InvalidInput("A source id is one line of at most 200 characters.")
        cleaned.append(source.strip())
    return list(dict.fromkeys(cleaned))


# --- the vault lock and the rebuild ---------------------------------------------------------


@contextlib.contextmanager
def vault_lock(agent) -> Iterator[None]:
    """Serialise every write of one agent's vault (re-entrant, cross-process): the vault's
    group guard, taken before the lock of any page."""
    with workspace.guarded(vault_dir(agent)):
        yield


@dataclass
class Refreshed:
    vault: Vault  # the vault after the writes
    issues: list[lint.Issue]
    written: list[str]  # pages written or deleted, and reports written


def _apply(agent, loaded: vault_module.Loaded, authored: dict[str, str | None]) -> Refreshed:
    """Write `authored` ({path: author part, or None to delete}) with freshly computed
    machine blocks, rewrite the blocks of the other pages whose block may have changed
    (the vault's unverified slugs) and differs, and regenerate the reports — one batch
    of atomic writes — then record the paths in the vault's change list, so every other
    process re-reads them at its next load. Caller holds the vault lock and loaded
    `loaded` under it.

    Only the block changes in the pages nobody authored, and only if the file is still
    what was read: a page edited by hand since is read again and its block recomputed
    (twice at most; after that it stays unverified for the next rebuild)."""
    vault = loaded.vault
    current = with_changes(vault, authored) if authored else vault
    written: list[str] = []
    skipped: set[str] = set()
    reports: dict[str, str] = {}
    for attempt in range(3):
        texts: dict[str, str] = dict(graph.plan_blocks(current))
        if attempt == 0:
            for path, author_text in authored.items():
                # An authored page always has a block to gain; should the plan not hold
                # it, it is still written whole.
                if author_text is not None and path not in texts:
                    record = current.records[path]
                    if not graph.keeps_block(record, writing=True):
                        texts[path] = author_text.rstrip("\n") + "\n"  # its own blocks
                        continue
                    incoming = graph.sorted_backlinks(current, record.key)
                    texts[path] = join_page(
                        record.author_text, graph.render_block(record, current, incoming)
                    )
        bases = {
            path: workspace.hash_text(current.records[path].text)
            for path in texts
            if path in current.records and not (attempt == 0 and path in authored)
        }
        lint.lint(current, today=clock.today())  # handed on to the snapshots below
        predicted = current.changed(
            {path: record_for(vault.base, path, text) for path, text in texts.items()},
            verified=True,
        )
        reports = lint.report_changes(predicted, lint.lint(predicted, today=clock.today()))
        if not texts and not reports:
            current = predicted
            current.unverified = set()  # the plan covered every unverified key
            break
        done = workspace.write_many({**texts, **reports}, base_hashes=bases)
        written += done
        missed = set(texts) - set(done)
        current = current.changed(
            {path: record_for(vault.base, path, texts[path]) for path in texts if path in done},
            verified=True,
        )
        # The plan covered every unverified key: what is left is what was not written.
        current.unverified = {current.records[path].key for path in missed}
        reports = {}
        skipped |= missed
        fresh = vault_module.look_at(vault.base, current.records, missed) if missed else {}
        if not fresh:
            break
        current = current.changed(fresh)  # their links may differ: dirty, unverified
    for path, author_text in authored.items():
        if author_text is None and workspace.delete(path):
            written.append(path)
    issues = lint.lint(current, today=clock.today())
    token, generation = vault_module.record_changes(
        vault.base, [*written, *authored, *sorted(skipped), *sorted(loaded.noticed)]
    )
    known = vault_module.known_generation(vault)
    vault_module.remember(current, token, generation, known[2] if known else time.monotonic())
    return Refreshed(current, issues, list(dict.fromkeys(written)))


def refresh(agent, *, changed: list[str] | tuple[str, ...] = ()) -> Refreshed:
    """Look at every page's file (hand edits are taken in at once), rewrite the machine
    blocks that no longer match the graph and regenerate both reports. After a compile,
    an approved batch (`changed`: the paths it wrote) — never on a read."""
    with vault_lock(agent), vault_module.collector_paused():
        loaded = vault_module.load_state(agent, paths=changed, reconcile=True)
        return _apply(agent, loaded, {})


def report(agent) -> dict:
    """The lint report as data: `{"pages", "counts", "issues", "open_questions",
    "reports"}` (see wiki.lint.report_data), computed from the vault as it is on disk.
    Writes nothing: opening the Wiki tab or `GET …/wiki/report` must not rewrite a page's
    machine block or create the reports (SPEC §10.6); edits and compiles do that."""
    vault = load(agent)
    return lint.report_data(vault, lint.lint(vault, today=clock.today()))


def doctor_findings(agent) -> dict:
    """What the doctor reports of the agent's vault (wiki.lint.shared_names), read as it
    is on disk; writes nothing."""
    return lint.shared_names(load(agent))


# --- reading ------------------------------------------------------------------------------


def _candidates(agent, name: str) -> list[str]:
    """The files a page of this name could be, to stat: the one file of a key
    (`folder/slug`), or one per folder for a slug. A string that cannot be a file name
    gives paths the vault does not look at (not a page's, or refused by the workspace):
    such a page is simply not there (404)."""
    folder, _, slug = name.rpartition("/")
    if folder:
        return [f"{vault_dir(agent)}/{folder}/{slug}.md"]
    return [f"{vault_dir(agent)}/{folder}/{name}.md" for folder in FOLDERS]


def _several(slug: str, keys: tuple[str, ...]) -> InvalidInput:
    return InvalidInput(
        f"Several wiki pages are named {slug!r}: {', '.join(keys)}. Name one by its folder, "
        f"e.g. {keys[0]!r}."
    )


def named_record(vault: Vault, name: str, *, title: str | None = None) -> Record | None:
    """The page `name` names in `vault`: a key (`folder/slug`) that page; a slug the one
    page of that slug — or, when several folders hold it, the one titled `title`. None
    when there is none; InvalidInput (422) when a slug names several and no title picks
    one."""
    if "/" in name:
        return vault.pages.get(name)
    keys = vault.holders(name)
    if len(keys) > 1 and title is not None:
        titled = [key for key in keys if vault.pages[key].title == title]
        keys = tuple(titled) if len(titled) == 1 else keys
    if len(keys) > 1:
        raise _several(name, keys)
    return vault.pages[keys[0]] if keys else None


def find_page(agent, name: str) -> Page | None:
    """The page this name names (with its links), or None; 422 for a slug several
    folders hold. The page's own file is looked at on every call, so it is always its
    current text."""
    vault = load(agent, paths=_candidates(agent, name))
    record = named_record(vault, name)
    return _page(record, vault) if record is not None else None


def get_page(agent, name: str) -> Page:
    """The page this name names (with its links); NotFound (404) otherwise."""
    page = find_page(agent, name)
    if page is None:
        raise NotFound(f"No wiki page {name!r}.")
    return page


def get_page_by_title(agent, title: str) -> Page | None:
    """The page a title names (slugified, §10.2; 422 for a title without letters), or
    the page a `folder/slug` names, as a link would; when several folders hold the slug,
    the one of exactly that title (422 when none or several are). No page of that slug:
    the page whose title it is, though its file is named otherwise (OpenClaw's)."""
    ref = link_ref(title)
    if ref and "/" in ref:
        name = ref
    else:
        name = page_slug(title)
    vault = load(agent, paths=_candidates(agent, name))
    record = named_record(vault, name, title=" ".join(title.split()))
    if record is None and "/" not in name:
        record = _titled(vault, name)
    return _page(record, vault) if record is not None else None


def _titled(vault: Vault, slug: str) -> Record | None:
    """The page whose title slugifies to `slug` though its file is named otherwise (an
    OpenClaw page: `sources/0010-alpha-renewal.md` titled "Alpha renewal call"); 422 when
    several are."""
    found = [record for record in vault.pages.values() if _title_slug(record.title) == slug]
    if len(found) > 1:
        raise _several(slug, tuple(record.key for record in found))
    return found[0] if found else None


def _title_slug(title: str) -> str:
    try:
        return page_slug(title)
    except InvalidInput:
        return ""


def link_resolver(agent) -> Callable[[str], tuple[str | None, str | None]]:
    """For the pages: a function from a link's target as written (`Page name`,
    `folder/name`) to (the key of the page it opens, or None; its ref — wiki.vault.link_ref
    — or None when it names no possible page). One snapshot of the vault for all."""
    vault = load(agent)

    def resolve(target: str) -> tuple[str | None, str | None]:
        ref = link_ref(target)
        return (vault.resolve(ref), ref) if ref else (None, None)

    return resolve


@dataclass(frozen=True)
class SearchHit:
    slug: str
    key: str
    name: str  # the slug, or the key where another folder holds the slug (Page.name)
    folder: str
    title: str
    text: str  # the best matching line, original text, cut at 700 characters
    matched: int  # how many query words the page holds
    updated: str


def _rank(vault: Vault, query: Query) -> list[SearchHit]:
    """Pages matching `query` by the §6.1 word rules over title and body (machine block
    left out), all-words pages only when there are any; more words first, then newer
    `updated`, then slug."""
    patterns = [word.pattern for word in query.words]
    hits: list[SearchHit] = []
    for record in vault.pages.values():
        lines = record.folded_lines()
        joined = "\n".join(lines)
        matched = [pattern for pattern in patterns if pattern.search(joined)]
        if not matched:
            continue
        best, best_count = 0, -1
        for index, line in enumerate(lines):
            count = sum(1 for pattern in matched if pattern.search(line))
            if count > best_count:
                best, best_count = index, count
        original = [record.title, *record.body.split("\n")]
        shown = original[best] if best < len(original) else record.title
        hits.append(
            SearchHit(
                record.slug,
                record.key,
                vault.name_of(record),
                record.folder,
                record.title,
                cap(" ".join(shown.split()), MATCH_TEXT_CHARS),
                len(matched),
                record.updated,
            )
        )
    if any(hit.matched == len(patterns) for hit in hits):
        hits = [hit for hit in hits if hit.matched == len(patterns)]
    hits.sort(key=lambda hit: (hit.slug, hit.key))
    hits.sort(key=lambda hit: hit.updated, reverse=True)
    hits.sort(key=lambda hit: hit.matched, reverse=True)
    return hits


def search_pages(agent, query: Query | str, *, limit: int = SEARCH_LIMIT) -> list[SearchHit]:
    """`wiki_search` (§10.4): at most `limit` pages. 422 for a query without words."""
    query = as_query(query)
    return _rank(load(agent), query)[:limit]


def list_pages(agent, q: Query | str | None = None) -> list[Page]:
    """The vault as pages (no links): every page, two of one slug in two folders too.
    Without `q`: folder order, then slug. With `q`: the pages matching it, ranked as
    `wiki_search` ranks; a `q` without a letter or digit is 422, as for every search."""
    query = as_query(q) if q else None
    vault = load(agent)
    if query is not None:
        return [_page(vault.pages[hit.key], vault, links=False) for hit in _rank(vault, query)]
    rank = {folder: index for index, folder in enumerate(FOLDERS)}
    records = sorted(vault.pages.values(), key=lambda r: (rank[r.folder], r.slug))
    return [_page(record, vault, links=False) for record in records]


# --- writing ------------------------------------------------------------------------------


def save_page(
    agent,
    *,
    title: str | None = None,
    kind: str | None = None,
    sources: list[str] | None = None,
    body: str | None = None,
    questions: list[str] | None = None,
    status: str | None = None,
    partial: bool = False,
    slug: str | None = None,
) -> Page:
    """Create or replace a page's author part, then rebuild the graph and the reports.

    - `partial=False` (wiki_apply, the management form): an upsert of the whole author
      part; title, kind, sources and body are required, `questions` defaults to none and
      `status` to `ok`.
    - `partial=True` (REST PUT): only the fields given (not None) change; the others
      keep their value. Creating a page still needs kind and sources.
    - `slug` (REST PUT) names the page: its slug, or its key `folder/slug`; a given title
      must slugify to the slug (a page is never renamed by a write — that would break
      every link to it). Without a title a new page is titled by its slug; a new page
      named by its key is written in that folder, which must be its kind's.
    - Without a key, the page is the one of that slug; where several folders hold it, the
      one whose title is the given title (else 422: the keys are listed).

    `updated` becomes today. An existing page keeps its folder even when `kind` changes.
    An OpenClaw page changes only in what was given and differs (its other frontmatter
    lines stay as written; no `status` is added). Returns the page with its links and
    `created`. Raises InvalidInput (422; nothing written) for missing or invalid
    sources, titles without a letter or digit, unknown kinds or wrongly typed fields.
    """
    fields = _check_fields(
        title=title,
        kind=kind,
        sources=sources,
        questions=questions,
        status=status,
        body=body,
        slug=slug,
    )
    with vault_lock(agent):
        loaded, existing, planned = _planned(agent, fields, partial=partial)
        if existing is not None:
            path, key = existing.path, existing.key
        else:
            folder = _new_page_folder(fields.folder, planned.kind)
            path, key = loaded.vault.path_for(folder, fields.slug), f"{folder}/{fields.slug}"
        author = _author_text(planned, existing)
        authored = {} if existing is not None and author == existing.author_text else {path: author}
        refreshed = _apply(agent, loaded, authored)
    return _page(refreshed.vault.pages[key], refreshed.vault, created=existing is None)


def _planned(agent, fields: _Fields, *, partial: bool):
    """The vault as loaded, the page the fields name (None: a new one) and its planned
    author part — checked as every write is (InvalidInput, 422), writing nothing."""
    if not partial:
        _check_whole(fields)
    name = f"{fields.folder}/{fields.slug}" if fields.folder else fields.slug
    loaded = vault_module.load_state(agent, paths=_candidates(agent, name))
    existing = named_record(loaded.vault, name, title=fields.title)
    return loaded, existing, _plan_page(fields, existing, partial=partial)


def _new_page_folder(folder: str | None, kind: str | None) -> str:
    """The folder a new page goes to: its kind's; a page named by its key (REST PUT
    `…/pages/<folder>/<slug>`) must name that folder."""
    wanted = KIND_FOLDERS[kind]  # type: ignore[index] - _plan_page checked the kind
    if folder is not None and folder != wanted:
        raise InvalidInput(
            f"A new {kind} page is written in {wanted}/, not {folder}/: name it {wanted}/…"
        )
    return wanted


def plan_page(
    agent,
    *,
    title: str | None = None,
    kind: str | None = None,
    sources: list[str] | None = None,
    body: str | None = None,
    questions: list[str] | None = None,
    status: str | None = None,
    partial: bool = False,
    slug: str | None = None,
) -> dict:
    """What `save_page` with these arguments would make the page's author part — checked
    exactly as `save_page` checks it (InvalidInput, 422) — as a page of a wiki batch
    (`{"title", "kind", "sources", "questions", "status", "body"}`), writing nothing: what
    a job's write proposes instead of writing (wiki.writes)."""
    fields = _check_fields(
        title=title,
        kind=kind,
        sources=sources,
        questions=questions,
        status=status,
        body=body,
        slug=slug,
    )
    _, existing, planned = _planned(agent, fields, partial=partial)
    if existing is None:
        _new_page_folder(fields.folder, planned.kind)  # 422 when the folder is not the kind's
    return {
        "title": planned.title if planned.title is not None else planned.slug,
        "kind": planned.kind,
        "sources": list(planned.sources or []),
        "questions": list(planned.questions or []),
        "status": planned.status or "ok",
        "body": planned.body or "",
    }


@dataclass(frozen=True)
class _Fields:
    """A write's fields, each checked on its own; None: not given. `sources` is as given
    (only its type checked): which rule it follows depends on the page (_sources_rule)."""

    slug: str
    title: str | None
    kind: str | None
    sources: object
    questions: list[str] | None
    status: str | None
    body: str | None
    folder: str | None = None  # given with the slug (`folder/slug`): that page only


def _check_fields(
    *,
    title: object,
    kind: object,
    sources: object,
    questions: object,
    status: object,
    body: object,
    slug: str | None,
) -> _Fields:
    """Check each field given, before the vault is locked. Raises InvalidInput."""
    if title is not None:
        title = clean_title(title)
    folder = None
    if slug is None:
        if title is None:
            raise InvalidInput("A page needs a title.")
        slug = page_slug(title)
    elif "/" in slug:
        folder, _, slug = slug.partition("/")
        if folder not in FOLDERS or not slug:
            raise InvalidInput(f"Not a page: {folder}/{slug} (folders: {', '.join(FOLDERS)}).")
    # OpenClaw's `source` kind is kept on a page that has it; the app writes only KINDS.
    if kind is not None and kind not in FOLDER_KINDS.values():
        kind = clean_kind(kind)
    if sources is not None and not isinstance(sources, list | tuple):
        clean_sources(sources)  # the type refusal, with its message
    return _Fields(
        slug=slug,
        title=title,  # type: ignore[arg-type]
        kind=kind,  # type: ignore[arg-type]
        sources=sources,
        questions=clean_questions(questions) if questions is not None else None,
        status=clean_status(status) if status is not None else None,
        body=clean_body(body) if body is not None else None,
        folder=folder,
    )


def _check_whole(fields: _Fields) -> None:
    """A whole write (not partial) gives title, kind, sources and body."""
    missing = [
        name
        for name, value in (("title", fields.title), ("kind", fields.kind), ("body", fields.body))
        if value is None
    ]
    if fields.sources is None:
        clean_sources(None)  # the sources refusal, with its message
    if missing:
        raise InvalidInput(f"Missing field(s): {', '.join(missing)}.")


def _openclaws(record: Record | None) -> bool:
    """Whether a page is OpenClaw's: its frontmatter is memory-wiki's, or it is a raw
    source (`openclaw:wiki:raw-source`, no frontmatter at all)."""
    return record is not None and (record.openclaw or record.raw_source)


def _sources_rule(existing: Record | None):
    """How the page's sources are checked. An OpenClaw page's sources are ids of its
    source pages (sourceIds); the app's are note:/conv: sources (§10.1)."""
    if _openclaws(existing):
        return partial_fn(clean_source_ids, allow_empty=existing.kind in lint.SOURCE_KINDS)
    return clean_sources


def _check_against(fields: _Fields, existing: Record | None) -> None:
    """What the fields may not do to the page as it is: rename it, or give a kind the app
    does not write to a page that does not have it."""
    title, slug, kind = fields.title, fields.slug, fields.kind
    if title is not None and page_slug(title) != slug:
        if existing is None or existing.title != title:
            raise InvalidInput(
                f"The title {title!r} names the page {page_slug(title)!r}, not {slug!r}: "
                "a page is not renamed by a write."
            )
    if kind is not None and kind not in KINDS and (existing is None or existing.kind != kind):
        clean_kind(kind)


def _plan_page(fields: _Fields, existing: Record | None, *, partial: bool) -> _Fields:
    """The page's author fields after the write, checked against the page as it is
    (`existing`, None for a new page): a partial write keeps what it does not give."""
    _check_against(fields, existing)
    check_sources = _sources_rule(existing)
    sources = check_sources(fields.sources) if fields.sources is not None else None
    if existing is None:
        if page_slug(fields.slug) != fields.slug:
            raise InvalidInput(f"{fields.slug!r} is not a page name: use slugify(title).")
        if fields.kind is None:
            raise InvalidInput("A new page needs a kind: entity, concept or synthesis.")
        return replace(fields, sources=clean_sources(sources))
    if not partial:
        return replace(fields, sources=sources)
    if sources is None:
        sources = check_sources(existing.source_ids if _openclaws(existing) else existing.sources)
    return _Fields(
        slug=fields.slug,
        title=_given_or(fields.title, existing.title),
        kind=_given_or(fields.kind, existing.kind),
        sources=sources,
        questions=_given_or(fields.questions, existing.questions),
        # An OpenClaw page without a status keeps having none (OpenClaw's own rule).
        status=_given_or(fields.status, existing.status or _default_status(existing)),
        body=_given_or(fields.body, existing.body),
        folder=fields.folder,
    )


def _default_status(existing: Record) -> str | None:
    return None if _openclaws(existing) else "ok"


def _given_or(value: T | None, kept: T) -> T:
    return value if value is not None else kept


def _author_text(planned: _Fields, existing: Record | None) -> str:
    """The author part the write puts on disk; `updated` is today. An OpenClaw page is
    edited in place (_openclaw_author_text)."""
    if _openclaws(existing):
        return _openclaw_author_text(planned, existing)  # type: ignore[arg-type]
    return render_author(
        title=planned.title if planned.title is not None else planned.slug,
        kind=planned.kind,  # type: ignore[arg-type]
        sources=planned.sources,  # type: ignore[arg-type]
        questions=planned.questions or [],
        status=planned.status or "ok",
        updated=clock.today().isoformat(),
        body=planned.body or "",
        kept=meta_as_written(existing) if existing is not None else None,
        tail=existing.foreign_tail if existing is not None else "",
    )


def _openclaw_author_text(planned: _Fields, existing: Record) -> str:
    """An OpenClaw page with only what changed rewritten (SPEC §10.1): each field given
    that differs is set under OpenClaw's name (`pageType`, `sourceIds`, …), `updatedAt`
    with it where the page has one; every other frontmatter line — unknown keys, their
    order, their quoting — and an unchanged body stay exactly as written. Nothing
    changed: the text as it was."""
    changes: dict[str, object] = {}
    if planned.title is not None and planned.title != existing.title:
        changes["title"] = planned.title
    if planned.kind is not None and planned.kind != existing.kind:
        changes["pageType"] = planned.kind
    if planned.sources is not None and list(planned.sources) != existing.source_ids:
        changes["sourceIds"] = list(planned.sources)
    if planned.questions is not None and planned.questions != existing.questions:
        changes["questions"] = planned.questions or None  # none: the key goes
    if planned.status is not None and planned.status != existing.status:
        changes["status"] = planned.status
    body = planned.body if planned.body is not None else existing.body
    if not changes and body == existing.body:
        return existing.author_text
    if "updatedAt" in meta_as_written(existing):  # a page that keeps the time of its edits
        changes["updatedAt"] = openclaw_timestamp()
    new_body = None
    if body != existing.body:
        new_body = neutralise(body)
        if existing.foreign_tail:
            new_body = f"{new_body.rstrip(chr(10))}\n\n{existing.foreign_tail}"
    return edit_frontmatter(existing.author_text, changes, body=new_body)


def delete_page(agent, name: str) -> None:
    """Delete a page (by its name: a key, or a slug one folder holds), then rebuild the
    graph (its backlinks disappear from the pages it linked to; links to it become
    dangling) and the reports. NotFound (404) when absent."""
    with vault_lock(agent):
        loaded = vault_module.load_state(agent, paths=_candidates(agent, name))
        record = named_record(loaded.vault, name)
        if record is None:
            raise NotFound(f"No wiki page {name!r}.")
        _apply(agent, loaded, {record.path: None})
