"""Consolidation (SPEC §8): the model rewrites MEMORY.md from the recent daily notes and
the result is *proposed* (`memory_rewrite`), never written behind a person's back —
except that an autonomous agent's rewrite applies at once when code (memory.jobs.autoapply)
finds it only adds lines or only changes dates.

The rewrite step (`rewrite_step`), the first link of the nightly chain (memory.jobs.nightly):

1. Read the notes block (`memory.notes.read_notes_block`). No note in it new or changed
   since the last consolidation that read it (names and hashes recorded on each run,
   `memory.jobs.runs.new_or_changed`) → `skipped`, no model call. No model configured →
   `skipped` ("no model configured").
2. Fit the prompt to the model's window (memory.jobs.window: the notes block shrinks until
   it fits; "prompt too long for model" → `failed`, no call). Ask the model (prompts in
   memory/jobs/prompts/consolidate_*.md, the answer constrained to consolidate_schema.json
   and checked against it). Anything else → `failed`, files untouched.
3. Propose the rewrite (with its reasons, and any dates of unknown origin), superseding the
   agent's older pending rewrite. Autonomous agents: apply at once or hold (`held`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from memory import clock, notes, workspace
from memory.errors import Conflict, DomainError
from memory.jobs import autoapply, runs, window
from memory.jobs.llm import (
    NO_MODEL,
    LLMError,
    Provider,
    get_provider,
    load_schema,
    render_prompt,
)
from memory.models import Agent, Run
from memory.text import heading_text, is_heading
from proposals.actions import BaseKind, apply_now, propose, supersede_pending
from proposals.models import Proposal

REVIEW_AFTER_DAYS = 90
KIND = "memory_rewrite"


# --- MEMORY.md lines to review -----------------------------------------------------------


def lines_for_review(memory_text: str, *, today: dt.date) -> list[str]:
    """Content lines (not blank, not headings) without a trailing `(YYYY-MM-DD)` or with
    one more than REVIEW_AFTER_DAYS before today. An impossible date counts as none."""
    review = []
    for line in memory_text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        _, date = autoapply.split_date(line)
        try:
            day = dt.date.fromisoformat(date) if date else None
        except ValueError:
            day = None
        if day is None or (today - day).days > REVIEW_AFTER_DAYS:
            review.append(line.rstrip())
    return review


def build_prompt(
    agent: Agent, memory_text: str, block: notes.NotesBlock, *, today: dt.date
) -> tuple[str, str]:
    """(system, user) prompt of the rewrite step, from memory/prompts/consolidate_*.md."""
    review = lines_for_review(memory_text, today=today)
    user = render_prompt(
        "consolidate_user.md",
        today=today.isoformat(),
        agent=agent.id,
        memory=memory_text.rstrip("\n") or "(MEMORY.md is empty)",
        review="\n".join(review) if review else "(none)",
        days=len(block.days),
        day_list=", ".join(day.isoformat() for day in block.days),
        notes=block.text.rstrip("\n"),
    )
    return render_prompt("consolidate_system.md"), user


@dataclass(frozen=True)
class RewritePrompt:
    system: str
    user: str
    block: notes.NotesBlock


def fit_prompt(
    provider: window.Counter,
    agent: Agent,
    memory_text: str,
    *,
    today: dt.date,
    block: notes.NotesBlock | None = None,
) -> window.Fitted[RewritePrompt]:
    """The rewrite step's prompt with the largest notes block (at most NOTES_BUDGET
    characters) that fits the model's window; `block`, read at the full budget, is reused
    when it fits. Raises window.PromptTooLong when even MIN_CUT_CHARS of notes do not."""

    def build(budget: int) -> RewritePrompt:
        read = block if block is not None and budget == notes.NOTES_BUDGET else None
        since = block.since if block is not None else None
        read = read or notes.read_notes_block(agent, budget=budget, since=since)
        system, user = build_prompt(agent, memory_text, read, today=today)
        return RewritePrompt(system, user, read)

    return window.fit(
        provider,
        build,
        lambda prompt: (prompt.system, prompt.user),
        largest=notes.NOTES_BUDGET,
        smallest=notes.MIN_CUT_CHARS,
        step=notes.MIN_CUT_CHARS,
    )


# --- the answer ------------------------------------------------------------------------


@dataclass(frozen=True)
class Rewrite:
    memory: str
    reasons: list[dict[str, str]]


def parse_rewrite(data: dict[str, Any]) -> Rewrite:
    """The §13.1 consolidation answer, already checked against consolidate_schema.json
    (`memory` a string; `reasons` objects of `line`, `action`, `why`, and for an added line
    the `heading` it stands under). What no schema can say is done here: the new MEMORY.md
    gets "\n" line endings (SPEC §1), and a last one; an added line's `heading` is the one
    it stands under in that text (what is approved is the text, whatever the model named)."""
    text = notes.normalise_newlines(data["memory"])
    if text and not text.endswith("\n"):
        text += "\n"
    reasons = [dict(item) for item in data["reasons"]]
    for item in reasons:
        if item.get("action") == "add":
            found = heading_above(text, str(item.get("line", "")))
            if found is None:
                item.pop("heading", None)
            else:
                item["heading"] = found
    return Rewrite(text, reasons)


def heading_above(text: str, line: str) -> str | None:
    """The words of the heading `line` stands under in `text` ("" when above every
    heading), None when the text does not hold the line."""
    wanted = line.strip()
    heading = ""
    for candidate in text.splitlines():
        if is_heading(candidate):
            heading = heading_text(candidate)
        elif wanted and candidate.strip() == wanted:
            return heading
    return None


def reason_texts(rewrite: Rewrite) -> list[str]:
    """The model's reasons as the lines a person reads on the card (an added line's heading
    stays in the structured reasons: the diff shows the line under it)."""
    return [f"{item['action']}: {item['line']} — {item['why']}" for item in rewrite.reasons]


# --- the proposal kind ---------------------------------------------------------------------


class MemoryRewriteKind(BaseKind):
    """Replace an agent's MEMORY.md with a consolidation's rewrite. Payload: `memory`."""

    name = KIND

    def changes(self, *, agent: Any, payload: dict) -> dict[str, str | None]:
        text = payload.get("memory") if isinstance(payload, dict) else None
        if agent is None or not isinstance(text, str):
            raise DomainError("A memory_rewrite needs an agent and the new text.")
        return {notes.memory_path(agent): text}


# --- one run ---------------------------------------------------------------------------


@dataclass
class Outcome(runs.Outcome):
    """How the rewrite step ended; the nightly chain decides from it whether fact review
    follows (the model answered) and hands that review the same notes block."""

    answered: bool = False  # the model gave a usable answer
    block: notes.NotesBlock | None = None


def notes_floor(agent: Agent, *, exclude: int | None = None) -> dt.date | None:
    """The day before which a consolidation of `agent` — and the compile chained after
    it, which reads the same notes — reads no note (SPEC §8).

    The agent's first consolidation starts from the day its MEMORY.md last changed (in
    the owner's zone): it reads what happened since the file was last written — never the
    oldest notes of an existing workspace, which a MEMORY.md written long after them
    already holds. Every later one keeps to the earliest day that first run read, so an
    older note never turns up as "new". None: no floor (no MEMORY.md, and no run yet).
    `exclude`: a run not to count (the one asking)."""
    earlier = runs.first_read_day(agent, Run.Kind.CONSOLIDATE, exclude=exclude)
    if earlier is not None:
        return earlier
    try:
        stamp = workspace.stamp(notes.memory_path(agent))
    except DomainError:  # a link: the step refuses it with its reason
        return None
    if stamp is None:
        return None
    changed = dt.datetime.fromtimestamp(stamp[1] / 1e9, tz=dt.UTC)
    return clock.local_now(changed).date()


def rewrite_step(run: Run) -> Outcome:
    """Rewrite the run's agent's MEMORY.md from its recent notes, as a proposal: at most
    NOTES_DAYS days of them, none before notes_floor (the agent's first consolidation reads
    the days since MEMORY.md last changed). A note that cannot be read as text is left
    out and named in the run's reasons."""
    block = notes.read_notes_block(run.agent, since=notes_floor(run.agent, exclude=run.pk))
    outcome = _rewrite(run, block)
    outcome.reasons = [*block.left_out(), *outcome.reasons]
    return outcome


def _rewrite(run: Run, block: notes.NotesBlock) -> Outcome:
    """Check there is something to do, ask the model, plan what its rewrite may do, then
    propose it (and, for an autonomous agent, apply it or hold it)."""
    path = notes.memory_path(run.agent)
    found = workspace.read_file(path)
    refused = _nothing_to_do(run, found, block)
    if refused is not None:
        return refused
    provider = get_provider()
    if provider is None:
        return Outcome(Run.Status.SKIPPED, NO_MODEL)
    old_text = (found.text if found is not None else None) or ""
    old_hash = found.hash if found is not None else workspace.ABSENT
    today = clock.today()
    asked = _ask(run, provider, old_text, block, today=today)
    if isinstance(asked, Outcome):
        return asked
    rewrite, block = asked
    reasons = reason_texts(rewrite)
    if rewrite.memory == old_text:
        return _answered(
            Run.Status.SUCCEEDED, "MEMORY.md is up to date; nothing to propose", reasons, block
        )
    decision = autoapply.decide(old_text, rewrite.memory, allowed_dates=[*block.days, today])
    reasons += [
        f"unknown date: {date} is not in MEMORY.md, not the date of a note read, and not today"
        for date in decision.unknown_dates
    ]
    proposal = _propose(run, path, old_hash, rewrite, reasons)
    if proposal is None:
        return _answered(
            Run.Status.FAILED,
            "MEMORY.md changed while the model was rewriting it; nothing proposed",
            reasons,
            block,
        )
    status, summary = _settle(run.agent, proposal, decision)
    return _answered(status, summary, reasons, block)


def _answered(status: str, summary: str, reasons: list[str], block: notes.NotesBlock) -> Outcome:
    """The outcome of a run whose model gave a usable answer (fact review may follow)."""
    return Outcome(status, summary, reasons, True, block)


def _nothing_to_do(
    run: Run, found: workspace.FileText | None, block: notes.NotesBlock
) -> Outcome | None:
    """Why the run stops before the model is even looked for, or None."""
    if found is not None and found.invalid_utf8:
        # A rewrite would replace the bytes it cannot read, and undo could not put them
        # back: the person fixes the file first.
        return Outcome(
            Run.Status.FAILED,
            "MEMORY.md has bytes that are not UTF-8 text; fix the file (it reads with "
            "U+FFFD in their place) and run again. Nothing proposed",
        )
    if not block.note_names:
        since = f" since {block.since.isoformat()}" if block.since else ""
        return Outcome(Run.Status.SKIPPED, f"no daily notes to read{since}")
    # "Nothing new" by content, not by mtime (a clone or a sync renews every mtime, and an
    # agent that edits MEMORY.md after its notes would make every note look old).
    if not runs.new_or_changed(run.agent, Run.Kind.CONSOLIDATE, block.hashes, exclude=run.pk):
        return Outcome(
            Run.Status.SKIPPED, "no note is new or changed since the last consolidation read it"
        )
    return None


def _ask(
    run: Run, provider: Provider, old_text: str, block: notes.NotesBlock, *, today: dt.date
) -> tuple[Rewrite, notes.NotesBlock] | Outcome:
    """The model's rewrite and the notes block its prompt held (cut to the model's
    window), or the failed outcome."""
    # What this run read is the window: the notes of the block at its full budget (a
    # small model's window may take fewer of them, but asking again would not change it).
    runs.record_notes_read(run, block.hashes)
    try:
        fitted = fit_prompt(provider, run.agent, old_text, today=today, block=block)
    except window.PromptTooLong as exc:
        return Outcome(Run.Status.FAILED, exc.message)
    except LLMError as exc:  # the endpoint could not be reached to count the prompt
        return Outcome(Run.Status.FAILED, f"the model call failed: {exc.message}")
    prompt = fitted.prompt
    rewrite, failure = runs.ask_for_run(
        run,
        provider,
        prompt.system,
        prompt.user,
        parse_rewrite,
        schema=load_schema("consolidate_schema.json"),
        max_tokens=fitted.max_tokens,
    )
    if rewrite is None:
        return Outcome(Run.Status.FAILED, failure)
    return rewrite, prompt.block


def _propose(
    run: Run, path: str, old_hash: str, rewrite: Rewrite, reasons: list[str]
) -> Proposal | None:
    """The rewrite proposed, based on the text the model read; None when MEMORY.md changed
    during the call (proposing now would quietly overwrite that change on approval)."""
    with workspace.locked(path):
        if workspace.file_hash(path) != old_hash:
            return None
        return propose(
            KIND,
            agent=run.agent,
            target=path,
            # The structured reasons too, so the review shows each beside its line.
            payload={"memory": rewrite.memory, "reason_items": rewrite.reasons},
            reasons=reasons,
            source=f"job:consolidate-{run.pk}",
            run=run,
        )


def _settle(agent: Agent, proposal: Proposal, decision: autoapply.Decision) -> tuple[str, str]:
    """(status, summary) once the rewrite is proposed: left for review, held, or — for an
    autonomous agent, when code finds it only adds lines or changes dates — applied."""
    if proposal.status == proposal.Status.REJECTED:
        # Exactly this rewrite was rejected before: counted on that proposal, not queued.
        return (
            Run.Status.SUCCEEDED,
            f"the same rewrite was rejected before (proposal #{proposal.pk}); not proposed again",
        )
    supersede_pending(KIND, agent=agent, except_id=proposal.pk)
    if not agent.autonomous:
        return (
            Run.Status.SUCCEEDED,
            f"proposed a rewrite of MEMORY.md (proposal #{proposal.pk}) for review",
        )
    if not decision.apply:
        return Run.Status.HELD, f"held for review (proposal #{proposal.pk}): " + "; ".join(
            decision.reasons
        )
    try:
        apply_now(proposal, by=f"auto:{agent.id}")
    except Conflict as exc:
        return (
            Run.Status.FAILED,
            f"the rewrite could not apply (proposal #{proposal.pk}): {exc.message}",
        )
    return (
        Run.Status.SUCCEEDED,
        f"applied at once (proposal #{proposal.pk}): {len(decision.added)} line(s) added, "
        f"{len(decision.redated)} date(s) changed",
    )
