"""Wiki compile (SPEC §10.5, §13.1): one proposal per batch, against the fake model over
real HTTP."""

from __future__ import annotations

import os
import time

import pytest

from memory import clock, workspace
from memory.errors import InvalidInput
from memory.jobs import runs
from memory.jobs.nightly import consolidate_agent
from memory.models import Run
from proposals import actions
from proposals.models import Proposal
from tests.fakellm import Reply
from tests.wiki.conftest import write_note
from wiki import compile as wiki_compile
from wiki import pages

TODAY = clock.today().isoformat()
PAGES = "agents/helper/memory/wiki"


def compile_now(agent) -> Run:
    run = runs.start_run(agent, Run.Kind.COMPILE, trigger="test")
    wiki_compile.run_compile(run.pk)
    run.refresh_from_db()
    return run


def page(title, body, *, kind="entity", sources=None, **extra):
    return {
        "title": title,
        "kind": kind,
        "sources": [f"note:{TODAY}"] if sources is None else sources,
        "questions": extra.pop("questions", []),
        "status": extra.pop("status", "ok"),
        "body": body,
        **extra,
    }


def existing_alice(agent) -> str:
    pages.save_page(
        agent, title="Alice", kind="entity", sources=["conv:c1"], body="Alice, by hand."
    )
    return workspace.read(f"{PAGES}/entities/alice.md")


def test_a_batch_is_proposed_then_approved_and_undone_in_one_step(helper_agent, fake_llm):
    write_note(helper_agent, f"{TODAY}.md", f"# {TODAY}\n- Hạn Eco moved to 5 Dec, Alice signs\n")
    alice_before = existing_alice(helper_agent)
    fake_llm.script(
        {
            "pages": [
                page("Hạn Eco", "Due 5 Dec. Signed by [[Alice]].", questions=["Venue?"]),
                page(
                    "Alice",
                    "Alice, by hand.\n\nSigns the Eco contract ([[Hạn Eco]]).",
                    sources=[f"note:{TODAY}"],
                ),  # fmt: skip
                page("Made up", "No idea where this is from.", sources=[]),
                page("Invented", "From a note that does not exist.", sources=["note:2020-01-01"]),
            ]
        }
    )

    run = compile_now(helper_agent)

    (proposal,) = Proposal.objects.filter(kind="wiki_compile")
    assert run.status == "succeeded"
    assert run.summary == (
        f"proposed 2 page(s) (proposal #{proposal.pk}) for review; "
        "2 page(s) dropped without sources"
    )
    assert run.tokens_in == 120 and run.model == "gpt-4o-mini"
    assert proposal.status == "pending" and proposal.run == run
    assert proposal.target == PAGES
    eco, alice = f"{PAGES}/entities/han-eco.md", f"{PAGES}/entities/alice.md"
    assert proposal.previous_body == {eco: None, alice: alice_before}
    assert "dropped 'Made up': no sources" in proposal.reasons
    assert [p["title"] for p in proposal.payload["pages"]] == ["Hạn Eco", "Alice"]
    # Nothing is written before a person approves.
    assert not workspace.exists(eco)
    assert workspace.read(alice) == alice_before
    # The prompt carried the notes and the existing page that the notes mention.
    prompt = fake_llm.prompts()[0]
    assert "Hạn Eco moved to 5 Dec" in prompt and "Alice, by hand." in prompt

    actions.approve(proposal, by="alice")

    eco_text = workspace.read(eco)
    assert "Due 5 Dec. Signed by [[Alice]]." in eco_text
    assert "Linked from:\n- [[alice|Alice]]\n" in eco_text
    alice_text = workspace.read(alice)
    # The sources the page had are kept, the model's are added.
    assert f"sources:\n- conv:c1\n- note:{TODAY}\n" in alice_text
    assert "Signs the Eco contract" in alice_text
    assert "- Venue?" in workspace.read(f"{PAGES}/reports/open-questions.md")

    actions.undo(Proposal.objects.get(pk=proposal.pk), by="alice")

    assert not workspace.exists(eco)
    assert workspace.read(alice) == alice_before
    assert "Venue?" not in workspace.read(f"{PAGES}/reports/open-questions.md")


def test_undo_also_restores_the_blocks_of_pages_outside_the_batch(helper_agent, fake_llm):
    write_note(helper_agent, f"{TODAY}.md", "- Bob met Carol\n")
    pages.save_page(helper_agent, title="Bob", kind="entity", sources=["conv:1"], body="Bob.")
    bob = f"{PAGES}/entities/bob.md"
    bob_before = workspace.read(bob)
    fake_llm.script({"pages": [page("Carol", "Met [[Bob]].")]})
    compile_now(helper_agent)
    proposal = Proposal.objects.get(kind="wiki_compile")
    actions.approve(proposal, by="alice")
    assert "Linked from:\n- [[carol|Carol]]\n" in workspace.read(bob)
    actions.undo(Proposal.objects.get(pk=proposal.pk), by="alice")
    assert workspace.read(bob) == bob_before


def test_an_autonomous_agent_applies_its_own_batch_at_once(helper_agent, fake_llm):
    helper_agent.autonomous = True
    helper_agent.save()
    write_note(helper_agent, f"{TODAY}.md", "- Eco is due\n")
    fake_llm.script({"pages": [page("Eco", "Due.")]})
    run = compile_now(helper_agent)
    proposal = Proposal.objects.get(kind="wiki_compile")
    assert proposal.status == "approved"
    assert run.summary == f"applied 1 page(s) at once (proposal #{proposal.pk})"
    assert workspace.exists(f"{PAGES}/entities/eco.md")


def test_a_batch_with_no_sourced_page_proposes_nothing(helper_agent, fake_llm, workspace):
    write_note(helper_agent, f"{TODAY}.md", "- something\n")
    fake_llm.script({"pages": [page("Eco", "x", sources=[]), page("Bob", "y", sources=["web"])]})
    run = compile_now(helper_agent)
    assert run.status == "succeeded"
    assert run.summary == "no page with sources to propose; 2 page(s) dropped without sources"
    assert not Proposal.objects.exists()
    assert not (workspace / PAGES).exists()


def test_bad_answers_fail_the_run_and_write_nothing(helper_agent, fake_llm, workspace):
    write_note(helper_agent, f"{TODAY}.md", "- something\n")
    bad_answers = [
        "Sure! Here are your pages.",
        {"page": []},
        {"pages": {"title": "Eco"}},
        {"pages": ["Eco"]},
        {"pages": [page("Eco", "x", kind="place")]},
        {"pages": [{**page("Eco", "x"), "body": None}]},
        {"pages": [{**page("Eco", "x"), "sources": "note:2026-11-20"}]},
        {"pages": [{**page("Eco", "x"), "questions": "why?"}]},
        {"pages": [page("???", "x")]},
        {"pages": [page("Eco", "x", status="draft")]},  # the schema says ok or review
        {"pages": [{**page("Eco", "x"), "links": []}]},  # a key the schema does not have
        {"pages": [page("Good", "x"), page("Eco", "x", kind="place")]},
    ]
    for answer in bad_answers:
        fake_llm.script(answer)
        run = compile_now(helper_agent)
        assert run.status == "failed", (answer, run.summary)
        assert run.summary.startswith(("the model answered badly", "the model call failed: the"))
    assert not Proposal.objects.exists()
    assert not (workspace / PAGES).exists()


def test_an_answer_in_a_code_fence_is_accepted(helper_agent, fake_llm):
    write_note(helper_agent, f"{TODAY}.md", "- Eco\n")
    fake_llm.script(
        '```json\n{"pages": [{"title": "Eco", "kind": "concept", "sources": ["note:'
        + TODAY
        + '"], "questions": [], "status": "ok", "body": "x"}]}\n```'
    )
    assert compile_now(helper_agent).status == "succeeded"
    assert Proposal.objects.filter(kind="wiki_compile").count() == 1


def test_a_failing_model_fails_the_run_with_its_reason(helper_agent, fake_llm):
    write_note(helper_agent, f"{TODAY}.md", "- Eco\n")
    fake_llm.script(Reply(status=500))
    run = compile_now(helper_agent)
    assert run.status == "failed"
    assert run.summary.startswith("the model call failed: HTTP 500")


def test_without_a_model_the_run_is_skipped(helper_agent, no_model):
    write_note(helper_agent, f"{TODAY}.md", "- Eco\n")
    run = compile_now(helper_agent)
    assert (run.status, run.summary) == ("skipped", "no model configured")


def test_an_unchanged_vault_proposes_nothing(helper_agent, fake_llm):
    write_note(helper_agent, f"{TODAY}.md", "- Eco\n")
    fake_llm.script({"pages": [page("Eco", "Due.")]})
    compile_now(helper_agent)
    actions.approve(Proposal.objects.get(kind="wiki_compile"), by="alice")
    run = compile_now(helper_agent)
    assert run.summary == "the vault is up to date; nothing to propose"
    assert Proposal.objects.filter(kind="wiki_compile").count() == 1


def test_the_chained_compile_has_its_own_run_and_cost(helper_agent, fake_llm):
    write_note(helper_agent, f"{TODAY}.md", "- Eco is due\n")
    fake_llm.script(
        {"memory": "# Memory\n\n- Eco is due\n", "reasons": []},
        {"pages": [page("Eco", "Due.")]},
    )
    consolidation = consolidate_agent(helper_agent, trigger="test")
    assert consolidation.status == "succeeded"
    compile_run = Run.objects.get(kind="compile")
    assert (compile_run.status, compile_run.trigger) == ("succeeded", "consolidation")
    assert compile_run.tokens_in == 120 and compile_run.cost > 0
    assert Proposal.objects.filter(kind="wiki_compile", run=compile_run).count() == 1
    assert Proposal.objects.filter(kind="memory_rewrite", run=consolidation).count() == 1


def test_a_failing_chained_compile_leaves_the_consolidation_done(helper_agent, fake_llm):
    write_note(helper_agent, f"{TODAY}.md", "- Eco is due\n")
    fake_llm.script(
        {"memory": "# Memory\n\n- Eco is due\n", "reasons": []},
        Reply(status=500),
    )
    consolidation = consolidate_agent(helper_agent, trigger="test")
    consolidation.refresh_from_db()
    assert consolidation.status == "succeeded"
    (rewrite,) = Proposal.objects.filter(kind="memory_rewrite")
    assert rewrite.status == "pending"
    compile_run = Run.objects.get(kind="compile")
    assert compile_run.status == "failed"
    assert compile_run.summary.startswith("the model call failed")
    assert not Proposal.objects.filter(kind="wiki_compile").exists()
    # Nothing is left running: the next consolidation or compile may start.
    assert not Run.objects.filter(status="running").exists()


def test_compile_after_consolidation_never_raises(helper_agent, fake_llm):
    runs.start_run(helper_agent, Run.Kind.CONSOLIDATE, trigger="test")  # still running
    assert wiki_compile.compile_after_consolidation(helper_agent.id) is None
    assert wiki_compile.compile_after_consolidation("no-such-agent") is None


def test_a_wiki_compile_proposal_without_sources_is_refused(helper_agent):
    for sources in ([], ["web"], None):
        with pytest.raises(InvalidInput):
            actions.propose(
                "wiki_compile",
                agent=helper_agent,
                target=PAGES,
                payload={"pages": [{**page("Eco", "x"), "sources": sources}]},
                source="job:test",
            )
    assert not Proposal.objects.exists()


def test_the_chained_compile_skips_notes_it_already_compiled(helper_agent, fake_llm):
    write_note(helper_agent, f"{TODAY}.md", "- Eco is due\n", age=60)
    fake_llm.script({"pages": [page("Eco", "Due.")]})
    first = wiki_compile.compile_after_consolidation(helper_agent.id)
    assert first.status == "succeeded"
    assert first.notes_read == {f"{TODAY}.md": workspace.hash_text("- Eco is due\n")}
    # Judged by content: a renewed mtime (a sync, a clone) is not a new note.
    path = workspace.resolve(helper_agent.path(f"memory/{TODAY}.md"))
    os.utime(path, (time.time() + 3600, time.time() + 3600))
    second = wiki_compile.compile_after_consolidation(helper_agent.id)
    assert (second.status, second.summary) == (
        "skipped",
        "no note is new or changed since the last compile read it",
    )
    assert len(fake_llm.requests) == 1
    # A compile started by hand asks anyway; a new note wakes the chain up again.
    assert compile_now(helper_agent).status == "succeeded"
    write_note(helper_agent, f"{TODAY}-later.md", "- Eco moved\n")
    assert wiki_compile.compile_after_consolidation(helper_agent.id).status == "succeeded"
    assert len(fake_llm.requests) == 3
