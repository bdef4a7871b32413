"""The review screens in a real browser (SPEC §7): a file's history and a restore, a
rewrite applied hunk by hunk, a batch page by page, and a bulk approval with one refusal."""

from __future__ import annotations

import pytest

from memory import notes
from memory.agents import default_agent
from memory.writes import add_memory_lines_or_propose, write_memory_or_propose
from proposals import actions
from proposals.actions import BaseKind, register_kind
from proposals.models import Proposal

from .conftest import shot, sign_in

pytestmark = pytest.mark.browser

OLD = "".join(f"- fact {i}\n" for i in range(12))
NEW = OLD.replace("- fact 1\n", "- fact one\n").replace("- fact 9\n", "- fact nine\n")


def test_history_lists_versions_and_restores_one(tab, owner, workspace, screenshots):
    master = default_agent()
    notes.write_memory(master, "- Lan thích trà\n")
    notes.write_memory(master, "- Lan thích cà phê\n")
    sign_in(tab)
    tab.goto(f"/manage/memory/agents/{master.pk}/memory/")
    tab.click("a:has-text('History')")
    rows = tab.locator("table.versions tbody tr")
    assert rows.count() == 2  # the first write made the file (SPEC §1), then the edit
    assert "v2" in rows.nth(0).inner_text()
    shot(tab, screenshots, "19-history")

    assert rows.nth(0).locator("a:has-text('Restore')").count() == 0  # the current text
    rows.nth(1).locator("a:has-text('Restore')").click()
    # Asked first, with what it will change.
    assert "Restore version 1?" in tab.inner_text("h1")
    assert "- Lan thích trà" in tab.inner_text(".diff")
    tab.click("button:has-text('Restore version 1')")
    tab.wait_for_selector(".message.success")
    assert "restored as version 3" in tab.inner_text(".message.success")
    assert (workspace / "MEMORY.md").read_text() == "- Lan thích trà\n"
    assert "restore of version 1" in tab.locator("table.versions tbody tr").nth(0).inner_text()


def test_a_rewrite_is_applied_hunk_by_hunk(tab, owner, workspace, screenshots):
    master = default_agent()
    notes.write_memory(master, OLD)
    proposal = actions.propose(
        "memory_rewrite", agent=master, target="MEMORY.md", payload={"memory": NEW}, source="job:c"
    )
    sign_in(tab)
    tab.goto(f"/manage/memory/proposals/{proposal.pk}/")
    boxes = tab.locator("input[name=hunk]")
    assert boxes.count() == 2
    boxes.nth(1).uncheck()
    shot(tab, screenshots, "20-partial-rewrite")
    tab.click("button:has-text('Apply the kept changes')")
    tab.wait_for_selector(".message.success")
    assert (workspace / "MEMORY.md").read_text() == OLD.replace("- fact 1\n", "- fact one\n")
    assert Proposal.objects.get(pk=proposal.pk).status == "approved"


class Pages(BaseKind):
    name = "test_browser_pages"
    batch = True

    def changes(self, *, agent, payload):
        return {f"memory/wiki/{slug}.md": text for slug, text in payload["pages"].items()}


def test_a_batch_is_applied_page_by_page(tab, owner, workspace):
    master = default_agent()
    register_kind(Pages())
    try:
        proposal = actions.propose(
            "test_browser_pages",
            agent=master,
            target="memory/wiki",
            payload={"pages": {"a": "A\n", "b": "B\n"}},
            source="job:compile",
        )
        sign_in(tab)
        tab.goto(f"/manage/memory/proposals/{proposal.pk}/")
        tab.locator("input[name=page][value='memory/wiki/b.md']").uncheck()
        tab.click("button:has-text('Apply the checked pages')")
        tab.wait_for_selector(".message.success")
    finally:
        actions._KINDS.pop("test_browser_pages", None)
    assert (workspace / "memory/wiki/a.md").read_text() == "A\n"
    assert not (workspace / "memory/wiki/b.md").exists()


def test_bulk_approval_reports_each_refusal(tab, owner, workspace, screenshots):
    master = default_agent()
    _, one = add_memory_lines_or_propose(master, ["Lan chạy bộ lúc 6 giờ"], source="job:a")
    _, two = add_memory_lines_or_propose(master, ["Lan bơi chủ nhật"], source="job:b")
    three = write_memory_or_propose(master, "Lan đọc sách\n", source="job:c")
    _, four = add_memory_lines_or_propose(master, ["Lan học vẽ"], source="job:d")
    actions.reject(four, by="lan")
    sign_in(tab)
    assert "3 proposals wait for you." in tab.inner_text("#pending-banner")
    tab.goto("/manage/memory/proposals/")
    shot(tab, screenshots, "21-bulk-queue")
    for proposal in (one, two):
        tab.check(f"input[name=ids][value='{proposal.pk}']")
    tab.evaluate(
        f"""() => {{ const box = document.createElement('input'); box.type = 'hidden';
        box.name = 'ids'; box.value = '{four.pk}'; box.setAttribute('form', 'bulk-form');
        document.body.appendChild(box); }}"""
    )
    tab.click("button:has-text('Approve selected')")
    tab.wait_for_selector(".message.success")
    # Lines stack: both apply, each to the file as the one before left it; the rewrite,
    # based on the text they changed, is superseded and named; the decided one is refused.
    messages = tab.inner_text(".messages")
    assert f"2 proposals approved: #{one.pk}, #{two.pk}." in messages
    assert f"Superseded: #{three.pk}" in messages
    assert f"#{four.pk} not decided" in messages
    assert Proposal.objects.get(pk=three.pk).status == "superseded"
    assert (workspace / "MEMORY.md").read_text() == "Lan chạy bộ lúc 6 giờ\nLan bơi chủ nhật\n"
