"""Standing rules stay where they were made (SPEC §7): scoped to the agent and job of the
card they were made on — never another agent's job of the same name —, and never
overwriting or deleting a fact that the same agent's same job did not write (the owner's
facts are always asked about)."""

from __future__ import annotations

import pytest

from memory import facts
from memory.errors import InvalidInput
from memory.models import Agent
from memory.writes import forget_fact_or_propose, save_fact_or_propose
from proposals import rules
from proposals.models import Proposal, StandingRule


@pytest.fixture
def agents(db, workspace, settings, django_capture_on_commit_callbacks):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": True}  # rules apply inline
    made = {}
    for name in ("alpha", "beta"):
        made[name] = Agent.objects.create(id=name, name=name.title())
    return made


def _fact(name, *, by, description="d", capture):
    with capture(execute=True):
        _, proposal = save_fact_or_propose(
            name,
            description=description,
            type="preference",
            body="",
            source="job:nightly",
            written_by=by,
        )
    proposal.refresh_from_db()
    return proposal


def test_a_rule_made_on_beta_s_card_never_applies_to_alpha_s_job_of_that_name(
    agents, django_capture_on_commit_callbacks
):
    card = _fact("coffee", by="beta", capture=django_capture_on_commit_callbacks)
    rule = rules.rule_from(card, by="alice")

    alpha = _fact("tea", by="alpha", capture=django_capture_on_commit_callbacks)
    beta = _fact("juice", by="beta", capture=django_capture_on_commit_callbacks)

    assert (rule.agent_id, rule.source, rule.kind) == ("beta", "job:nightly", "user_fact")
    assert alpha.requested_by == "alpha" and alpha.status == "pending"
    assert beta.status == "approved" and beta.decided_by == f"rule:{rule.pk}"
    assert facts.get_fact("tea") is None and facts.get_fact("juice") is not None


def test_a_rule_never_overwrites_or_deletes_the_owner_s_fact(
    agents, django_capture_on_commit_callbacks
):
    facts.save_fact(
        "tea", description="mine", type="preference", body="", written_by="owner", source="web"
    )
    card = _fact("coffee", by="beta", capture=django_capture_on_commit_callbacks)
    rules.rule_from(card, by="alice")
    with django_capture_on_commit_callbacks(execute=True):
        forget = forget_fact_or_propose("tea", source="job:nightly", written_by="beta")
    rules.rule_from(forget, by="alice")
    with django_capture_on_commit_callbacks(execute=True):
        forget_again = forget_fact_or_propose("tea", source="job:nightly", written_by="beta")

    update = _fact(
        "tea", by="beta", description="beta's", capture=django_capture_on_commit_callbacks
    )

    assert update.status == "pending"
    assert Proposal.objects.get(pk=forget_again.pk).status == "pending"
    assert facts.get_fact("tea").description == "mine"


def test_a_rule_updates_a_fact_its_own_job_wrote(agents, django_capture_on_commit_callbacks):
    first = _fact("coffee", by="beta", capture=django_capture_on_commit_callbacks)
    rules.rule_from(first, by="alice")
    # The first one was proposed before the rule: applied now, by hand.
    from proposals import actions

    actions.approve(first, by="alice")
    other_job = facts.get_fact("coffee")
    assert other_job.written_by == "beta" and other_job.source == "job:nightly"

    update = _fact(
        "coffee", by="beta", description="v2", capture=django_capture_on_commit_callbacks
    )

    assert update.status == "approved"
    assert facts.get_fact("coffee").description == "v2"


def test_a_card_no_agent_asked_for_makes_no_rule(agents):
    proposal = Proposal.objects.create(kind="user_fact", target="x", source="job:nightly")
    with pytest.raises(InvalidInput):
        rules.rule_from(proposal, by="alice")


def test_a_rule_without_an_agent_matches_nothing(agents, django_capture_on_commit_callbacks):
    StandingRule.objects.create(kind="user_fact", source="job:nightly", agent=None)
    proposal = _fact("tea", by="alpha", capture=django_capture_on_commit_callbacks)
    assert proposal.status == "pending"
    assert rules.matching_rule(proposal) is None
