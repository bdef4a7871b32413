"""The triage queue, the feed of what was remembered and Settings → Notifications in a
real Chromium (SPEC §7, §15): keys that move, approve and announce; the card opened in
place; at 390 px a short header, the first Approve on the first screen and the decide bar
in reach; a revert from the feed; axe-core finds no serious or critical violation. With
SAVE_SCREENSHOTS=1 the screenshots go to docs/screenshots/ (22–25)."""

from __future__ import annotations

import pytest

from memory.models import Agent, FileVersion
from memory.tools import call_tool_result
from memory.writes import add_memory_lines_or_propose
from proposals.models import Proposal

from .conftest import shot, sign_in
from .test_every_screen import _axe, _axe_source, sign_in_in

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


def _queue(workspace) -> list[Proposal]:
    """Six pending proposals over three agents' files, and writes for the feed."""
    from memory import facts
    from memory.agents import default_agent

    agents = [default_agent()]
    for agent_id, name in (("researcher", "Researcher"), ("coach", "Coach")):
        agents.append(Agent.objects.create(id=agent_id, name=name))
    made = []
    lines = [
        ("master", "Báo cáo tài chính gửi anh Minh mỗi thứ Năm trước 17:00.", "job:nightly"),
        ("researcher", "3 eco-tourism grant programmes in Quảng Nam: deadlines 15/12.", "job:scan"),
        ("coach", "Chạy bộ thứ Ba và thứ Năm, 5 km.", "job:weekly"),
        ("master", "Morning bulletin moves to 06:45 on weekdays.", "job:nightly"),
        ("researcher", "Minh reviews the budget draft v2 on Friday.", "job:scan"),
        ("coach", "Huyết áp mục tiêu dưới 130/85.", "job:weekly"),
    ]
    by_id = {agent.pk: agent for agent in agents}
    for agent_id, line, source in lines:
        made.append(add_memory_lines_or_propose(by_id[agent_id], [line], source=source)[1])
    call_tool_result(
        by_id["master"], "memory_save", {"text": "Lan chạy bộ 5.2 km"}, source="telegram"
    )
    call_tool_result(
        by_id["master"],
        "user_memory_save",
        {
            "name": "tea",
            "description": "Uống trà xanh buổi chiều",
            "type": "preference",
            "body": "Trà.",
        },
        source="telegram",
    )
    assert facts.get_fact("tea") is not None
    return made


def _phone(chromium_browser, live_server, language: str = "vi"):
    context = chromium_browser.new_context(
        viewport=PHONE,
        locale="vi-VN" if language == "vi" else "en-US",
        extra_http_headers={"Accept-Language": language},
        base_url=live_server.url,
        bypass_csp=True,
    )
    page = context.new_page()
    page.set_default_timeout(15000)
    sign_in_in(page, language)
    return context, page


def _no_serious(page, source: str) -> None:
    violations = _axe(page, source)
    assert violations == [], violations


def test_the_queue_moves_approves_and_announces_with_keys(
    chromium_browser, live_server, owner, workspace, screenshots
):
    source = _axe_source()
    made = _queue(workspace)
    context = chromium_browser.new_context(
        viewport={"width": 1280, "height": 900}, base_url=live_server.url, bypass_csp=True
    )
    tab = context.new_page()
    tab.set_default_timeout(15000)
    sign_in(tab)
    tab.goto("/manage/memory/proposals/")
    assert tab.is_visible("#keys-hint")  # the script shows the keys it makes work
    assert "1–6 of 6" in tab.inner_text(".pager-count >> nth=0")
    shot(tab, screenshots, "22-queue-en-1280")
    _no_serious(tab, source)

    tab.keyboard.press("j")
    assert tab.get_attribute(f"#row-{made[0].pk}", "class").endswith("current")
    tab.keyboard.press("j")
    announced = tab.inner_text("#queue-announce")
    assert announced.startswith(f"#{made[1].pk} Add lines to MEMORY.md") and "(2/6)" in announced
    tab.keyboard.press("k")
    assert "(1/6)" in tab.inner_text("#queue-announce")
    tab.keyboard.press("?")
    assert tab.is_visible("#keys-help")
    tab.keyboard.press("Escape")
    assert not tab.is_visible("#keys-help")

    tab.keyboard.press("a")  # approve the first: the next one becomes current
    tab.wait_for_selector(".message.success")
    assert f"Proposal {made[0].pk} approved." in tab.inner_text(".messages")
    assert Proposal.objects.get(pk=made[0].pk).status == "approved"
    assert "current" in tab.get_attribute(f"#row-{made[1].pk}", "class")
    tab.keyboard.press("r")
    tab.wait_for_selector(".message.success")
    assert Proposal.objects.get(pk=made[1].pk).status == "rejected"

    tab.click("#select-page")
    rows = tab.locator("tr.queue-row").count()
    assert rows >= 3 and tab.locator("input[name=ids]:checked").count() == rows
    tab.keyboard.press("o")  # the full card opens in place, under its row
    tab.wait_for_selector(f"#card-{made[2].pk}")
    assert tab.is_visible(f"#proposal-{made[2].pk}")
    following = tab.get_attribute(f"#row-{made[2].pk} ~ tr.queue-row", "data-id")
    tab.click(f"#card-{made[2].pk} .decide-bar button:has-text('Approve & next')")
    tab.wait_for_selector(f"#card-{following}")  # the next one opened in its place
    assert Proposal.objects.get(pk=made[2].pk).status == "approved"
    context.close()


def test_at_390_px_the_header_is_short_and_approve_stays_in_reach(
    chromium_browser, live_server, owner, workspace, screenshots
):
    source = _axe_source()
    made = _queue(workspace)
    context, page = _phone(chromium_browser, live_server)
    page.goto("/manage/memory/proposals/")
    screenshots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshots / "22-queue-vi-390-first-screen.png"))  # as seen
    header = page.locator("header.top").bounding_box()
    assert header["height"] <= 100, header
    first = page.locator(f"#row-{made[0].pk} button[data-key=a]").bounding_box()
    assert first["y"] + first["height"] <= PHONE["height"], first  # on the first screen
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, screenshots, "22-queue-vi-390")
    _no_serious(page, source)

    page.click(f"#row-{made[0].pk} a.open-link")
    page.wait_for_selector(f"#card-{made[0].pk}")
    page.evaluate(
        f"window.scrollTo(0, document.querySelector('#card-{made[0].pk}').offsetTop + 200)"
    )
    bar = page.locator(f"#card-{made[0].pk} .decide-bar").bounding_box()
    assert 0 <= bar["y"] and bar["y"] + bar["height"] <= PHONE["height"] + 1, bar  # sticky
    page.screenshot(path=str(screenshots / "23-queue-card-vi-390.png"))
    _no_serious(page, source)
    page.click("summary:has-text('Menu')")
    assert page.is_visible("header .top-menu button:has-text('Đăng xuất')")
    context.close()


def test_the_feed_shows_diffs_and_reverts_in_one_click(
    chromium_browser, live_server, owner, workspace, screenshots
):
    source = _axe_source()
    made = _queue(workspace)
    from proposals import actions

    actions.approve(made[0], by="lan")
    context = chromium_browser.new_context(
        viewport={"width": 1280, "height": 900}, base_url=live_server.url, bypass_csp=True
    )
    tab = context.new_page()
    sign_in(tab)
    tab.goto("/manage/memory/agents/master/")
    tab.click("#agent-remembered")
    tab.wait_for_url("**/activity/writes/?agent=master")
    # master's note, its fact and its approved lines (INDEX.md is generated: not listed)
    assert "This week your assistants wrote 3 things." in tab.inner_text("#this-week")
    tab.goto("/manage/memory/activity/writes/")
    shot(tab, screenshots, "24-feed-en-1280")
    _no_serious(tab, source)
    newest = FileVersion.objects.filter(in_feed=True).order_by("-id").first()
    tab.click(f"#write-{newest.pk} button:has-text('Revert')")
    tab.wait_for_selector(".message.success")
    assert "Reverted:" in tab.inner_text(".messages")
    assert "Reverted (version" in tab.inner_text(f"#write-{newest.pk}")
    context.close()

    context, page = _phone(chromium_browser, live_server)
    page.goto("/manage/memory/activity/writes/")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, screenshots, "24-feed-vi-390")
    _no_serious(page, source)
    context.close()


def test_notifications_in_settings(
    chromium_browser, live_server, owner, workspace, screenshots, settings
):
    from memory.models import Delivery

    source = _axe_source()
    settings.MEMORY_NOTIFY_EMAIL = "lan@example.com"
    settings.MEMORY_NOTIFY_WEBHOOK_URL = "https://ntfy.example/memory-lan"
    settings.MEMORY_NOTIFY_WEBHOOK_FORMAT = "text"
    Delivery.objects.create(
        channel="email",
        what="digest",
        target="lan@example.com",
        payload_format="text",
        ok=True,
        result="sent",
    )
    Delivery.objects.create(
        channel="webhook",
        what="test",
        target="https://ntfy.example",
        payload_format="text",
        ok=False,
        attempts=3,
        by="lan",
        result="failed after 3 attempt(s): ConnectError: no route",
    )
    for language, viewport, name in (
        ("en", {"width": 1280, "height": 900}, "25-notifications-en-1280"),
        ("vi", PHONE, "25-notifications-vi-390"),
    ):
        context = chromium_browser.new_context(
            viewport=viewport,
            extra_http_headers={"Accept-Language": language},
            base_url=live_server.url,
            bypass_csp=True,
        )
        page = context.new_page()
        sign_in_in(page, language)
        page.goto("/manage/memory/settings/master/#notifications")
        section = page.locator("#notifications")
        assert section.locator("tr.delivery-failed").count() == 1
        screenshots.mkdir(parents=True, exist_ok=True)
        section.screenshot(path=str(screenshots / f"{name}.png"))
        _no_serious(page, source)
        context.close()
