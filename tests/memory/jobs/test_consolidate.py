"""The nightly rewrite of MEMORY.md end to end, against the fake model over real HTTP
(SPEC §8, §13.1)."""

from __future__ import annotations

import threading
import time
from decimal import Decimal

import pytest

from memory import notes, workspace
from memory.errors import Conflict
from memory.jobs.llm import NO_MODEL
from memory.jobs.nightly import consolidate_agent
from memory.models import Run
from proposals import actions
from proposals.models import Proposal
from tests.fakellm import Reply
from tests.memory.jobs.conftest import (
    day,
    rewrite_answer,
    set_mtime,
    step_prompts,
    write_memory,
    write_note,
)

OLD = "# Memory\n\n- Owner lives in Hanoi\n- Bought a lamp yesterday\n"
NEW = "# Memory\n\n- Owner lives in Hanoi ({today})\n"


def run_now(agent) -> Run:
    return consolidate_agent(agent, trigger="test")


def test_it_proposes_the_rewrite_for_review(helper_agent, fake_llm):
    path = write_memory(helper_agent, OLD)
    write_note(helper_agent, f"{day(0)}.md", "# today\n- still in Hanoi\n")
    new = NEW.format(today=day(0))
    fake_llm.script(
        rewrite_answer(
            new,
            ("- Owner lives in Hanoi", "keep", "confirmed by today's note"),
            ("- Bought a lamp yesterday", "drop", "mattered for one day only"),
        )
    )

    run = run_now(helper_agent)

    assert run.status == "succeeded"
    (proposal,) = Proposal.objects.filter(kind="memory_rewrite")
    assert run.summary == f"proposed a rewrite of MEMORY.md (proposal #{proposal.pk}) for review"
    assert proposal.status == "pending"
    assert proposal.agent == helper_agent
    assert proposal.run == run
    assert proposal.target == "agents/helper/MEMORY.md"
    assert proposal.previous_body == OLD
    assert proposal.base_hash == workspace.hash_text(OLD)
    assert proposal.payload["memory"] == new
    assert proposal.reasons == [
        "keep: - Owner lives in Hanoi — confirmed by today's note",
        "drop: - Bought a lamp yesterday — mattered for one day only",
    ]
    assert run.reasons == proposal.reasons
    assert workspace.read(path) == OLD  # proposed, not written
    # usage and cost: the fake reports 120 in / 45 out; gpt-4o-mini $0.15 / $0.60 per Mtok
    assert (run.model, run.tokens_in, run.tokens_out) == ("gpt-4o-mini", 120, 45)
    assert run.cost == Decimal("0.000045")
    assert run.finished_at is not None

    actions.approve(proposal, by="alice")
    assert workspace.read(path) == new


def test_it_hands_undated_and_old_lines_to_the_model_for_review(helper_agent, fake_llm):
    fresh, old, undated = (
        f"- Fresh line ({day(-10)})",
        f"- Old line ({day(-91)})",
        "- Undated line",
    )
    write_memory(helper_agent, f"# Memory\n\n{fresh}\n{old}\n{undated}\n")
    write_note(helper_agent, f"{day(0)}.md", "a note\n")
    fake_llm.script(rewrite_answer(f"# Memory\n\n{fresh}\n"))

    run_now(helper_agent)

    (prompt,) = step_prompts(fake_llm, "consolidate")
    review = prompt.split("# Lines to review")[1].split("# Daily notes")[0]
    assert old in review
    assert undated in review
    assert fresh not in review
    assert fresh in prompt.split("# Lines to review")[0]  # the whole MEMORY.md is there
    assert "a note" in prompt


def test_it_skips_without_a_model_call_when_no_note_is_new_or_changed(helper_agent, fake_llm):
    note = write_note(helper_agent, f"{day(0)}.md", "old news\n", age=7200)
    write_memory(helper_agent, OLD, age=60)
    fake_llm.script(rewrite_answer(OLD))
    first = run_now(helper_agent)
    assert first.status == "succeeded", first.summary
    assert first.notes_read == {f"{day(0)}.md": workspace.hash_text("old news\n")}

    # Nothing new: skipped, no model call — even when a sync or a clone renews every mtime.
    set_mtime(note, time.time() + 3600)
    second = run_now(helper_agent)
    assert (second.status, second.summary) == (
        "skipped",
        "no note is new or changed since the last consolidation read it",
    )
    assert len(step_prompts(fake_llm, "consolidate")) == 1

    # A changed note (same name, new text) is read again.
    write_note(helper_agent, f"{day(0)}.md", "old news\nand a new line\n", age=7200)
    fake_llm.script(rewrite_answer(OLD))
    third = run_now(helper_agent)
    assert third.status == "succeeded", third.summary
    assert "and a new line" in step_prompts(fake_llm, "consolidate")[-1]


def test_it_reads_notes_older_than_memory_md_that_no_run_read(helper_agent, fake_llm):
    # A cloned or synced workspace, or an agent that edits MEMORY.md after its notes:
    # MEMORY.md is newer than every note, yet no consolidation has read them.
    write_note(helper_agent, f"{day(0)}.md", "old news\n", age=7200)
    write_memory(helper_agent, OLD, age=60)
    fake_llm.script(rewrite_answer(OLD + f"- old news ({day(0)})\n"))

    run = run_now(helper_agent)

    assert run.status == "succeeded", run.summary
    assert "old news" in step_prompts(fake_llm, "consolidate")[0]
    assert Proposal.objects.get(kind="memory_rewrite").status == "pending"


def test_a_failed_run_does_not_count_as_having_read_the_notes(helper_agent, fake_llm):
    write_note(helper_agent, f"{day(0)}.md", "news\n")
    write_memory(helper_agent, OLD)
    fake_llm.script(Reply(status=500))
    assert run_now(helper_agent).status == "failed"
    fake_llm.script(rewrite_answer(OLD))
    assert run_now(helper_agent).status == "succeeded"


def test_it_reads_older_notes_when_memory_md_is_still_empty(helper_agent, fake_llm):
    write_note(helper_agent, f"{day(0)}.md", "old news\n", age=7200)
    write_memory(helper_agent, "", age=60)
    fake_llm.script(rewrite_answer(f"- old news ({day(0)})\n"))

    run = run_now(helper_agent)

    assert run.status == "succeeded", run.summary
    assert "old news" in step_prompts(fake_llm, "consolidate")[0]
    assert Proposal.objects.get(kind="memory_rewrite").status == "pending"


def test_it_skips_an_agent_without_notes(helper_agent, fake_llm):
    write_memory(helper_agent, OLD)

    run = run_now(helper_agent)

    # The first consolidation reads from the day MEMORY.md last changed (SPEC §8).
    assert (run.status, run.summary) == ("skipped", f"no daily notes to read since {day(-8)}")
    assert fake_llm.requests == []  # nor did the chained compile: no notes at all


def test_it_skips_when_no_model_is_configured(helper_agent, settings):
    settings.MEMORY_LLM_MODEL = ""
    write_memory(helper_agent, OLD)
    write_note(helper_agent, f"{day(0)}.md", "news\n")

    run = run_now(helper_agent)

    assert (run.status, run.summary) == ("skipped", NO_MODEL)
    assert run.summary == "no model configured"


@pytest.mark.parametrize(
    ("reply", "summary_start"),
    [
        (
            "Here is the new memory: - Owner lives in Hanoi",
            "the model answered badly: the model did not answer with one JSON object",
        ),
        ({"memory": "# Memory\n"}, "the model answered badly: the answer lacks `reasons`"),
        ({"reasons": []}, "the model answered badly: the answer lacks `memory`"),
        ({"memory": ["a"], "reasons": []}, "the model answered badly: `memory` is not a string"),
        ({"memory": "x", "reasons": "none"}, "the model answered badly: `reasons` is not a list"),
        (
            {"memory": "x", "reasons": [{"line": "a", "action": "delete", "why": "b"}]},
            "the model answered badly: reason 1 has an unknown action 'delete'",
        ),
        (
            {"memory": "x", "reasons": [{"line": "a", "action": "keep"}]},
            "the model answered badly: reason 1 lacks",
        ),
        (Reply(status=500), "the model call failed: HTTP 500"),
        (
            Reply(content={"memory": "late", "reasons": []}, delay=1.5),
            "the model call failed: the model did not answer within",
        ),
    ],
    ids=[
        "prose",
        "no-reasons",
        "no-memory",
        "memory-not-str",
        "reasons-not-list",
        "bad-action",
        "no-why",
        "http-500",
        "timeout",
    ],
)
def test_a_bad_answer_fails_the_run_and_touches_nothing(
    helper_agent, fake_llm, settings, reply, summary_start
):
    settings.MEMORY_LLM_TIMEOUT = 0.5
    path = write_memory(helper_agent, OLD)
    before = workspace.stat(path)
    write_note(helper_agent, f"{day(0)}.md", "news\n")
    fake_llm.script(reply)

    run = run_now(helper_agent)

    assert run.status == "failed"
    assert run.summary.startswith(summary_start), run.summary
    assert workspace.read(path) == OLD
    assert workspace.stat(path).mtime == before.mtime
    assert not Proposal.objects.exists()


def test_a_failed_run_still_records_the_usage_reported(helper_agent, fake_llm):
    write_memory(helper_agent, OLD)
    write_note(helper_agent, f"{day(0)}.md", "news\n")
    fake_llm.script(Reply(content="not json at all", usage=(1000, 10)))

    run = run_now(helper_agent)

    assert run.status == "failed"
    assert (run.tokens_in, run.tokens_out, run.cost) == (1000, 10, Decimal("0.000156"))


def test_it_accepts_an_answer_in_a_code_fence(helper_agent, fake_llm):
    write_memory(helper_agent, OLD)
    write_note(helper_agent, f"{day(0)}.md", "news\n")
    fake_llm.script(
        '```json\n{"memory": "# Memory\\n- Owner lives in Hanoi\\n", "reasons": []}\n```'
    )

    run = run_now(helper_agent)

    assert run.status == "succeeded"
    assert Proposal.objects.get().payload["memory"] == "# Memory\n- Owner lives in Hanoi\n"


def test_a_new_rewrite_supersedes_the_older_pending_one(helper_agent, fake_llm):
    write_memory(helper_agent, OLD)
    write_note(helper_agent, f"{day(-1)}.md", "yesterday\n")
    fake_llm.script(rewrite_answer("# Memory\n\n- first rewrite\n"))
    first_run = run_now(helper_agent)
    write_note(helper_agent, f"{day(0)}.md", "today\n")
    fake_llm.script(rewrite_answer("# Memory\n\n- second rewrite\n"))

    second_run = run_now(helper_agent)

    first = Proposal.objects.get(run=first_run)
    second = Proposal.objects.get(run=second_run)
    assert (first.status, second.status) == ("superseded", "pending")
    with pytest.raises(Conflict):
        actions.approve(first, by="alice")
    assert workspace.read("agents/helper/MEMORY.md") == OLD


# The hand edit runs on another thread with its own database connection: its version row
# must see the rows this test wrote, so they are committed (on PostgreSQL an uncommitted
# row of the same file would hold the edit, and the edit holds the file's lock).
@pytest.mark.django_db(transaction=True)
def test_it_proposes_nothing_when_memory_changed_during_the_model_call(helper_agent, fake_llm):
    path = write_memory(helper_agent, OLD)
    write_note(helper_agent, f"{day(0)}.md", "news\n")
    fake_llm.script(Reply(content=rewrite_answer("# Memory\n- rewritten\n"), delay=0.6))
    edit = threading.Timer(0.2, workspace.write, args=(path, OLD + "- a hand edit\n"))
    edit.start()

    run = run_now(helper_agent)
    edit.join()

    assert run.status == "failed"
    assert run.summary == "MEMORY.md changed while the model was rewriting it; nothing proposed"
    assert workspace.read(path) == OLD + "- a hand edit\n"
    assert not Proposal.objects.exists()


def test_an_unchanged_memory_proposes_nothing(helper_agent, fake_llm):
    write_memory(helper_agent, OLD)
    write_note(helper_agent, f"{day(0)}.md", "news\n")
    fake_llm.script(rewrite_answer(OLD))

    run = run_now(helper_agent)

    assert (run.status, run.summary) == ("succeeded", "MEMORY.md is up to date; nothing to propose")
    assert not Proposal.objects.exists()


# --- autonomous agents: code decides (SPEC §8) -------------------------------------------

MEM = "# Memory\n\n- Owner lives in Hanoi ({d90})\n- Prefers tea\n"


@pytest.mark.parametrize(
    ("case", "new", "applied", "summary_part"),
    [
        ("add", MEM + "- Plays the piano ({note})\n", True, "1 line(s) added, 0 date(s) changed"),
        ("dates", MEM.replace("({d90})", "({note})"), True, "0 line(s) added, 1 date(s) changed"),
        ("today", MEM + "- Bought a bike ({today})\n", True, "1 line(s) added"),
        (
            "drop",
            "# Memory\n\n- Owner lives in Hanoi ({d90})\n",
            False,
            "drops a line: - Prefers tea",
        ),
        (
            "change",
            MEM.replace("Prefers tea", "Prefers coffee"),
            False,
            "changes a line: - Prefers tea → - Prefers coffee",
        ),
        (
            "unknown-date",
            MEM + "- Bought a bike (2020-01-02)\n",
            False,
            "carries the date 2020-01-02",
        ),
    ],
)
def test_an_autonomous_agents_rewrite_applies_or_is_held_by_code(
    helper_agent, fake_llm, case, new, applied, summary_part
):
    helper_agent.autonomous = True
    helper_agent.save()
    dates = {"d90": day(-90), "note": day(-2), "today": day(0)}
    old = MEM.format(**dates)
    new = new.format(**dates)
    path = write_memory(helper_agent, old)
    write_note(helper_agent, f"{day(-2)}.md", "a note\n")
    fake_llm.script(rewrite_answer(new))

    run = run_now(helper_agent)

    proposal = Proposal.objects.get(run=run)
    assert summary_part in run.summary, run.summary
    if applied:
        assert run.status == "succeeded"
        assert run.summary.startswith(f"applied at once (proposal #{proposal.pk})")
        assert proposal.status == "approved"
        assert proposal.decided_by == "auto:helper"
        assert workspace.read(path) == new
    else:
        assert run.status == "held"
        assert run.summary.startswith(f"held for review (proposal #{proposal.pk})")
        assert proposal.status == "pending"
        assert workspace.read(path) == old
    if case == "unknown-date":
        assert (
            "unknown date: 2020-01-02 is not in MEMORY.md, not the date of a note read, "
            "and not today"
        ) in proposal.reasons


def test_an_auto_apply_of_a_stale_base_says_so(helper_agent, fake_llm, monkeypatch):
    """apply_now's stale-base check: the rewrite never clobbers a write made between the
    proposal and its application."""
    helper_agent.autonomous = True
    helper_agent.save()
    path = write_memory(helper_agent, "- a\n")
    write_note(helper_agent, f"{day(0)}.md", "news\n")
    fake_llm.script(rewrite_answer(f"- a\n- b ({day(0)})\n"))
    original = actions.supersede_pending

    def supersede_then_edit(*args, **kwargs):  # a hand edit lands right after proposing
        result = original(*args, **kwargs)
        workspace.write(path, "- a\n- hand edit\n")
        return result

    monkeypatch.setattr("memory.jobs.consolidate.supersede_pending", supersede_then_edit)

    run = run_now(helper_agent)

    assert run.status == "failed"
    assert "the rewrite could not apply" in run.summary
    assert Proposal.objects.get(run=run).status == "superseded"
    assert workspace.read(path) == "- a\n- hand edit\n"


def test_a_missing_memory_file_is_proposed_from_nothing(helper_agent, fake_llm):
    workspace.delete(notes.memory_path(helper_agent))  # e.g. removed by hand
    write_note(helper_agent, f"{day(0)}.md", "Owner's name is Lan\n")
    fake_llm.script(rewrite_answer(f"- Owner's name is Lan ({day(0)})\n"))

    run_now(helper_agent)

    proposal = Proposal.objects.get()
    assert proposal.previous_body is None
    assert proposal.base_hash == workspace.ABSENT


def test_the_wiki_compile_follows_and_its_failure_does_no_harm(helper_agent, fake_llm):
    path = write_memory(helper_agent, OLD)
    write_note(helper_agent, f"{day(0)}.md", "news\n")
    # The compile, chained after, gets the same (for it, malformed) answer and fails.
    fake_llm.script(rewrite_answer("# Memory\n- rewritten\n"))

    run = run_now(helper_agent)

    compile_run = Run.objects.get(kind="compile")
    assert compile_run.trigger == "consolidation"
    assert compile_run.started_at >= run.finished_at  # one rewrite-or-compile at a time
    assert compile_run.status == "failed"
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert Proposal.objects.get(kind="memory_rewrite").status == "pending"
    assert workspace.read(path) == OLD


def test_an_added_line_names_the_heading_it_stands_under_in_the_rewrite():
    from memory.jobs.consolidate import parse_rewrite, reason_texts

    rewrite = parse_rewrite(
        {
            "memory": "# MEMORY.md\n\n## Lịch\n\n- Bơi thứ Bảy. (2026-01-05)\n",
            "reasons": [
                {"line": "- Bơi thứ Bảy. (2026-01-05)", "action": "add", "why": "new",
                 "heading": "Công việc"},
                {"line": "- not in the text", "action": "add", "why": "?", "heading": "X"},
            ],
        }
    )  # fmt: skip

    assert rewrite.reasons[0]["heading"] == "Lịch"  # where the text puts it, not the claim
    assert "heading" not in rewrite.reasons[1]
    assert reason_texts(rewrite)[0] == "add: - Bơi thứ Bảy. (2026-01-05) — new"
