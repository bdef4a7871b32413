"""Fact hygiene in the master agent's consolidation (SPEC §9), against the fake model."""

from __future__ import annotations

import pytest

from memory import facts, workspace
from memory.jobs.hygiene import MAX_FACTS, order_facts
from memory.jobs.nightly import consolidate_agent
from memory.models import Run
from proposals import actions
from proposals.models import Proposal
from tests.memory.jobs.conftest import day, rewrite_answer, step_prompts, write_memory, write_note

MEMORY = "# Memory\n\n- Owner lives in Hanoi\n"


def put_fact(name: str, updated: str | None, *, description: str = "", body: str = "") -> None:
    """A fact file as it would be on disk, `updated` on the day given (None: no date)."""
    text = facts.render_fact(
        name,
        description=description or f"about {name}",
        type="preference",
        body=body or f"{name} body",
        written_by="master",
        source="chat",
        updated=updated or "2026-01-01",
    )
    if updated is None:
        text = text.replace("updated: '2026-01-01'\n", "").replace("updated: 2026-01-01\n", "")
    workspace.write(facts.fact_path(name), text)


def new_notes(agent) -> None:
    write_memory(agent, MEMORY)
    write_note(agent, f"{day(0)}.md", "- Owner moved to Da Nang\n")


def consolidate(agent, fake, hygiene_answer) -> tuple[Run, Run | None]:
    fake.script(rewrite_answer(MEMORY + f"- Moved to Da Nang ({day(0)})\n"), hygiene_answer)
    run = consolidate_agent(agent, trigger="test")
    review = Run.objects.filter(kind="fact_review", trigger=f"consolidate:{run.pk}").first()
    return run, review


def facts_in_prompt(prompt: str) -> list[str]:
    return [line[3:].split(" ")[0] for line in prompt.splitlines() if line.startswith("## ")][
        : prompt.count("description: ")
    ]


def test_it_orders_stale_facts_first_oldest_first_then_the_rest_newest_first(master, fake_llm):
    put_fact("fresh-month", str(day(-30)))
    put_fact("stale-2025", "2025-01-01")
    put_fact("fresh-yesterday", str(day(-1)))
    put_fact("never-dated", None)
    put_fact("stale-2024", "2024-06-01")
    put_fact("fresh-week", str(day(-7)))
    new_notes(master)

    consolidate(master, fake_llm, {"proposals": []})

    (prompt,) = step_prompts(fake_llm, "hygiene")
    assert facts_in_prompt(prompt) == [
        "never-dated", "stale-2024", "stale-2025", "fresh-yesterday", "fresh-week", "fresh-month"
    ]  # fmt: skip
    assert "# Facts (6 shown of 6; 0 left out)" in prompt
    assert "- Owner moved to Da Nang" in prompt  # the same notes block as the rewrite
    (rewrite_prompt,) = step_prompts(fake_llm, "consolidate")
    notes_block = rewrite_prompt.split("<notes>\n")[1].split("\n</notes>")[0]
    assert "<notes>\n" + notes_block + "\n</notes>" in prompt


def test_it_shows_at_most_sixty_facts_and_says_how_many_were_left_out(master, fake_llm):
    for n in range(65):
        put_fact(f"fact-{n:02d}", str(day(-n)))  # fact-00 newest … fact-64 oldest (fresh)
    put_fact("old-one", "2024-01-01")
    new_notes(master)

    consolidate(master, fake_llm, {"proposals": []})

    (prompt,) = step_prompts(fake_llm, "hygiene")
    shown = facts_in_prompt(prompt)
    assert len(shown) == MAX_FACTS == 60
    assert shown[0] == "old-one"
    assert shown[1:4] == ["fact-00", "fact-01", "fact-02"]
    assert "fact-58" in shown and "fact-59" not in shown
    assert "# Facts (60 shown of 66; 6 left out)" in prompt


def test_it_makes_at_most_ten_proposals_always_pending(master, fake_llm):
    master.autonomous = True
    master.save()
    for n in range(12):
        put_fact(f"fact-{n:02d}", str(day(-1)))
    new_notes(master)
    answer = {
        "proposals": [
            {"name": f"fact-{n:02d}", "action": "forget", "why": "no longer true"}
            for n in range(12)
        ]
    }

    run, review = consolidate(master, fake_llm, answer)

    made = Proposal.objects.filter(kind="fact_review")
    assert made.count() == 10
    assert set(made.values_list("status", flat=True)) == {"pending"}  # even autonomous
    assert review.status == "succeeded"
    assert review.summary.startswith("10 fact proposal(s) created")
    assert "ignored fact-10: at most 10 proposals per review" in review.summary
    assert set(made.values_list("run", flat=True)) == {review.pk}
    assert (review.tokens_in, review.tokens_out, review.model) == (120, 45, "gpt-4o-mini")
    assert workspace.exists(facts.fact_path("fact-00"))  # nothing forgotten yet
    # The rewrite itself was the autonomous agent's to apply (only an added line).
    assert run.status == "succeeded"
    assert run.summary.endswith(f" · fact review (run #{review.pk}): {review.summary}")


def test_a_forget_and_an_update_apply_when_approved(master, fake_llm):
    put_fact("home-city", str(day(-200)), description="Owner lives in Hanoi", body="Hanoi.")
    put_fact("old-hobby", "2024-01-01")
    facts.regenerate_index()
    new_notes(master)
    answer = {
        "proposals": [
            {"name": "old-hobby", "action": "forget", "why": "unconfirmed for two years"},
            {
                "name": "home-city",
                "action": "update",
                "why": "the owner moved",
                "fact": {"description": "Owner lives in Da Nang", "body": "Da Nang since today."},
            },
            {"name": "no-such-fact", "action": "forget", "why": "?"},
        ]
    }

    _, review = consolidate(master, fake_llm, answer)

    assert review.summary == ("2 fact proposal(s) created; ignored unknown fact 'no-such-fact'")
    forget = Proposal.objects.get(kind="fact_review", target=facts.fact_path("old-hobby"))
    update = Proposal.objects.get(kind="fact_review", target=facts.fact_path("home-city"))
    assert forget.reasons == ["forget old-hobby: unconfirmed for two years"]
    assert update.payload["fact"] == {
        "description": "Owner lives in Da Nang",
        "type": "preference",  # left out: keeps its value
        "body": "Da Nang since today.",
    }

    actions.approve(forget, by="alice")
    actions.approve(update, by="alice")

    assert not workspace.exists(facts.fact_path("old-hobby"))
    fact = facts.get_fact("home-city")
    assert (fact.description, fact.type, fact.body) == (
        "Owner lives in Da Nang",
        "preference",
        "Da Nang since today.",
    )
    assert fact.updated == day(0).isoformat()
    assert facts.read_index() == (
        "- [home-city](home-city.md) (preference) — Owner lives in Da Nang\n"
    )


def test_a_new_hygiene_proposal_replaces_the_older_one_for_that_fact(master, fake_llm):
    put_fact("home-city", str(day(-1)))
    put_fact("other", str(day(-1)))
    chat_proposal = actions.propose(
        "user_fact",
        agent=None,
        target=facts.fact_path("home-city"),
        payload={
            "name": "home-city",
            "description": "from a conversation",
            "type": "profile",
            "body": "x",
            "written_by": "master",
            "source": "conv:42",
        },
        source="conv:42",
    )
    new_notes(master)
    consolidate(
        master,
        fake_llm,
        {
            "proposals": [
                {"name": "home-city", "action": "forget", "why": "first thought"},
                {"name": "other", "action": "forget", "why": "stays"},
            ]
        },
    )
    first = Proposal.objects.get(kind="fact_review", target=facts.fact_path("home-city"))
    write_note(master, f"{day(0)}-later.md", "- more news\n")

    consolidate(
        master,
        fake_llm,
        {
            "proposals": [
                {
                    "name": "home-city",
                    "action": "update",
                    "why": "second thought",
                    "fact": {"description": "Owner lives in Da Nang"},
                }
            ]
        },
    )

    first.refresh_from_db()
    chat_proposal.refresh_from_db()
    assert first.status == "superseded"
    pending = Proposal.objects.filter(kind="fact_review", status="pending")
    assert sorted(p.reasons[0] for p in pending) == [
        "forget other: stays",
        "update home-city: second thought",
    ]
    assert chat_proposal.status == "pending"  # a conversation's proposal is never touched


@pytest.mark.parametrize(
    "answer",
    [
        "no changes needed",
        {"changes": []},
        {"proposals": [{"name": "a-fact", "action": "rename", "why": "x"}]},
        {"proposals": [{"name": "a-fact", "action": "update", "why": "x"}]},
        {"proposals": [{"name": "a-fact", "action": "update", "why": "x", "fact": {"body": 3}}]},
    ],
    ids=["prose", "wrong-key", "bad-action", "update-without-fact", "body-not-text"],
)
def test_a_bad_hygiene_answer_proposes_nothing_and_says_so(master, fake_llm, answer):
    put_fact("a-fact", str(day(-1)))
    new_notes(master)

    run, review = consolidate(master, fake_llm, answer)

    assert run.status == "succeeded"  # the rewrite step is not harmed
    assert Proposal.objects.filter(kind="memory_rewrite").count() == 1
    assert review.status == "failed"
    assert "the model answered badly" in review.summary
    assert not Proposal.objects.filter(kind="fact_review").exists()


def test_there_is_no_review_without_new_notes_or_for_other_agents(master, helper_agent, fake_llm):
    put_fact("a-fact", str(day(-1)))
    write_note(master, f"{day(0)}.md", "old\n", age=600)
    write_memory(master, MEMORY, age=60)
    first, _ = consolidate(master, fake_llm, {"proposals": []})
    assert first.status == "succeeded", first.summary
    reviews = len(step_prompts(fake_llm, "hygiene"))
    run, review = consolidate(master, fake_llm, {"proposals": []})
    assert run.status == "skipped"  # the same notes, already read
    assert review is None
    assert len(step_prompts(fake_llm, "hygiene")) == reviews

    new_notes(helper_agent)
    run, review = consolidate(helper_agent, fake_llm, {"proposals": []})
    assert run.status == "succeeded"
    assert review is None
    assert len(step_prompts(fake_llm, "hygiene")) == reviews


def test_there_is_no_review_when_the_rewrite_call_failed(master, fake_llm):
    from tests.fakellm import Reply

    put_fact("a-fact", str(day(-1)))
    new_notes(master)
    fake_llm.script(Reply(status=500))

    run = consolidate_agent(master, trigger="test")

    assert run.status == "failed"
    assert not Run.objects.filter(kind="fact_review").exists()


def test_order_facts_is_stale_oldest_first_then_newest_first():
    def fact(name, updated, stale):
        return facts.Fact(name, "d", "profile", "owner", "chat", updated, "", stale)

    ordered = order_facts(
        [
            fact("b", "2026-11-01", False),
            fact("a", "2025-01-01", True),
            fact("c", "2026-11-20", False),
            fact("d", "2024-01-01", True),
        ]
    )

    assert [f.name for f in ordered] == ["d", "a", "c", "b"]
