"""Wiki compile (SPEC §10.5): the model turns the recent notes into a batch of pages,
proposed as one `wiki_compile` proposal.

Flow of one run (`run_compile`, called by the API's task and by the chain after a
consolidation alike):

1. No model configured → `skipped` ("no model configured"). No daily notes → `skipped`.
   The compile chained after a consolidation is `skipped` too, with no model call, when no
   note of the block is new or changed since the last compile that read it (names and
   hashes kept on each run, `memory.jobs.runs.new_or_changed`).
2. Read the notes block consolidation reads (`memory.notes.read_notes_block`), the
   vault's table of contents and the text of the pages the notes mention, fitted to the
   model's window (memory.jobs.window: notes and pages shrink together; "prompt too long
   for model" → `failed`, no call); ask the model (prompts in wiki/prompts/compile_*.md,
   the answer constrained to wiki/prompts/compile_schema.json).
3. Check the §13.1 answer against compile_schema.json (memory.jobs.answers: not an
   object, `pages` not a list, a page with a missing, unexpected or wrongly typed field,
   an unknown kind or status) and read it: a title without a letter → the run fails and
   nothing is written. Pages without a valid source — none given, none in the
   note/conv format, or only notes that do not exist — are dropped here, by code, before
   anything is proposed, and counted in the summary.
4. One `wiki_compile` proposal: every page's whole new text (author part from the model,
   machine block computed by the code), keyed by path, each with its previous content (the
   proposals machinery snapshots it). Approving writes them all and rebuilds the graph and
   reports; undo restores every page and removes the pages the batch created.
   An autonomous agent applies its own batch at once.

A page the model returns for an existing slug keeps its folder, and keeps the sources it
had (the model's are added to them): what the page was built from stays true.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from memory import clock, notes
from memory.errors import Conflict, DomainError, InvalidInput
from memory.history import agent_of_path
from memory.jobs import runs, window
from memory.jobs.consolidate import notes_floor
from memory.jobs.llm import (
    NO_MODEL,
    BadAnswer,
    LLMError,
    get_provider,
    load_schema,
    render_prompt,
)
from memory.models import Agent, Run
from memory.text import fold
from proposals.actions import BaseKind, apply_now, planned_writes, propose
from proposals.diff import Presented, Presenter
from wiki import graph, lint, pages
from wiki.vault import (
    KIND_FOLDERS,
    Vault,
    join_page,
    load,
    meta_as_written,
    page_slug,
    split_machine_block,
    vault_dir,
    with_changes,
)

log = logging.getLogger(__name__)

KIND = "wiki_compile"
CHAINED = "consolidation"  # the trigger of the compile chained after a consolidation
PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
TOC_LIMIT = 400  # pages listed by title in the prompt
PAGES_BUDGET = 20_000  # characters of existing pages' text shown in the prompt


# --- the proposal kind ---------------------------------------------------------------------


def _union(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def batch_changes(agent: Agent, page_list: list[dict]) -> dict[str, str]:
    """{path: whole new text} of the batch's pages whose text would change, computed
    against the vault as it is now. Raises InvalidInput for a page without valid sources
    or otherwise unusable (the answer was checked before; this guards the payload)."""
    vault = load(agent)
    authored: dict[str, str] = {}
    for item in page_list:
        if not isinstance(item, dict):
            raise InvalidInput("Each page of a wiki batch is an object.")
        title = pages.clean_title(item.get("title"))
        slug = page_slug(title)
        kind = pages.clean_kind(item.get("kind"))
        sources = pages.clean_sources(item.get("sources"), loose=True)
        # The page of that slug, wherever it is (the one of this title where two folders
        # hold the slug: _drop_shared left out the others).
        existing = pages.named_record(vault, slug, title=title)
        if existing is not None and existing.openclaw:
            # An OpenClaw page keeps its source ids; the notes it now also comes from join.
            sources = _union(existing.source_ids, sources)
        elif existing is not None:
            sources = _union(
                [s for s in existing.sources if lint.valid_source(s, loose=True)], sources
            )
        path = existing.path if existing is not None else vault.path_for(KIND_FOLDERS[kind], slug)
        if path in authored:
            raise InvalidInput(f"The batch holds the page {slug!r} twice.")
        authored[path] = pages.render_author(
            title=title,
            kind=kind,
            sources=sources,
            questions=pages.clean_questions(item.get("questions")),
            status=pages.clean_status(item.get("status")),
            updated=clock.today().isoformat(),
            body=pages.clean_body(item.get("body")),
            kept=meta_as_written(existing) if existing is not None else None,
            tail=existing.foreign_tail if existing is not None else "",
        )
    virtual = with_changes(vault, authored)
    texts = graph.block_changes(virtual, only=set(authored))
    return {
        path: text
        for path, text in texts.items()
        if vault.records.get(path) is None or vault.records[path].text != text
    }


class WikiCompileKind(BaseKind):
    """A batch of wiki pages. Payload: `{"pages": [{"title", "kind", "sources",
    "questions", "status", "body"}], "dropped": [...]}`. Approving or undoing rebuilds the
    graph and the reports."""

    name = KIND
    batch = True

    def changes(self, *, agent: Any, payload: dict) -> dict[str, str | None]:
        page_list = payload.get("pages") if isinstance(payload, dict) else None
        if not isinstance(page_list, list):
            raise InvalidInput("A wiki batch needs a list of pages.")
        return dict(batch_changes(agent, page_list))

    def after_write(self, proposal) -> None:
        if proposal.agent is not None:
            pages.refresh(proposal.agent, changed=list(planned_writes(proposal)))


# --- how a page reads in a review -------------------------------------------------------


def _present_page(text: str) -> Presented:
    author, block = split_machine_block(text)
    note = "The generated links block (wiki:related) is left out." if block else ""
    return Presented({}, author + "\n", note)


def _join_page(edited: str, planned: str) -> str:
    _, block = split_machine_block(planned)
    return join_page(edited, block) if block else edited.rstrip("\n") + "\n"


def is_page_path(path: str) -> bool:
    """A wiki page of some agent's vault (not a generated report)."""
    return f"/{path}".count("/memory/wiki/") == 1 and "/memory/wiki/reports/" not in f"/{path}"


def refresh_after_restore(path: str) -> None:
    agent = Agent.objects.filter(pk=agent_of_path(path)).first()
    if agent is not None:
        pages.refresh(agent)


PAGE_PRESENTER = Presenter(
    applies=is_page_path,
    present=_present_page,
    join=_join_page,
)


# --- the model's answer ----------------------------------------------------------------------


@dataclass
class ParsedBatch:
    pages: list[dict] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # why each dropped page was dropped


def parse_batch(data: dict[str, Any], *, note_exists: Callable[[str], bool]) -> ParsedBatch:
    """A §13.1 compile answer, already checked against compile_schema.json, read into the
    pages to propose. What no schema can state is checked here: a title needs a letter or
    digit (it names the page, §10.2; BadAnswer otherwise); a page needs a valid source —
    `note:`/`conv:` form, and a note that exists, `note_exists(name)` — or it is dropped
    and counted, the answer is not refused (§10.5: that check is the code's, not the
    model's); a second page of one slug is dropped too."""
    batch = ParsedBatch()
    seen: set[str] = set()
    for index, item in enumerate(data["pages"], start=1):
        try:
            title = pages.clean_title(item["title"])
            slug = page_slug(title)
        except InvalidInput as exc:
            raise BadAnswer(f"page {index}: `title`: {exc.message}") from None
        valid = _valid_sources(item["sources"], note_exists)
        if not valid:
            given = item["sources"]
            why = "no sources" if not given else f"no valid source ({', '.join(given)})"
            batch.dropped.append(f"dropped {title!r}: {why}")
        elif slug in seen:
            batch.dropped.append(f"dropped {title!r}: the batch already has the page {slug!r}")
        else:
            seen.add(slug)
            batch.pages.append(
                {
                    "title": title,
                    "kind": item["kind"],
                    "sources": valid,
                    "questions": item["questions"],
                    "status": item["status"],
                    "body": item["body"],
                }
            )
    return batch


def _drop_shared(batch: ParsedBatch, vault: Vault) -> None:
    """Drop the pages whose slug several folders hold when none, or more than one, of
    those pages has the page's title: which page the model meant cannot be told (SPEC
    §10.1: a page is its path), so they are left as they are, and the summary says so."""
    kept = []
    for page in batch.pages:
        slug = page_slug(page["title"])
        keys = vault.holders(slug)
        titled = [key for key in keys if vault.pages[key].title == page["title"]]
        if len(keys) > 1 and len(titled) != 1:
            batch.dropped.append(
                f"dropped {page['title']!r}: several pages are named {slug!r} "
                f"({', '.join(keys)}); left as they are"
            )
            continue
        kept.append(page)
    batch.pages = kept


def _valid_sources(sources: list[str], note_exists: Callable[[str], bool]) -> list[str]:
    """The sources (trimmed, each once) in the §10.1 form that name something that exists."""
    valid = []
    for source in (source.strip() for source in sources):
        if not lint.valid_source(source, loose=True):
            continue
        if source.startswith("note:") and not note_exists(source[5:]):
            continue
        valid.append(source)
    return list(dict.fromkeys(valid))


# --- the prompt ---------------------------------------------------------------------------


def _vault_context(
    vault: Vault, notes_text: str, pages_budget: int = PAGES_BUDGET
) -> tuple[str, str]:
    """(table of contents, texts of the pages the notes mention, within `pages_budget`
    characters) for the prompt."""
    records = sorted(vault.pages.values(), key=lambda r: (r.slug, r.key))
    toc_lines = [f"- {r.title} ({r.kind}; [[{vault.name_of(r)}]])" for r in records[:TOC_LIMIT]]
    if len(records) > TOC_LIMIT:
        toc_lines.append(f"- … and {len(records) - TOC_LIMIT} more pages not listed")
    toc = "\n".join(toc_lines) or "(the vault is empty)"

    folded_notes = fold(notes_text)
    shown: list[str] = []
    room = pages_budget
    for record in records:
        if fold(record.title) not in folded_notes and record.slug not in folded_notes:
            continue
        text = record.author_text
        if len(text) > room:
            continue
        shown.append(f"### {record.path[len(vault.base) + 1 :]}\n\n{text}\n")
        room -= len(text)
    return toc, "\n".join(shown) or "(none of the existing pages is mentioned in the notes)"


def build_prompt(
    agent: Agent, notes_text: str, *, vault: Vault, pages_budget: int = PAGES_BUDGET
) -> tuple[str, str]:
    toc, existing = _vault_context(vault, notes_text, pages_budget)
    system = render_prompt("compile_system.md", PROMPTS_DIR)
    user = render_prompt(
        "compile_user.md",
        PROMPTS_DIR,
        today=clock.today().isoformat(),
        toc=toc,
        existing=existing,
        notes=notes_text,
    )
    return system, user


# --- one run ------------------------------------------------------------------------------


def _note_exists(agent: Agent):
    def exists(name: str) -> bool:
        try:
            return notes.note_exists(agent, name)
        except DomainError:
            return False

    return exists


def _fit_prompt(
    provider: window.Counter, agent: Agent, block: notes.NotesBlock, vault: Vault
) -> window.Fitted[tuple[str, str]] | str:
    """The compile prompt at the largest size that fits the model's window: `size` is the
    notes budget, and the existing pages get half of it (PAGES_BUDGET at the full 40,000).
    Returns the reason instead when even the smallest prompt does not fit."""

    def build(budget: int) -> tuple[str, str]:
        read = (
            block
            if budget == notes.NOTES_BUDGET
            else notes.read_notes_block(agent, budget=budget, since=block.since)
        )
        pages_budget = PAGES_BUDGET * budget // notes.NOTES_BUDGET
        return build_prompt(agent, read.text, vault=vault, pages_budget=pages_budget)

    try:
        return window.fit(
            provider,
            build,
            lambda prompt: prompt,
            largest=notes.NOTES_BUDGET,
            smallest=notes.MIN_CUT_CHARS,
            step=notes.MIN_CUT_CHARS,
        )
    except window.PromptTooLong as exc:
        return exc.message
    except LLMError as exc:  # the endpoint could not be reached to count the prompt
        return f"the model call failed: {exc.message}"


def _compile_step(run: Run) -> runs.Outcome:
    # The notes the consolidation reads, from the same first day (SPEC §8, §10.5). A note
    # that cannot be read as text is left out and named in the reasons.
    block = notes.read_notes_block(run.agent, since=notes_floor(run.agent))
    outcome = _compile(run, block)
    outcome.reasons = [*block.left_out(), *outcome.reasons]
    return outcome


def _compile(run: Run, block: notes.NotesBlock) -> runs.Outcome:
    agent = run.agent
    provider = get_provider()
    if provider is None:
        return runs.Outcome(Run.Status.SKIPPED, NO_MODEL)
    if not block.note_names:
        return runs.Outcome(Run.Status.SKIPPED, "no daily notes to compile")
    if run.trigger == CHAINED:
        # The nightly chain runs after every consolidation; asking the model again about
        # notes it already compiled would only cost. Judged by content, as consolidation
        # judges it: a note is new or changed when no answered compile read it with this
        # hash. A compile started by hand always runs.
        if not runs.new_or_changed(agent, Run.Kind.COMPILE, block.hashes, exclude=run.pk):
            return runs.Outcome(
                Run.Status.SKIPPED, "no note is new or changed since the last compile read it"
            )

    fitted = _fit_prompt(provider, agent, block, load(agent))
    if isinstance(fitted, str):
        return runs.Outcome(Run.Status.FAILED, fitted)
    system, user = fitted.prompt
    runs.record_notes_read(run, block.hashes)  # the window, as consolidation records it
    batch, failure = runs.ask_for_run(
        run,
        provider,
        system,
        user,
        partial(parse_batch, note_exists=_note_exists(agent)),
        schema=load_schema("compile_schema.json", PROMPTS_DIR),
        max_tokens=fitted.max_tokens,
    )
    if batch is None:
        return runs.Outcome(Run.Status.FAILED, failure)
    _drop_shared(batch, load(agent))

    dropped = len(batch.dropped)
    dropped_text = f"; {dropped} page(s) dropped without sources" if dropped else ""
    if not batch.pages:
        return runs.Outcome(
            Run.Status.SUCCEEDED,
            f"no page with sources to propose{dropped_text}",
            batch.dropped,
        )
    try:
        proposal = propose(
            KIND,
            agent=agent,
            target=vault_dir(agent),
            payload={"pages": batch.pages, "dropped": batch.dropped},
            reasons=[
                *(
                    f"page {page['title']!r} from {', '.join(page['sources'])}"
                    for page in batch.pages
                ),
                *batch.dropped,
            ],
            source=f"job:compile-{run.pk}",
            run=run,
        )
    except InvalidInput as exc:
        if "change nothing" in exc.message:
            return runs.Outcome(
                Run.Status.SUCCEEDED,
                f"the vault is up to date; nothing to propose{dropped_text}",
                batch.dropped,
            )
        return runs.Outcome(Run.Status.FAILED, f"the batch could not be proposed: {exc.message}")
    count = len(proposal.payload.get("writes") or {})
    if proposal.status == proposal.Status.REJECTED:
        return runs.Outcome(
            Run.Status.SUCCEEDED,
            f"the same pages were rejected before (proposal #{proposal.pk}); not proposed again"
            f"{dropped_text}",
            batch.dropped,
        )
    if not agent.autonomous:
        return runs.Outcome(
            Run.Status.SUCCEEDED,
            f"proposed {count} page(s) (proposal #{proposal.pk}) for review{dropped_text}",
            batch.dropped,
        )
    try:
        apply_now(proposal, by=f"auto:{agent.id}")
    except Conflict as exc:
        return runs.Outcome(
            Run.Status.FAILED,
            f"the batch could not apply (proposal #{proposal.pk}): {exc.message}{dropped_text}",
            batch.dropped,
        )
    return runs.Outcome(
        Run.Status.SUCCEEDED,
        f"applied {count} page(s) at once (proposal #{proposal.pk}){dropped_text}",
        batch.dropped,
    )


def execute(run: Run) -> Run:
    """Do the work of a claimed `running` compile run and finish it. Never raises."""
    run, _outcome = runs.run_step(run, _compile_step)
    return run


def run_compile(run_id: int) -> str:
    """The django-q2 task of `start_compile`: claim the run and do it. Idempotent: a
    second delivery finds the run taken and does nothing. Returns the final status."""
    run = Run.objects.select_related("agent").filter(pk=run_id).first()
    if run is None:
        log.warning("run_compile: no run %s", run_id)
        return "no such run"
    if not runs.claim_run(run):
        return "already taken"
    return execute(run).status


def start_compile(agent: Agent, *, trigger: str) -> Run:
    """Create the `running` compile run now (Conflict/409 while a consolidation or compile
    runs for the agent) and hand the work to a django-q2 worker. Returns the run as it is
    after enqueueing (with Q_SYNC the work is already done)."""
    return runs.start_queued(
        agent, Run.Kind.COMPILE, trigger=trigger, task="wiki.compile.run_compile"
    )


def compile_after_consolidation(agent_id: str) -> Run | None:
    """The compile chained after a consolidation (§10.5), run in this process with its own
    run and cost. The consolidation run must be finished before (one rewrite-or-compile
    runs per agent). Never raises: a compile that cannot start or fails is logged and
    recorded on its own run; returns that run, or None when none could be started."""
    try:
        agent = Agent.objects.get(pk=agent_id)
        run = runs.start_run(agent, Run.Kind.COMPILE, trigger=CHAINED)
    except Conflict as exc:
        log.warning("no compile after consolidating %s: %s", agent_id, exc.message)
        return None
    except Exception:
        log.exception("no compile after consolidating %s", agent_id)
        return None
    if not runs.claim_run(run):
        return run
    run = execute(run)
    if run.status == Run.Status.FAILED:
        log.warning("the compile after consolidating %s failed: %s", agent_id, run.summary)
    return run
