"""Wiki pages (SPEC §10): the operations every interface calls — REST, tools, the
management pages and the compile alike.

- `list_pages(agent, q=None)`, `get_page(agent, slug)`, `find_page(agent, slug)`,
  `search_pages(agent, query)` read.
- `save_page(agent, …)` and `delete_page(agent, slug)` write one page, then rebuild the
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
- the slug is slugify(title) (§10.2); slugs are unique across the three folders, and an
  existing page keeps its folder on every write, even when its kind changes (moving it
  would break every link to it);
- `updated` is set to today on every write of the author part;
- the machine block is recomputed, never taken from the caller.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Iterator
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
    KINDS,
    Record,
    Vault,
    is_openclaw_meta,
    join_page,
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
    `{"slug", "title", "exists"}` rows (filled by get_page and save_page)."""

    slug: str
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


def _page(record: Record, vault: Vault | None = None, *, created: bool = False) -> Page:
    page = Page(
        slug=record.slug,
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
    if vault is not None:
        page.links_out, page.links_in = graph.links_of(vault, record.slug)
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
                # it (a shadowed duplicate), it is still written whole.
                if author_text is not None and path not in texts:
                    record = current.records[path]
                    if not graph.keeps_block(record, writing=True):
                        texts[path] = author_text.rstrip("\n") + "\n"  # its own blocks
                        continue
                    incoming = sorted(current.incoming.get(record.slug, ()))
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
            current.unverified = set()  # the plan covered every unverified slug
            break
        done = workspace.write_many({**texts, **reports}, base_hashes=bases)
        written += done
        missed = set(texts) - set(done)
        current = current.changed(
            {path: record_for(vault.base, path, texts[path]) for path in texts if path in done},
            verified=True,
        )
        # The plan covered every unverified slug: what is left is what was not written.
        current.unverified = {current.records[path].slug for path in missed}
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


# --- reading ------------------------------------------------------------------------------


def _candidates(agent, slug: str) -> list[str]:
    """The files a page of this slug could be (one per folder), to stat. A string that
    cannot be a file name gives paths the vault does not look at (not a page's, or
    refused by the workspace): such a page is simply not there (404)."""
    return [f"{vault_dir(agent)}/{folder}/{slug}.md" for folder in FOLDERS]


def find_page(agent, slug: str) -> Page | None:
    """The page with this slug (with its links), or None. The page's own file is
    looked at on every call, so it is always its current text."""
    vault = load(agent, paths=_candidates(agent, slug))
    record = vault.pages.get(slug)
    return _page(record, vault) if record is not None else None


def get_page(agent, slug: str) -> Page:
    """The page with this slug (with its links); NotFound (404) otherwise."""
    page = find_page(agent, slug)
    if page is None:
        raise NotFound(f"No wiki page {slug!r}.")
    return page


def get_page_by_title(agent, title: str) -> Page | None:
    """The page a title names (slugified, §10.2; 422 for a title without letters)."""
    return find_page(agent, page_slug(title))


@dataclass(frozen=True)
class SearchHit:
    slug: str
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
                record.title,
                cap(" ".join(shown.split()), MATCH_TEXT_CHARS),
                len(matched),
                record.updated,
            )
        )
    if any(hit.matched == len(patterns) for hit in hits):
        hits = [hit for hit in hits if hit.matched == len(patterns)]
    hits.sort(key=lambda hit: hit.slug)
    hits.sort(key=lambda hit: hit.updated, reverse=True)
    hits.sort(key=lambda hit: hit.matched, reverse=True)
    return hits


def search_pages(agent, query: Query | str, *, limit: int = SEARCH_LIMIT) -> list[SearchHit]:
    """`wiki_search` (§10.4): at most `limit` pages. 422 for a query without words."""
    query = as_query(query)
    return _rank(load(agent), query)[:limit]


def list_pages(agent, q: Query | str | None = None) -> list[Page]:
    """The vault as pages (no links). Without `q`: folder order, then slug. With `q`:
    the pages matching it, ranked as `wiki_search` ranks; a `q` without a letter or digit
    is 422, as for every search."""
    query = as_query(q) if q else None
    vault = load(agent)
    if query is not None:
        return [_page(vault.pages[hit.slug]) for hit in _rank(vault, query)]
    rank = {folder: index for index, folder in enumerate(FOLDERS)}
    records = sorted(vault.pages.values(), key=lambda r: (rank[r.folder], r.slug))
    return [_page(record) for record in records]


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
    - `slug` (REST PUT) names the page; a given title must slugify to it (a page is never
      renamed by a write — that would break every link to it). Without a title a new
      page is titled by its slug.

    `updated` becomes today. An existing page keeps its folder even when `kind` changes.
    Returns the page with its links and `created`. Raises InvalidInput (422; nothing
    written) for missing or invalid sources, titles without a letter or digit, unknown
    kinds or wrongly typed fields.
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
    if not partial:
        _check_whole(fields)
    with vault_lock(agent):
        loaded = vault_module.load_state(agent, paths=_candidates(agent, fields.slug))
        existing = loaded.vault.pages.get(fields.slug)
        planned = _plan_page(fields, existing, partial=partial)
        path = loaded.vault.path_for(fields.slug, planned.kind)
        refreshed = _apply(agent, loaded, {path: _author_text(planned, existing)})
    return _page(refreshed.vault.pages[fields.slug], refreshed.vault, created=existing is None)


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
    if not partial:
        _check_whole(fields)
    loaded = vault_module.load_state(agent, paths=_candidates(agent, fields.slug))
    existing = loaded.vault.pages.get(fields.slug)
    planned = _plan_page(fields, existing, partial=partial)
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
    if slug is None:
        if title is None:
            raise InvalidInput("A page needs a title.")
        slug = page_slug(title)
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


def _sources_rule(existing: Record | None):
    """How the page's sources are checked. An OpenClaw page's sources are ids of its
    source pages (sourceIds); the app's are note:/conv: sources (§10.1)."""
    if existing is not None and existing.openclaw:
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
        sources = check_sources(existing.source_ids if existing.openclaw else existing.sources)
    return _Fields(
        slug=fields.slug,
        title=_given_or(fields.title, existing.title),
        kind=_given_or(fields.kind, existing.kind),
        sources=sources,
        questions=_given_or(fields.questions, existing.questions),
        status=_given_or(fields.status, existing.status or "ok"),
        body=_given_or(fields.body, existing.body),
    )


def _given_or(value: T | None, kept: T) -> T:
    return value if value is not None else kept


def _author_text(planned: _Fields, existing: Record | None) -> str:
    """The author part the write puts on disk; `updated` is today."""
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


def delete_page(agent, slug: str) -> None:
    """Delete a page, then rebuild the graph (its backlinks disappear from the pages it
    linked to; links to it become dangling) and the reports. NotFound (404) when absent."""
    with vault_lock(agent):
        loaded = vault_module.load_state(agent, paths=_candidates(agent, slug))
        record = loaded.vault.pages.get(slug)
        if record is None:
            raise NotFound(f"No wiki page {slug!r}.")
        _apply(agent, loaded, {record.path: None})
