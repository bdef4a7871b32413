"""Stale base → 409 + superseded, target untouched; undo restores byte for byte, once,
and only while the target still holds what the proposal wrote."""

from __future__ import annotations

import pytest

from memory import facts, workspace
from memory.errors import Conflict
from memory.writes import add_memory_lines_or_propose
from proposals import actions
from proposals.actions import BaseKind, register_kind
from tests.proposals.helpers import FACT, MEMORY, fact_proposal, rewrite_proposal


def test_it_supersedes_a_proposal_whose_target_was_edited_by_hand(helper_agent):
    workspace.write(MEMORY, "old\n")
    proposal = rewrite_proposal(helper_agent, "old\nnew line\n")
    workspace.write(MEMORY, "edited by hand\n")

    with pytest.raises(Conflict):
        actions.approve(proposal, by="alice")

    assert workspace.read(MEMORY) == "edited by hand\n"
    proposal.refresh_from_db()
    assert proposal.status == "superseded"
    assert proposal.applied_hashes == {}
    with pytest.raises(Conflict):
        actions.approve(proposal, by="alice")
    with pytest.raises(Conflict):
        actions.undo(proposal, by="alice")
    assert workspace.read(MEMORY) == "edited by hand\n"


def test_it_supersedes_the_second_of_two_proposals_on_one_fact(master):
    first = fact_proposal("first")
    second = fact_proposal("second")
    actions.approve(first, by="alice")
    written = workspace.read(FACT)

    with pytest.raises(Conflict):
        actions.approve(second, by="alice")

    assert workspace.read(FACT) == written
    second.refresh_from_db()
    assert second.status == "superseded"


def test_it_undoes_a_new_fact_by_removing_it_and_regenerating_the_index(master):
    facts.save_fact(
        "tea",
        description="Green tea in the afternoon",
        type="preference",
        body="",
        written_by="owner",
        source="web",
    )
    index_before = workspace.read(facts.INDEX_PATH)
    proposal = fact_proposal()
    actions.approve(proposal, by="alice")
    assert "coffee" in workspace.read(facts.INDEX_PATH)

    actions.undo(proposal, by="bob")

    assert workspace.read(FACT) is None
    assert workspace.read(facts.INDEX_PATH) == index_before
    proposal.refresh_from_db()
    assert proposal.status == "approved"
    assert proposal.undone_by == "bob"
    assert proposal.undone_at is not None


def test_it_restores_the_previous_text_byte_for_byte(helper_agent):
    # No final newline, trailing spaces, a CRLF-free but odd text: undo must give it back
    # exactly, not a normalised version.
    original = "# Memory\n\n- lives in Hà Nội   \n- <b>bold</b> & co"
    workspace.write(MEMORY, original)
    _, proposal = add_memory_lines_or_propose(helper_agent, ["a new line"], source="job:1")
    actions.approve(proposal, by="alice")
    assert workspace.read(MEMORY) != original

    actions.undo(proposal, by="alice")

    assert workspace.resolve(MEMORY).read_bytes() == original.encode("utf-8")


def test_it_restores_a_forgotten_fact_byte_for_byte(master):
    facts.save_fact(
        "coffee",
        description="Likes black coffee",
        type="preference",
        body="No sugar.\n\nReally.",
        written_by="owner",
        source="web",
    )
    before = workspace.resolve(FACT).read_bytes()
    index_before = workspace.read(facts.INDEX_PATH)
    proposal = actions.propose(
        "user_fact_forget", agent=None, target=FACT, payload={"name": "coffee"}, source="job:1"
    )
    actions.approve(proposal, by="alice")
    assert workspace.read(FACT) is None

    actions.undo(proposal, by="alice")

    assert workspace.resolve(FACT).read_bytes() == before
    assert workspace.read(facts.INDEX_PATH) == index_before


def test_it_refuses_an_undo_after_a_later_change(helper_agent):
    workspace.write(MEMORY, "old\n")
    proposal = rewrite_proposal(helper_agent, "old\nnew\n")
    actions.approve(proposal, by="alice")
    workspace.write(MEMORY, "old\nnew\nand a hand edit\n")

    with pytest.raises(Conflict) as refused:
        actions.undo(proposal, by="alice")

    assert refused.value.extra["paths"] == [MEMORY]
    assert workspace.read(MEMORY) == "old\nnew\nand a hand edit\n"
    proposal.refresh_from_db()
    assert proposal.undone_at is None
    assert proposal.undone_by == ""


def test_undoing_lines_takes_out_only_those_lines_after_later_writes(helper_agent):
    workspace.write(MEMORY, "# M\n\n## Lịch\n\n- chạy bộ\n")
    _, proposal = add_memory_lines_or_propose(
        helper_agent, ["- bơi thứ Bảy"], source="job:1", heading="Lịch"
    )
    actions.approve(proposal, by="alice")
    workspace.write(MEMORY, workspace.read(MEMORY) + "\n## Việc\n\n- a hand edit\n")

    actions.undo(proposal, by="alice")

    assert workspace.read(MEMORY) == "# M\n\n## Lịch\n\n- chạy bộ\n\n## Việc\n\n- a hand edit\n"


def test_undoing_lines_that_were_changed_since_is_refused(helper_agent):
    workspace.write(MEMORY, "old\n")
    _, proposal = add_memory_lines_or_propose(helper_agent, ["new"], source="job:1")
    actions.approve(proposal, by="alice")
    workspace.write(MEMORY, "old\nnew, corrected by hand\n")

    with pytest.raises(Conflict):
        actions.undo(proposal, by="alice")

    assert workspace.read(MEMORY) == "old\nnew, corrected by hand\n"
    proposal.refresh_from_db()
    assert proposal.undone_at is None


def test_it_refuses_to_undo_twice(helper_agent):
    workspace.write(MEMORY, "old\n")
    _, proposal = add_memory_lines_or_propose(helper_agent, ["new"], source="job:1")
    actions.approve(proposal, by="alice")
    actions.undo(proposal, by="alice")
    # Same text as the proposal wrote, so only the "once" rule can refuse it.
    workspace.write(MEMORY, "old\nnew\n")

    with pytest.raises(Conflict):
        actions.undo(proposal, by="alice")

    assert workspace.read(MEMORY) == "old\nnew\n"


@pytest.mark.parametrize("state", ["pending", "rejected"])
def test_it_refuses_to_undo_what_was_never_applied(helper_agent, state):
    workspace.write(MEMORY, "old\n")
    _, proposal = add_memory_lines_or_propose(helper_agent, ["new"], source="job:1")
    if state == "rejected":
        actions.reject(proposal, by="alice")

    with pytest.raises(Conflict):
        actions.undo(proposal, by="alice")

    assert workspace.read(MEMORY) == "old\n"


class PagesKind(BaseKind):
    """A batch kind like wiki_compile: many pages in one proposal."""

    name = "test_pages"
    batch = True

    def changes(self, *, agent, payload):
        return {f"memory/wiki/{slug}.md": text for slug, text in payload["pages"].items()}


@pytest.fixture
def pages_kind():
    register_kind(PagesKind())
    yield
    actions._KINDS.pop("test_pages", None)


def test_it_applies_and_undoes_a_batch_as_one_step(master, pages_kind):
    workspace.write("memory/wiki/a.md", "A old")
    proposal = actions.propose(
        "test_pages",
        agent=master,
        target="memory/wiki",
        payload={"pages": {"a": "A new", "b": "B new", "c": None}},
        source="job:compile",
    )
    workspace.write("memory/wiki/c.md", "C appeared")
    with pytest.raises(Conflict):
        actions.approve(proposal, by="alice")
    assert workspace.read("memory/wiki/a.md") == "A old"
    assert workspace.read("memory/wiki/b.md") is None

    workspace.delete("memory/wiki/c.md")
    proposal = actions.propose(
        "test_pages",
        agent=master,
        target="memory/wiki",
        payload={"pages": {"a": "A new", "b": "B new"}},
        source="job:compile",
    )
    assert proposal.previous_body == {"memory/wiki/a.md": "A old", "memory/wiki/b.md": None}
    actions.approve(proposal, by="alice")
    assert workspace.read("memory/wiki/a.md") == "A new"
    assert workspace.read("memory/wiki/b.md") == "B new"

    actions.undo(proposal, by="alice")
    assert workspace.read("memory/wiki/a.md") == "A old"
    assert workspace.read("memory/wiki/b.md") is None


def test_it_applies_nothing_of_a_batch_when_one_page_changed(master, pages_kind):
    workspace.write("memory/wiki/a.md", "A old")
    workspace.write("memory/wiki/b.md", "B old")
    proposal = actions.propose(
        "test_pages",
        agent=master,
        target="memory/wiki",
        payload={"pages": {"a": "A new", "b": "B new"}},
        source="job:compile",
    )
    workspace.write("memory/wiki/b.md", "B edited")

    with pytest.raises(Conflict):
        actions.apply_now(proposal, by="auto")

    assert workspace.read("memory/wiki/a.md") == "A old"
    assert workspace.read("memory/wiki/b.md") == "B edited"
    proposal.refresh_from_db()
    assert proposal.status == "superseded"


class BrokenRefreshKind(BaseKind):
    name = "test_broken_refresh"

    def changes(self, *, agent, payload):
        return {"refresh.md": "written\n"}

    def after_write(self, proposal):
        raise RuntimeError("index rebuild failed")


def test_it_keeps_an_approval_when_the_refresh_afterwards_fails(master):
    register_kind(BrokenRefreshKind())
    try:
        proposal = actions.propose(
            "test_broken_refresh", agent=None, target="refresh.md", payload={}, source="job:1"
        )
        actions.approve(proposal, by="alice")
    finally:
        actions._KINDS.pop("test_broken_refresh", None)

    assert workspace.read("refresh.md") == "written\n"
    assert proposal.status == "approved"
