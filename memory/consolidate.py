"""Consolidation (SPEC §8): the model rewrites MEMORY.md from the recent daily notes and
the result is *proposed* (`memory_rewrite`), never written behind a person's back —
except that an autonomous agent's rewrite applies at once when code (memory.autoapply)
finds it only adds lines or only changes dates.

Flow of one run (`run_consolidation`, called by the API task and the schedule alike):

1. Read the notes block (`read_notes_block`). No note newer than MEMORY.md → `skipped`,
   no model call. No model configured → `skipped` ("no model configured").
2. Ask the model (prompts in memory/prompts/consolidate_*.md), parse the §13.1 answer
   strictly. Anything else → `failed`, files untouched.
3. Propose the rewrite (with its reasons, and any dates of unknown origin), superseding the
   agent's older pending rewrite. Autonomous agents: apply at once or hold (`held`).
4. Master only: fact hygiene (memory.hygiene), its own `fact_review` run.
5. Chain the wiki compile (`wiki.compile.compile_after_consolidation`); a failing or
   missing compile never harms the consolidation.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import Any

from memory import autoapply, notes, runs, workspace
from memory.errors import Conflict, DomainError, NotFound
from memory.llm import NO_MODEL, BadAnswer, ask_for_run, get_provider, render_prompt
from memory.models import Agent, Run
from proposals.actions import BaseKind, apply_now, propose, register_kind, supersede_pending

log = logging.getLogger(__name__)

NOTES_DAYS = 7  # counted by day: a plain and a suffixed note of one day are one day
NOTES_BUDGET = 40_000  # characters of the whole notes block
MIN_CUT_CHARS = 200  # a day cut to fit keeps at least this much, or is left out
REVIEW_AFTER_DAYS = 90
ACTIONS = ("keep", "fix", "drop", "merge", "add")
KIND = "memory_rewrite"


# --- the notes block -------------------------------------------------------------------


@dataclass(frozen=True)
class NotesBlock:
    """What a run reads of the daily notes.

    `text`: the block handed to the model (at most NOTES_BUDGET characters); `days`: the
    days included, newest first; `note_names`: the files read (e.g. "2026-11-30.md");
    `newest_mtime`: the newest modification time (epoch seconds) among them, None when
    there are none; `cut`: True when the budget cut a day short or left days out.
    """

    text: str
    days: list[dt.date] = field(default_factory=list)
    note_names: list[str] = field(default_factory=list)
    newest_mtime: float | None = None
    cut: bool = False


def _day_section(day: dt.date, texts: list[tuple[str, str]]) -> str:
    parts = [f"## {day.isoformat()}\n"]
    for name, text in texts:
        parts.append(f"\n### {name}\n\n{text.strip()}\n")
    return "".join(parts) + "\n"


def read_notes_block(
    agent: Agent, *, days: int = NOTES_DAYS, budget: int = NOTES_BUDGET
) -> NotesBlock:
    """Up to `days` days of the agent's daily notes, newest day first, within `budget`
    characters (SPEC §8). Within a day the plain note comes first, then the suffixed ones
    by name.

    A day that does not fit whole is cut to what is left of the budget, ending in a line
    that says how many characters were left out, and no older day follows (a gap in the
    middle would hide that days are missing); when less than MIN_CUT_CHARS would be left
    it is left out entirely. So the newest day always contributes, even when it alone is
    larger than the budget.
    """
    by_day: dict[dt.date, list[notes.NoteInfo]] = {}
    for info in notes.list_notes(agent):
        if info.day is None:
            continue
        if info.day not in by_day and len(by_day) == days:
            continue  # list_notes is newest day first; older days are beyond the window
        by_day.setdefault(info.day, []).append(info)

    text = ""
    included_days: list[dt.date] = []
    names: list[str] = []
    newest: float | None = None
    cut = False
    for day in sorted(by_day, reverse=True):
        infos = sorted(
            by_day[day], key=lambda info: (info.name != f"{day.isoformat()}.md", info.name)
        )
        texts = []
        for info in infos:
            body = workspace.read(notes.note_path(agent, info.name))
            if body is not None:
                texts.append((info, body))
        if not texts:
            continue
        section = _day_section(day, [(info.name, body) for info, body in texts])
        room = budget - len(text)
        if len(section) > room:
            cut = True
            if room < MIN_CUT_CHARS:
                break
            section = _cut(section, room)
        text += section
        included_days.append(day)
        for info, _ in texts:
            names.append(info.name)
            mtime = info.modified.timestamp()
            newest = mtime if newest is None else max(newest, mtime)
        if cut:
            break
    return NotesBlock(text, included_days, names, newest, cut)


def _cut(section: str, room: int) -> str:
    """The section shortened to `room` characters including a closing marker line."""
    left_out = len(section)
    keep = room
    while True:
        marker = f"\n[… {left_out} more characters of this day left out]\n"
        keep = room - len(marker)
        if len(section) - keep == left_out:
            return section[:keep] + marker
        left_out = len(section) - keep


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
    agent: Agent, memory_text: str, block: NotesBlock, *, today: dt.date
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


# --- the answer ------------------------------------------------------------------------


@dataclass(frozen=True)
class Rewrite:
    memory: str
    reasons: list[dict[str, str]]


def parse_rewrite(data: Any) -> Rewrite:
    """The §13.1 consolidation answer, strictly: `memory` a string, `reasons` a list of
    objects with string `line`, `action` in ACTIONS and string `why`. Raises BadAnswer."""
    if not isinstance(data, dict):
        raise BadAnswer("the answer is not a JSON object")
    memory = data.get("memory")
    reasons = data.get("reasons")
    if "memory" not in data or "reasons" not in data:
        raise BadAnswer("the answer lacks `memory` or `reasons`")
    if not isinstance(memory, str):
        raise BadAnswer("`memory` is not a string")
    if not isinstance(reasons, list):
        raise BadAnswer("`reasons` is not a list")
    cleaned = []
    for index, item in enumerate(reasons):
        if not isinstance(item, dict):
            raise BadAnswer(f"reason {index + 1} is not an object")
        line, action, why = item.get("line"), item.get("action"), item.get("why")
        if not isinstance(line, str) or not isinstance(why, str):
            raise BadAnswer(f"reason {index + 1} lacks a string `line` or `why`")
        if action not in ACTIONS:
            raise BadAnswer(f"reason {index + 1} has an unknown action {action!r}")
        cleaned.append({"line": line, "action": action, "why": why})
    text = notes.normalise_newlines(memory)
    if text and not text.endswith("\n"):
        text += "\n"
    return Rewrite(text, cleaned)


def reason_texts(rewrite: Rewrite) -> list[str]:
    """The model's reasons as the lines a person reads on the card."""
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


MEMORY_REWRITE = register_kind(MemoryRewriteKind())


# --- one run ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """How the rewrite step ended; decides whether hygiene follows."""

    status: str
    summary: str
    reasons: list[str] = field(default_factory=list)
    answered: bool = False  # the model gave a usable answer
    block: NotesBlock | None = None


def run_consolidation(run: Run) -> Run:
    """Do the work of a claimed `running` consolidate run and finish it. For the master
    agent, fact hygiene runs after the rewrite step (its own `fact_review` run, whose
    summary is also appended to this run's). Then the wiki compile is chained, once this
    run is finished (one rewrite-or-compile per agent). Never raises: an unexpected error
    fails the run (files as they were) and is logged."""
    agent = run.agent
    try:
        outcome = _rewrite_step(run, agent)
    except Exception as exc:  # the run must never stay `running`
        log.exception("consolidation run %s failed", run.pk)
        outcome = Outcome(Run.Status.FAILED, f"internal error: {exc.__class__.__name__}: {exc}")
    summary = outcome.summary
    if agent.is_default and outcome.answered and outcome.block is not None:
        from memory import hygiene

        try:
            review = hygiene.review_facts(agent, outcome.block, parent=run)
            summary += f" · fact review (run #{review.pk}): {review.summary}"
        except Exception:
            log.exception("fact hygiene after run %s failed", run.pk)
            summary += " · fact review failed"
    run = runs.finish_run(run, outcome.status, summary=summary, reasons=outcome.reasons)
    chain_compile(agent)
    return run


def _rewrite_step(run: Run, agent: Agent) -> Outcome:
    path = notes.memory_path(agent)
    old_text = workspace.read(path)
    old_hash = workspace.hash_text(old_text)
    old_text = old_text or ""
    memory_info = workspace.stat(path)
    block = read_notes_block(agent)
    if not block.note_names:
        return Outcome(Run.Status.SKIPPED, "no daily notes to read")
    # An empty MEMORY.md (as an agent's creation or start-up leaves it) has consolidated
    # nothing yet: every note counts as new.
    consolidated = memory_info is not None and memory_info.size > 0
    if consolidated and (block.newest_mtime or 0) <= memory_info.mtime:
        return Outcome(Run.Status.SKIPPED, "no note is newer than MEMORY.md")
    provider = get_provider()
    if provider is None:
        return Outcome(Run.Status.SKIPPED, NO_MODEL)

    today = notes.today()
    system, user = build_prompt(agent, old_text, block, today=today)
    rewrite, failure = ask_for_run(run, provider, system, user, parse_rewrite)
    if rewrite is None:
        return Outcome(Run.Status.FAILED, failure)

    reasons = reason_texts(rewrite)
    if rewrite.memory == old_text:
        return Outcome(
            Run.Status.SUCCEEDED,
            "MEMORY.md is up to date; nothing to propose",
            reasons,
            True,
            block,
        )

    decision = autoapply.decide(old_text, rewrite.memory, allowed_dates=[*block.days, today])
    reasons += [
        f"unknown date: {date} is not in MEMORY.md, not the date of a note read, and not today"
        for date in decision.unknown_dates
    ]
    # The proposal's base must be the text the model read: if MEMORY.md changed during
    # the call, proposing now would quietly overwrite that change on approval.
    with workspace.locked(path):
        if workspace.file_hash(path) != old_hash:
            return Outcome(
                Run.Status.FAILED,
                "MEMORY.md changed while the model was rewriting it; nothing proposed",
                reasons,
                True,
                block,
            )
        proposal = propose(
            KIND,
            agent=agent,
            target=path,
            payload={"memory": rewrite.memory},
            reasons=reasons,
            source=f"job:consolidate-{run.pk}",
            run=run,
        )
    supersede_pending(KIND, agent=agent, except_id=proposal.pk)

    if not agent.autonomous:
        return Outcome(
            Run.Status.SUCCEEDED,
            f"proposed a rewrite of MEMORY.md (proposal #{proposal.pk}) for review",
            reasons,
            True,
            block,
        )
    if not decision.apply:
        why = "; ".join(decision.reasons)
        return Outcome(
            Run.Status.HELD,
            f"held for review (proposal #{proposal.pk}): {why}",
            reasons,
            True,
            block,
        )
    try:
        apply_now(proposal, by=f"auto:{agent.id}")
    except Conflict as exc:
        return Outcome(
            Run.Status.FAILED,
            f"the rewrite could not apply (proposal #{proposal.pk}): {exc.message}",
            reasons,
            True,
            block,
        )
    return Outcome(
        Run.Status.SUCCEEDED,
        f"applied at once (proposal #{proposal.pk}): {len(decision.added)} line(s) added, "
        f"{len(decision.redated)} date(s) changed",
        reasons,
        True,
        block,
    )


def chain_compile(agent: Agent) -> None:
    """Start the wiki compile after a consolidation. Lazily imported: until the wiki app
    provides it, this is a logged no-op ("wiki compile not installed"). Errors are logged,
    never raised — a failing compile never harms the consolidation."""
    try:
        from wiki.compile import compile_after_consolidation
    except ImportError:
        log.info("wiki compile not installed; nothing chained after consolidating %s", agent.id)
        return
    try:
        compile_after_consolidation(agent.id)
    except Exception:
        log.exception("the wiki compile chained after consolidating %s failed", agent.id)


# --- starting a run ------------------------------------------------------------------------


def start_consolidation(agent: Agent, *, trigger: str = "api") -> Run:
    """Create the `running` run now (Conflict/409 while a consolidation or compile runs for
    the agent) and hand the work to a django-q2 worker (`memory.tasks.consolidate_task`).
    Returns the run as it is after enqueueing (with Q_SYNC the work is already done)."""
    return runs.start_queued(
        agent, Run.Kind.CONSOLIDATE, trigger=trigger, task="memory.tasks.consolidate_task"
    )


def consolidate_agent(agent: Agent, *, trigger: str, task_key: str | None = None) -> Run:
    """Start, claim and run a consolidation in this process (the scheduled path), the same
    code the API's task runs. A duplicate delivery (same task_key) returns the existing
    run and does nothing. While another consolidation or compile runs for the agent, the
    returned run is a finished `skipped` one saying so (Activity shows the missed turn)."""
    try:
        run = runs.start_run(agent, Run.Kind.CONSOLIDATE, trigger=trigger, task_key=task_key)
    except Conflict as exc:
        return runs.record_run(
            agent, Run.Kind.CONSOLIDATE, Run.Status.SKIPPED, trigger=trigger, summary=exc.message
        )
    if not runs.claim_run(run):
        return run
    return run_consolidation(run)


def get_run_or_404(run_id: int) -> Run:
    run = Run.objects.select_related("agent").filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"No run {run_id}.")
    return run
