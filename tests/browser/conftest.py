"""Browser tests: Playwright driving Debian's Chromium against pytest-django's live_server.

Playwright's sync API runs an event loop in the test thread, which makes Django refuse
ORM calls from it unless told that this is deliberate."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = "/usr/bin/chromium"
DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def chromium_browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium (CI's .ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def tab(chromium_browser, live_server, workspace, transactional_db):
    """A fresh browser context (no cookies) on a page, English, 1280 wide. Dialogs
    (the confirm() before forget/delete) are accepted."""
    context = chromium_browser.new_context(
        viewport={"width": 1280, "height": 900}, locale="en-US", base_url=live_server.url
    )
    page = context.new_page()
    page.set_default_timeout(15000)
    page.on("dialog", lambda dialog: dialog.accept())
    yield page
    context.close()


@pytest.fixture
def owner(transactional_db):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_superuser("lan", "lan@example.com", "mật-khẩu-dài-1")


def sign_in(page, username="lan", password="mật-khẩu-dài-1") -> None:
    page.goto("/manage/memory/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]:has-text('Sign in')")
    page.wait_for_url("**/manage/memory/")


@pytest.fixture
def screenshots(tmp_path) -> Path:
    """Where screenshots go: docs/screenshots/ with SAVE_SCREENSHOTS=1 (to refresh the
    committed ones), else a temporary directory, so `make test` leaves the tree clean."""
    if os.environ.get("SAVE_SCREENSHOTS") == "1":
        return DOCS_SCREENSHOTS
    return tmp_path / "screenshots"


def shot(page, directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
