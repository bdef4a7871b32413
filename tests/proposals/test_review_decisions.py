"""Decisions that scale (SPEC §7): part of a proposal, edited before approving,
several at once, no nagging, expiry, standing rules. Files on disk and rows checked."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from memory import notes, workspace
from memory.errors import Conflict, Forbidden, InvalidInput
from memory.jobs import review
from memory.writes import add_memory_lines_or_propose, save_fact_or_propose, write_memory_or_propose
from proposals import actions, diff, rules
from proposals.actions import BaseKind, register_kind
from proposals.models import Proposal

OLD = "".join(f"- fact {i}\n" for i in range(12))
NEW = OLD.replace("- fact 1\n", "- fact one\n").replace("- fact 9\n", "- fact nine\n")


class Pages(BaseKind):
    name = "test_review_pages"
    batch = True

    def changes(self, *, agent, payload):
        return {f"memory/wiki/{slug}.md": text for slug, text in payload["pages"].items()}


@pytest.fixture
def pages_kind():
    register_kind(Pages())
    yield
    actions._KINDS.pop("test_review_pages", None)


def _batch(master):
    workspace.write("memory/wiki/a.md", "A old\n")
    workspace.write("memory/wiki/b.md", "B old\n")
    return actions.propose(
        "test_review_pages",
        agent=master,
        target="memory/wiki",
        payload={"pages": {"a": "A new\n", "b": "B new\n", "c": "C new\n"}},
        source="job:compile",
    )


def _rewrite(agent):
    notes.write_memory(agent, OLD)
    return actions.propose(
        "memory_rewrite", agent=agent, target="MEMORY.md", payload={"memory": NEW}, source="job:c"
    )


def test_a_rewrite_applies_hunk_by_hunk_and_undo_restores_byte_for_byte(master, workspace):
    proposal = _rewrite(master)
    hunks = diff.hunks_of(proposal)["MEMORY.md"]
    assert len(hunks) == 2

    actions.approve(proposal, by="alice", hunks={"MEMORY.md": [hunks[1]]})

    assert (workspace / "MEMORY.md").read_text() == OLD.replace("- fact 9\n", "- fact nine\n")
    proposal.refresh_from_db()
    assert proposal.decision["hunks"] == {"MEMORY.md": [list(hunks[1])]}
    assert proposal.payload["writes"]["MEMORY.md"] == NEW  # the plan is kept
    actions.undo(proposal, by="alice")
    assert (workspace / "MEMORY.md").read_bytes() == OLD.encode()


def test_no_hunk_kept_leaves_the_old_text(master, workspace):
    proposal = _rewrite(master)
    actions.approve(proposal, by="alice", hunks={"MEMORY.md": []})
    assert (workspace / "MEMORY.md").read_text() == OLD


def test_bad_hunks_are_refused_and_nothing_is_written(master, workspace):
    proposal = _rewrite(master)
    with pytest.raises(InvalidInput):
        actions.approve(proposal, by="alice", hunks={"MEMORY.md": [[5, 3, 0, 0]]})
    proposal.refresh_from_db()
    assert proposal.status == "pending"
    assert (workspace / "MEMORY.md").read_text() == OLD


def test_a_batch_applies_page_by_page_and_undo_restores_only_those(master, pages_kind, workspace):
    proposal = _batch(master)
    actions.approve(proposal, by="alice", paths=["memory/wiki/a.md", "memory/wiki/c.md"])
    assert (workspace / "memory/wiki/a.md").read_text() == "A new\n"
    assert (workspace / "memory/wiki/b.md").read_text() == "B old\n"
    assert (workspace / "memory/wiki/c.md").read_text() == "C new\n"
    workspace.joinpath("memory/wiki/b.md").write_text("B edited by hand\n")  # not applied: free

    actions.undo(proposal, by="alice")
    assert (workspace / "memory/wiki/a.md").read_bytes() == b"A old\n"
    assert not (workspace / "memory/wiki/c.md").exists()
    assert (workspace / "memory/wiki/b.md").read_text() == "B edited by hand\n"


def test_a_stale_page_never_strands_the_batch(master, pages_kind, workspace):
    proposal = _batch(master)
    (workspace / "memory/wiki/b.md").write_text("B edited\n")

    with pytest.raises(Conflict) as refused:
        actions.approve(proposal, by="alice")
    assert refused.value.extra["stale"] == ["memory/wiki/b.md"]
    proposal.refresh_from_db()
    assert proposal.status == "pending"
    assert (workspace / "memory/wiki/a.md").read_text() == "A old\n"

    actions.approve(proposal, by="alice", skip_stale=True)
    proposal.refresh_from_db()
    assert proposal.status == "approved"
    assert proposal.decision["superseded_pages"] == ["memory/wiki/b.md"]
    assert (workspace / "memory/wiki/a.md").read_text() == "A new\n"
    assert (workspace / "memory/wiki/b.md").read_text() == "B edited\n"
    actions.undo(proposal, by="alice")
    assert (workspace / "memory/wiki/b.md").read_text() == "B edited\n"
    assert (workspace / "memory/wiki/a.md").read_text() == "A old\n"


def test_edit_then_approve_keeps_both_the_proposal_and_what_was_applied(helper_agent, workspace):
    _, proposal = add_memory_lines_or_propose(helper_agent, ["Lan runs at 6"], source="job:b")
    path = "agents/helper/MEMORY.md"
    edited = notes.memory_with_lines("", ["Lan runs at 6:30 every morning"])

    actions.approve(proposal, by="alice", texts={path: edited})

    assert (workspace / path).read_text() == "Lan runs at 6:30 every morning\n"
    proposal.refresh_from_db()
    assert proposal.payload["writes"][path] == "Lan runs at 6\n"
    assert proposal.applied_writes == {path: edited}
    assert proposal.decision["edited"] == [path]
    actions.undo(proposal, by="alice")
    assert (workspace / path).read_text() == ""


def test_bulk_decisions_report_each_refusal_on_its_own(helper_agent, master, workspace):
    first = write_memory_or_propose(helper_agent, "one\n", source="job:b")
    _, second = add_memory_lines_or_propose(master, ["two"], source="job:b")
    _, third = save_fact_or_propose(
        "tea", description="d", type="preference", body="", source="job:b", written_by="master"
    )
    actions.reject(second, by="alice")  # decided already: 409 in the bulk
    (workspace / "agents/helper/MEMORY.md").write_text("changed by hand\n")  # stale: 409

    done, refused = actions.decide_many(
        [first.pk, second.pk, third.pk, 999], approve_it=True, by="alice"
    )

    assert done == [third.pk]
    assert {number for number, _ in refused} == {first.pk, second.pk, 999}
    assert Proposal.objects.get(pk=first.pk).status == "superseded"
    assert Proposal.objects.get(pk=third.pk).decision == {"bulk": True}
    assert (workspace / "users/owner/facts/tea.md").exists()


def test_bulk_over_the_api(owner_client, helper_agent, workspace):
    _, first = add_memory_lines_or_propose(helper_agent, ["one"], source="job:b")
    answer = owner_client.post(
        "/api/memory/proposals/bulk",
        {"ids": [first.pk, first.pk + 50], "approve": True},
        format="json",
    )
    assert answer.status_code == 200
    assert answer.json()["decided"] == [first.pk]
    assert answer.json()["refused"][0]["id"] == first.pk + 50


def test_partial_and_edited_over_the_api(owner_client, master, workspace):
    proposal = _rewrite(master)
    hunks = owner_client.get(f"/api/memory/proposals/{proposal.pk}/hunks").json()["hunks"]
    assert [h["added"] for h in hunks] == [["- fact one\n"], ["- fact nine\n"]]
    answer = owner_client.post(
        f"/api/memory/proposals/{proposal.pk}",
        {"approve": True, "hunks": {"MEMORY.md": [hunks[0]["hunk"]]}},
        format="json",
    )
    assert answer.status_code == 200, answer.json()
    assert (workspace / "MEMORY.md").read_text() == OLD.replace("- fact 1\n", "- fact one\n")
    assert answer.json()["decision"]["hunks"]


def test_a_rejected_ask_asked_again_is_counted_not_queued(helper_agent, workspace):
    _, first = add_memory_lines_or_propose(helper_agent, ["same thing"], source="job:b")
    actions.reject(first, by="alice")

    _, again = add_memory_lines_or_propose(helper_agent, ["same thing"], source="job:b")

    assert again.pk == first.pk and again.status == "rejected" and again.repeats == 1
    assert Proposal.objects.filter(status="pending").count() == 0
    _, different = add_memory_lines_or_propose(helper_agent, ["another thing"], source="job:b")
    assert different.status == "pending"


def test_the_same_ask_while_one_waits_is_that_one(helper_agent, workspace):
    _, first = add_memory_lines_or_propose(helper_agent, ["x"], source="job:b")
    _, second = add_memory_lines_or_propose(helper_agent, ["x"], source="job:b")
    assert first.pk == second.pk


def test_approving_one_of_two_on_a_file_supersedes_the_other_and_says_so(helper_agent, workspace):
    _, first = add_memory_lines_or_propose(helper_agent, ["one"], source="job:b")
    second = write_memory_or_propose(helper_agent, "a rewrite\n", source="job:c")

    actions.approve(first, by="alice")

    first.refresh_from_db()
    second.refresh_from_db()
    assert first.decision["superseded"] == [second.pk]
    assert second.status == "superseded" and second.decided_by == f"superseded by #{first.pk}"


def test_appends_to_one_file_never_supersede_one_another(helper_agent, workspace):
    workspace_file = workspace / "agents/helper/MEMORY.md"
    workspace_file.write_text("# M\n")
    _, first = add_memory_lines_or_propose(helper_agent, ["one"], source="job:b")
    _, second = add_memory_lines_or_propose(helper_agent, ["two"], source="job:c")

    actions.approve(first, by="alice")
    second.refresh_from_db()
    assert second.status == "pending"
    actions.approve(second, by="alice")

    assert workspace_file.read_text() == "# M\none\ntwo\n"
    first.refresh_from_db()
    assert "superseded" not in first.decision


def test_old_proposals_expire_and_write_nothing(helper_agent, workspace, settings):
    settings.MEMORY_PROPOSAL_EXPIRE_DAYS = 30
    _, old = add_memory_lines_or_propose(helper_agent, ["old"], source="job:b")
    _, fresh = add_memory_lines_or_propose(helper_agent, ["fresh"], source="job:c")
    Proposal.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=31))

    assert review.expire_old() == [old.pk]

    old.refresh_from_db()
    assert old.status == "expired" and old.decided_by == "expiry"
    assert Proposal.objects.get(pk=fresh.pk).status == "pending"
    assert (workspace / "agents/helper/MEMORY.md").read_text() == ""
    with pytest.raises(Conflict):
        actions.approve(old, by="alice")


# --- standing rules ----------------------------------------------------------------------


def test_a_rule_applies_matching_proposals_and_counts_its_hits_and_undos(
    helper_agent, workspace, settings, django_capture_on_commit_callbacks
):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": True}  # the rule's task runs inline
    rule = rules.create_rule(
        kind="agent_memory", source="job:brief", agent=helper_agent, by="alice"
    )

    with django_capture_on_commit_callbacks(execute=True):
        _, applied = add_memory_lines_or_propose(helper_agent, ["brief line"], source="job:brief")
    with django_capture_on_commit_callbacks(execute=True):
        _, waits = add_memory_lines_or_propose(helper_agent, ["other"], source="job:other")

    applied.refresh_from_db()
    assert applied.status == "approved" and applied.decided_by == f"rule:{rule.pk}"
    assert "brief line" in (workspace / "agents/helper/MEMORY.md").read_text()
    assert Proposal.objects.get(pk=waits.pk).status in ("pending", "superseded")
    actions.undo(applied, by="alice")
    (counts,) = rules.rules_with_counts()
    assert (counts["hits"], counts["undone"], counts["undo_rate"]) == (1, 1, 1.0)

    rules.revoke_rule(rule, by="alice")
    with django_capture_on_commit_callbacks(execute=True):
        _, later = add_memory_lines_or_propose(helper_agent, ["after revoke"], source="job:brief")
    assert Proposal.objects.get(pk=later.pk).status == "pending"


def test_hygiene_and_user_md_can_never_be_ruled(db, workspace):
    with pytest.raises(Forbidden):
        rules.create_rule(kind="fact_review", source="job:consolidate-1", agent=None, by="alice")
    assert not rules.may_be_ruled("user_fact", ["users/owner/USER.md"])
    assert not rules.may_be_ruled("fact_review", [])
    with pytest.raises(InvalidInput):
        rules.create_rule(kind="agent_memory", source="web", agent=None, by="alice")


def test_a_hygiene_proposal_waits_even_with_a_rule_row_made_by_hand(db, workspace, settings):
    """A rule row for fact_review (made around create_rule, e.g. in the admin shell) is
    never applied: the check is made again when a rule would apply."""
    from memory import facts
    from proposals.models import StandingRule

    facts.save_fact(
        "tea", description="d", type="preference", body="", written_by="owner", source="web"
    )
    StandingRule.objects.create(kind="fact_review", source="job:consolidate-1", agent=None)
    proposal = actions.propose(
        "fact_review",
        agent=None,
        target="users/owner/facts/tea.md",
        payload={"name": "tea", "action": "forget", "why": "old"},
        source="job:consolidate-1",
    )
    assert rules.apply_rule(proposal) is None
    review.review_tick()
    assert Proposal.objects.get(pk=proposal.pk).status == "pending"
    assert (workspace / "users/owner/facts/tea.md").exists()


def test_a_rule_is_offered_after_n_identical_approvals_never_created(
    helper_agent, workspace, settings
):
    settings.MEMORY_RULE_OFFER_AFTER = 2
    for n in range(2):
        _, p = add_memory_lines_or_propose(helper_agent, [f"line {n}"], source="job:brief")
        actions.approve(p, by="alice")
    _, third = add_memory_lines_or_propose(helper_agent, ["line 3"], source="job:brief")

    assert rules.offer_for(third) == 2
    from proposals.models import StandingRule

    assert StandingRule.objects.count() == 0
