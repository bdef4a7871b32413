"""Page weight and render time of the management pages with 1,000 items (SPEC §15).

In a temporary workspace and SQLite database: 1,000 daily notes of the master agent and
1,000 pending proposals (lines for MEMORY.md, as a job proposes them). Then, for the notes
page (`/manage/memory/agents/master/memory/`) and the proposals page
(`/manage/memory/proposals/`):

- server render time (Django test client, median of --runs) and HTML size;
- in Chromium (Debian's, headless) against a local server: time to the load event, the
  bytes transferred (HTML, CSS, JS, fonts) and the page's height in pixels.

Run: `.venv/bin/python bench/pages.py` (options: --items, --runs). Needs /usr/bin/chromium
for the browser figures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
PAGES = {
    "notes": "/manage/memory/agents/master/memory/",
    "proposals": "/manage/memory/proposals/",
}


def setup(base: Path) -> None:
    home = base / "home"
    home.mkdir()
    os.environ["MY_AGENT_HOME"] = str(home)
    os.environ["DATABASE_URL"] = f"sqlite:///{base / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    os.environ["ALLOWED_HOSTS"] = "127.0.0.1,localhost,testserver"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def fill(items: int) -> None:
    from django.contrib.auth import get_user_model

    from memory import clock, notes
    from memory.agents import default_agent
    from memory.writes import add_memory_lines_or_propose

    get_user_model().objects.create_superuser("bench", "", "bench-password-1")
    master = default_agent()
    today = clock.today()
    for n in range(items):
        day = (today - dt.timedelta(days=n)).isoformat()
        notes.write_note(
            master, day, f"# {day}\n\n- 08:00 Chạy bộ {n % 9 + 2} km, ghi chú số {n}.\n"
        )
    notes.write_memory(master, "- Lan lives in Đà Nẵng.\n")
    for n in range(items):
        add_memory_lines_or_propose(
            master, [f"Dòng bền vững số {n}: báo cáo gửi anh Minh. ({today})"], source="job:bench"
        )


def server_times(runs: int) -> dict:
    from django.test import Client

    client = Client()
    client.login(username="bench", password="bench-password-1")
    figures = {}
    for name, url in PAGES.items():
        client.get(url)  # warm
        times, size = [], 0
        for _ in range(runs):
            start = time.perf_counter()
            response = client.get(url)
            times.append(time.perf_counter() - start)
            size = len(response.content)
            assert response.status_code == 200, response.status_code
        figures[name] = {"median_ms": statistics.median(times) * 1000, "html_bytes": size}
    return figures


def browser_times(runs: int) -> dict:
    if not os.path.exists(CHROMIUM):
        return {}
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application
    from playwright.sync_api import sync_playwright

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), Quiet)
    server.set_app(StaticFilesHandler(get_wsgi_application()))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    figures = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900}, base_url=base)
        page.goto("/manage/memory/login/")
        page.fill("#id_username", "bench")
        page.fill("#id_password", "bench-password-1")
        page.click("form.stack button[type=submit]")
        page.wait_for_url("**/manage/memory/")
        for name, url in PAGES.items():
            loads, transferred, height = [], 0, 0
            for run in range(runs + 1):
                page.goto(url, wait_until="load")
                timing = page.evaluate(
                    """() => {
                      const nav = performance.getEntriesByType('navigation')[0];
                      const all = [nav, ...performance.getEntriesByType('resource')];
                      return {load: nav.loadEventEnd - nav.startTime,
                              bytes: all.reduce((s, e) => s + (e.encodedBodySize || 0), 0),
                              height: document.documentElement.scrollHeight};
                    }"""
                )
                if run:  # the first visit fills the cache of CSS, JS and fonts
                    loads.append(timing["load"])
                if run == 0:
                    transferred = timing["bytes"]
                height = timing["height"]
            figures[name] = {
                "load_ms": statistics.median(loads),
                "first_visit_bytes": transferred,
                "height_px": height,
            }
        browser.close()
    server.shutdown()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-pages-") as tmp:
        setup(Path(tmp))
        started = time.perf_counter()
        fill(args.items)
        print(
            f"{args.items} notes and {args.items} pending proposals written in "
            f"{time.perf_counter() - started:.1f} s"
        )
        server = server_times(args.runs)
        browser = browser_times(max(3, args.runs // 3))
        for name in PAGES:
            line = (
                f"{name:10s} server {server[name]['median_ms']:7.1f} ms  "
                f"HTML {server[name]['html_bytes'] / 1024:6.1f} KiB"
            )
            if name in browser:
                b = browser[name]
                line += (
                    f"  | Chromium load {b['load_ms']:6.1f} ms, first visit "
                    f"{b['first_visit_bytes'] / 1024:6.1f} KiB, {b['height_px']} px tall"
                )
            print(line)


if __name__ == "__main__":
    main()
