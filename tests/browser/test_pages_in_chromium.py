"""The management pages in a real browser (SPEC §15): sign in, the live count, approve and
undo with the badge, following a [[link]], the Scripts tab by its address."""

from __future__ import annotations

import pytest

from memory import scripts
from memory.agents import default_agent
from memory.models import Agent
from memory.writes import save_fact_or_propose
from proposals.models import Proposal

from .conftest import sign_in

pytestmark = pytest.mark.browser


def badge(page) -> str:
    return page.inner_text("#pending-badge").strip()


def test_it_signs_in_and_counts_user_md_live(tab, owner, workspace):
    tab.goto("/manage/memory/agent/")
    assert "/manage/memory/login/" in tab.url
    sign_in(tab)
    assert tab.inner_text("h1").startswith("USER.md")  # then the file it is

    tab.fill("#user-body", "Tôi là Lan, kế toán ở Đà Nẵng.")
    counter = tab.locator('[data-counter-for="user-body"]')
    assert counter.locator(".count").inner_text() == "30"
    assert not counter.locator(".warning").is_visible()

    tab.fill("#user-body", "đ" * 4001)
    assert counter.locator(".count").inner_text() == "4001"
    assert counter.locator(".warning").is_visible()
    assert "over" in counter.get_attribute("class")

    text = "Tôi là Lan.\nThích câu trả lời ngắn."
    tab.fill("#user-body", text)
    tab.click("button:has-text('Save USER.md')")
    tab.wait_for_selector(".message.success")
    assert tab.inner_text(".message.success") == "USER.md saved."
    assert (workspace / "users/owner/USER.md").read_text() == text
    # After the reload the count is the server's: the same 35 characters.
    assert counter.locator(".count").inner_text() == str(len(text)) == "35"


def test_it_approves_a_proposal_the_badge_goes_down_and_undo_restores(tab, owner, workspace):
    default_agent()
    _, proposal = save_fact_or_propose(
        "coffee",
        description="Uống cà phê đen, không đường",
        type="preference",
        body="Trước 9 giờ sáng.",
        source="job:nightly",
        written_by="master",
    )
    sign_in(tab)
    assert badge(tab) == "1"
    tab.click(".badge-link")
    tab.wait_for_url("**/manage/memory/proposals/")
    tab.click(f"#row-{proposal.pk} a.open-link")  # the queue's row opens the card in place
    tab.wait_for_selector(f"#card-{proposal.pk}")
    card = tab.locator(f"#proposal-{proposal.pk}")
    # A new fact reads as its fields, then its body as added lines.
    assert (
        card.locator("dl.field-changes dd").first.inner_text() == "— → Uống cà phê đen, không đường"
    )
    assert "+Trước 9 giờ sáng." in card.inner_text()

    card.locator("button:has-text('Approve')").first.click()
    tab.wait_for_selector(".message.success")
    assert tab.inner_text(".message.success") == f"Proposal {proposal.pk} approved."
    assert badge(tab) == "0"
    assert (workspace / "users/owner/facts/coffee.md").exists()

    tab.locator("table.history button:has-text('Undo')").click()
    tab.wait_for_selector(".message.success")
    assert tab.inner_text(".message.success") == f"Proposal {proposal.pk} undone."
    assert not (workspace / "users/owner/facts/coffee.md").exists()
    assert Proposal.objects.get(pk=proposal.pk).undone_by == "lan"


def test_it_opens_a_wiki_page_and_follows_a_link(tab, owner, workspace):
    from wiki import pages as wiki_pages

    master = default_agent()
    wiki_pages.save_page(
        master,
        title="Eco Retreat",
        kind="entity",
        sources=["note:2026-11-28"],
        body="Hạn nộp 15/12. Ngân sách gửi [[Minh|anh Minh]].",
    )
    wiki_pages.save_page(
        master, title="Minh", kind="entity", sources=["note:2026-11-29"], body="Quản lý của Lan."
    )
    sign_in(tab)
    tab.click("nav.tabs a:has-text('Wiki')")
    tab.wait_for_url("**/manage/memory/wiki/master/")
    tab.click("a:has-text('Eco Retreat')")
    tab.wait_for_url("**/manage/memory/wiki/master/pages/entities/eco-retreat/")
    assert "Hạn nộp 15/12." in tab.inner_text("article.rendered")
    tab.click("article.rendered a:has-text('anh Minh')")
    tab.wait_for_url("**/manage/memory/wiki/master/pages/entities/minh/")
    assert tab.inner_text("h1").startswith("Minh")
    assert "Eco Retreat" in tab.inner_text("aside")  # linked from


def test_it_opens_the_scripts_tab_by_its_address_and_keeps_the_agent(tab, owner, workspace):
    helper = Agent.objects.create(id="helper", name="Helper")
    scripts.store(helper, "schedule", "morning-bulletin", "last_sent", "2026-11-30")
    scripts.store(helper, "conversation", "tg-42", "draft", {"title": "Sách"})
    sign_in(tab)
    tab.goto("/manage/memory/scripts/helper")
    assert tab.inner_text("h1") == "Script store of Helper"
    assert "morning-bulletin" in tab.inner_text("main")
    assert "tg-42" in tab.inner_text("main")
    tab.click("nav.tabs a:has-text('Wiki')")
    tab.wait_for_url("**/manage/memory/wiki/helper/")
    tab.click("nav.tabs a:has-text('Agent screen')")
    tab.wait_for_url("**/manage/memory/agents/helper/")
    tab.click("nav.tabs a:has-text('Scripts')")
    tab.wait_for_url("**/manage/memory/scripts/helper")
    tab.locator("button:has-text('Delete')").first.click()
    tab.wait_for_selector(".message.success")
    assert "Deleted schedule morning-bulletin: last_sent." in tab.inner_text(".message.success")
