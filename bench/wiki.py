"""Benchmark of the wiki vault's rebuild (SPEC §10.3, §10.6).

Builds a vault of 5,000 pages with 20,000 `[[links]]` (four per page, ~1% to pages that do
not exist; Vietnamese and English text, frontmatter with sources, questions, dates of which
some are stale) in a temporary workspace, then times:

- the first build: every page gets its machine block (5,000 files written) — shown for
  information;
- a **full pass** with a cold cache (as in a fresh process): list and read every page,
  parse it, rebuild the graph, compare every machine block, lint, regenerate both reports.
  Target < 2 s;
- the same pass with a warm cache;
- a **one-page edit** (`save_page` changing a page's links): write the page, rebuild the
  graph, rewrite the blocks that changed (the pages that gained or lost a backlink),
  lint and regenerate the reports. Target < 200 ms.

Run: `.venv/bin/python bench/wiki.py` (options: --pages, --links, --runs, --keep). The
vault's files are written as a person's files would be (plain files): they stand for a
vault that already exists, not for writes under test.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ holds http.py: its folder goes last on the path, so the standard library's http
# package (which Django imports) is never this benchmark.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time

from memory import clock

ROOT = Path(__file__).resolve().parent.parent

WORDS = (
    "sách đang đọc bệnh viện Hồ Chí Minh phở bò Đức Nguyễn Văn An họp với khách hàng hạn chót "
    "dự án nhà hàng chay Đà Nẵng Hà Nội bảo hiểm y tế the meeting notes project deadline "
    "coffee with Anna contract signed invoice eco retreat budget travel flight hotel booking"
).split()

FULL_TARGET = 2.0
EDIT_TARGET = 0.200


def setup_django(home: Path) -> None:
    os.environ["MY_AGENT_HOME"] = str(home)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def build_vault(home: Path, count: int, links: int, rng: random.Random) -> None:
    import datetime as dt

    today = clock.today()
    folders = ("entities", "concepts", "syntheses")
    kinds = ("entity", "concept", "synthesis")
    per_page = links // count
    for folder in folders:
        (home / "memory" / "wiki" / folder).mkdir(parents=True, exist_ok=True)
    for index in range(count):
        folder, kind = folders[index % 3], kinds[index % 3]
        targets = []
        for _ in range(per_page):
            if rng.random() < 0.01:
                targets.append(f"[[Missing {rng.randrange(count)}]]")
            else:
                targets.append(f"[[Page {rng.randrange(count)}]]")
        updated = (today - dt.timedelta(days=rng.randrange(200))).isoformat()
        body = "\n\n".join(
            " ".join(rng.choice(WORDS) for _ in range(40)) + f" {target}." for target in targets
        )
        questions = "questions:\n- Còn hạn không?\n" if index % 10 == 0 else "questions: []\n"
        status = "review" if index % 50 == 0 else "ok"
        source = f"note:2026-11-{1 + index % 28:02d}"
        text = (
            f"---\ntitle: Page {index}\nkind: {kind}\nsources:\n- {source}\n"
            f"{questions}status: {status}\nupdated: '{updated}'\n---\n\n{body}\n"
        )
        (home / "memory" / "wiki" / folder / f"page-{index}.md").write_text(text, "utf-8")


def timed(func) -> tuple[float, object]:
    start = time.perf_counter()
    result = func()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--links", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="wiki-bench-")) / "home"
    home.mkdir()
    setup_django(home)
    from memory.models import Agent
    from wiki import graph, pages, vault

    agent = Agent(id="master", name="Master", is_default=True)  # not saved: no DB needed
    rng = random.Random(42)
    try:
        build_vault(home, args.pages, args.links, rng)
        first, refreshed = timed(lambda: pages.refresh(agent))
        links = sum(len(r.links) for r in refreshed.vault.pages.values())
        print(f"vault: {len(refreshed.vault.pages)} pages, {links} links, {home}")
        print(f"first build (writes {len(refreshed.written)} files): {first:.2f} s")
        time.sleep(vault.RACY_SECONDS + 0.1)  # the pages are no longer "racily clean"

        cold = []
        for _ in range(args.runs):
            vault.clear_cache()  # as in a fresh process: nothing parsed, no graph known
            graph.forget_verified()
            seconds, result = timed(lambda: pages.refresh(agent))
            assert result.written == [], result.written[:3]
            cold.append(seconds)
        warm = [timed(lambda: pages.refresh(agent))[0] for _ in range(args.runs)]

        edits = []
        for run in range(args.runs):
            index = rng.randrange(args.pages)
            page = pages.get_page(agent, f"page-{index}")
            new_body = page.body.replace("[[Page ", "[[Page 1", 1) + f"\n\nEdit {run}: [[Page 7]]."
            seconds, saved = timed(
                lambda page=page, new_body=new_body: pages.save_page(
                    agent,
                    slug=page.slug,
                    body=new_body,
                    partial=True,
                )
            )
            assert saved.body.endswith(f"Edit {run}: [[Page 7]].")
            edits.append(seconds)

        def row(name: str, values: list[float], target: float | None) -> None:
            median = statistics.median(values)
            ratio = f"  {median / target:.2f}× target ({target * 1000:.0f} ms)" if target else ""
            print(
                f"{name:<34} median {median * 1000:8.1f} ms   max {max(values) * 1000:8.1f} ms"
                f"{ratio}"
            )

        print(f"{'':<34} ({args.runs} runs each)")
        row("full pass, cold cache", cold, FULL_TARGET)
        row("full pass, warm (nothing changed)", warm, None)
        row("one-page edit (save + rebuild)", edits, EDIT_TARGET)
    finally:
        if args.keep:
            print(f"kept: {home}")
        else:
            shutil.rmtree(home.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
