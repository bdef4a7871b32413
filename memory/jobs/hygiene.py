"""Fact hygiene (SPEC §9): in the master agent's consolidation, after the MEMORY.md step,
the model reviews the shared facts and may propose to forget or update some.

- Recorded as its own run of kind `fact_review` (trigger `consolidate:<run id>`, task key
  `fact-review:<run id>`, so a repeated call for one consolidation does nothing twice),
  with its own tokens, cost and summary; its proposals link to it.
- Reads exactly the notes block the rewrite step read, plus up to MAX_FACTS facts: stale
  ones first (oldest first), then the rest (newest first) — fewer when the model's window
  (memory.jobs.window) cannot hold them all; "prompt too long for model" when not even
  one fits. The prompt says how many were left out. The answer is constrained to
  memory/jobs/prompts/hygiene_schema.json and checked against it.
- At most MAX_PROPOSALS `fact_review` proposals, **always pending** — even for an
  autonomous master. The limit is the code's (SPEC §9), not the schema's: the items past
  it are ignored and named in the summary, the answer is not refused. One pending
  hygiene proposal per fact: a new one supersedes the older `fact_review` for that fact.
  Other kinds (a `user_fact` from a conversation) are never touched.
- Unknown fact names are ignored. A bad answer (§13.1 shape not met) proposes nothing and
  the run summary says the model answered badly.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from memory import clock, facts
from memory.errors import DomainError, InvalidInput, NotFound
from memory.jobs import runs, window
from memory.jobs.llm import NO_MODEL, BadAnswer, LLMError, get_provider, load_schema, render_prompt
from memory.models import Agent, Run
from memory.notes import NotesBlock
from memory.text import cap
from proposals.actions import BaseKind, propose, supersede_pending
from proposals.models import Proposal

log = logging.getLogger(__name__)

MAX_FACTS = 60
MAX_PROPOSALS = 10
MAX_BODY_CHARS = 2_000  # per fact in the prompt; the whole body is in the file
KIND = "fact_review"


# --- the proposal kind -------------------------------------------------------------------


class FactReviewKind(BaseKind):
    """Forget or update one shared fact. Payload: `name`, `action` ("forget" | "update"),
    `why`, and for update `fact` {description, type, body} (the merged new values)."""

    name = KIND

    def changes(self, *, agent: Any, payload: dict) -> dict[str, str | None]:
        if not isinstance(payload, dict):
            raise InvalidInput("A proposal payload is a JSON object.")
        name = payload.get("name")
        path = facts.fact_path(name)
        current = facts.get_fact(name)
        if current is None:
            raise NotFound(f"No fact {name!r}.")
        if payload.get("action") == "forget":
            return {path: None}
        new = payload.get("fact") or {}
        return {
            path: facts.render_fact(
                name,
                description=new.get("description", current.description),
                type=new.get("type", current.type),
                body=new.get("body", current.body),
                written_by=payload.get("written_by") or current.written_by or "owner",
                source=current.source or "job",
            )
        }

    def after_write(self, proposal: Proposal) -> None:
        facts.update_index([proposal.payload["name"]])


# --- the prompt ----------------------------------------------------------------------------


def _updated_day(fact: facts.Fact) -> dt.date:
    try:
        return dt.date.fromisoformat(fact.updated)
    except ValueError:
        return dt.date.min  # never confirmed: the oldest of all


def order_facts(all_facts: list[facts.Fact]) -> list[facts.Fact]:
    """Stale facts first, oldest first; then the rest, newest first (SPEC §9). Ties by
    name, so the order is stable."""
    stale = sorted((f for f in all_facts if f.stale), key=lambda f: (_updated_day(f), f.name))
    fresh = sorted((f for f in all_facts if not f.stale), key=lambda f: f.name)
    fresh.sort(key=_updated_day, reverse=True)
    return stale + fresh


def _render_fact_for_prompt(fact: facts.Fact) -> str:
    label = " STALE" if fact.stale else ""
    body = cap(fact.body.strip(), MAX_BODY_CHARS) or "(no body)"
    return (
        f"## {fact.name} ({fact.type}, updated {fact.updated or 'never'}){label}\n"
        f"description: {fact.description}\n\n{body}\n"
    )


@dataclass(frozen=True)
class FactPrompt:
    system: str
    user: str
    shown: list[str]  # fact names, in prompt order
    left_out: int


def build_prompt(
    block: NotesBlock, all_facts: list[facts.Fact], *, today: dt.date, limit: int = MAX_FACTS
) -> FactPrompt:
    """The review's prompt: the notes block and the first `limit` facts in review order."""
    ordered = order_facts(all_facts)
    shown = ordered[: min(limit, MAX_FACTS)]
    left_out = len(ordered) - len(shown)
    user = render_prompt(
        "hygiene_user.md",
        today=today.isoformat(),
        shown=len(shown),
        total=len(ordered),
        left_out=left_out,
        facts="\n".join(_render_fact_for_prompt(f) for f in shown) or "(no facts)",
        days=len(block.days),
        day_list=", ".join(day.isoformat() for day in block.days),
        notes=block.text.rstrip("\n"),
    )
    return FactPrompt(render_prompt("hygiene_system.md"), user, [f.name for f in shown], left_out)


# --- the answer ----------------------------------------------------------------------------


def parse_review(data: dict[str, Any]) -> list[dict]:
    """The §13.1 hygiene answer, already checked against hygiene_schema.json (`proposals`
    of string `name`, `action` forget or update, string `why`, an optional `fact` of
    string fields). Checked here rather than in the schema, which would need `anyOf`
    branches or `if`/`then` and so lose the one flat item shape the prompt shows the
    model: an update carries a `fact` (BadAnswer otherwise). A forget's `fact` is dropped."""
    cleaned = []
    for index, item in enumerate(data["proposals"], start=1):
        entry: dict[str, Any] = {key: item[key] for key in ("name", "action", "why")}
        if item["action"] == "update":
            if "fact" not in item:
                raise BadAnswer(f"proposal {index} updates without a `fact` object")
            entry["fact"] = dict(item["fact"])
        cleaned.append(entry)
    return cleaned


# --- one review ------------------------------------------------------------------------------


def review_facts(agent: Agent, block: NotesBlock, *, parent: Run) -> Run:
    """Run the fact review for the master agent's consolidation `parent`, reading `block`.
    Returns its `fact_review` run (an existing one for the same parent: nothing redone)."""
    run = runs.start_run(
        agent,
        Run.Kind.FACT_REVIEW,
        trigger=f"consolidate:{parent.pk}",
        task_key=f"fact-review:{parent.pk}",
    )
    if not runs.claim_run(run):
        return run
    run, _outcome = runs.run_step(run, lambda run: _review(run, agent, block, parent))
    return run


def _review(run: Run, agent: Agent, block: NotesBlock, parent: Run) -> runs.Outcome:
    provider = get_provider()
    if provider is None:
        return runs.Outcome(Run.Status.SKIPPED, NO_MODEL)
    all_facts = facts.list_facts()
    if not all_facts:
        return runs.Outcome(Run.Status.SKIPPED, "no facts to review")
    today = clock.today()
    try:
        fitted = window.fit(
            provider,
            lambda limit: build_prompt(block, all_facts, today=today, limit=limit),
            lambda prompt: (prompt.system, prompt.user),
            largest=min(MAX_FACTS, len(all_facts)),
            smallest=1,
        )
    except window.PromptTooLong as exc:
        return runs.Outcome(Run.Status.FAILED, f"{exc.message}; no fact proposals")
    except LLMError as exc:  # the endpoint could not be reached to count the prompt
        return runs.Outcome(
            Run.Status.FAILED, f"the model call failed: {exc.message}; no fact proposals"
        )
    prompt = fitted.prompt
    # The consolidation waits for this review: keep its lease too.
    items, failure = runs.ask_for_run(
        run,
        provider,
        prompt.system,
        prompt.user,
        parse_review,
        keep_alive=[parent],
        schema=load_schema("hygiene_schema.json"),
        max_tokens=fitted.max_tokens,
    )
    if items is None:
        return runs.Outcome(Run.Status.FAILED, f"{failure}; no fact proposals")

    known = {fact.name: fact for fact in all_facts}
    made: list[Proposal] = []
    notes_out: list[str] = []
    seen: set[str] = set()
    for item in items:
        name = item["name"]
        if name not in known:
            notes_out.append(f"ignored unknown fact {name!r}")
            continue
        if name in seen:
            notes_out.append(f"ignored a second proposal for {name}")
            continue
        if len(made) == MAX_PROPOSALS:
            notes_out.append(f"ignored {name}: at most {MAX_PROPOSALS} proposals per review")
            continue
        seen.add(name)
        payload: dict[str, Any] = {"name": name, "action": item["action"], "why": item["why"]}
        if item["action"] == "update":
            current = known[name]
            merged = {
                "description": item["fact"].get("description", current.description),
                "type": item["fact"].get("type", current.type),
                "body": item["fact"].get("body", current.body),
            }
            if merged == {
                "description": current.description,
                "type": current.type,
                "body": current.body,
            }:
                notes_out.append(f"ignored an update of {name} that changes nothing")
                continue
            payload["fact"] = merged
            payload["written_by"] = agent.id
        try:
            proposal = propose(
                KIND,
                agent=None,  # shared facts are the user scope
                target=facts.fact_path(name),
                payload=payload,
                reasons=[f"{item['action']} {name}: {item['why']}"],
                source=f"job:consolidate-{parent.pk}",
                run=run,
            )
        except DomainError as exc:  # e.g. an unknown type in an update
            notes_out.append(f"ignored {name}: {exc.message}")
            continue
        supersede_pending(KIND, agent=None, target=proposal.target, except_id=proposal.pk)
        made.append(proposal)

    summary = f"{len(made)} fact proposal(s) created"
    if prompt.left_out:
        summary += f"; {prompt.left_out} fact(s) left out of the review"
    if notes_out:
        summary += "; " + "; ".join(notes_out)
    return runs.Outcome(Run.Status.SUCCEEDED, summary, [p.reasons[0] for p in made])
