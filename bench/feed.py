"""Benchmark of the feed of what was remembered (SPEC §7, memory.feed), in a temporary
workspace and SQLite database:

- **10,000 versions** written through the app itself: agents saving notes and facts in a
  conversation (attended, in the feed), jobs' lines approved by the owner (in the feed),
  and the owner's own edits of MEMORY.md (not in the feed); their times spread over 30 days;
- **the feed page** (`/manage/memory/activity/writes/`: 20 writes with their diffs), whole,
  for one agent, for one kind and for one day; the API's first page (`limit=50`, diffs
  included); one revert;
- **the reference, same run:** Activity's runs page (a plain list page of the same layout)
  and the feed's query (count + one page) with its two indexes dropped — what the index
  saves as history grows.

Run: `.venv/bin/python bench/feed.py` (options: --versions, --runs). Other load on the
machine shows in the absolute numbers; ratios are from the same run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/http.py would shadow the standard library's http (Django imports it): this folder is
# not a place to import from.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
TARGET_MS = 300  # the feed page, server time, at 10,000 versions


def setup(tmp: Path) -> None:
    home = tmp / "home"
    home.mkdir()
    os.environ["MY_AGENT_HOME"] = str(home)
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def timed(func, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


WORDS = "Lan chạy bộ 5 km họp Minh ngân sách Eco Retreat trà xanh sách đọc Đà Nẵng".split()


def line(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 12)))


def write_history(versions: int, rng: random.Random) -> dict[str, int]:
    """`versions` file versions through the operations, as a month of use would leave."""
    from memory import notes
    from memory.agents import default_agent
    from memory.attribution import attributed
    from memory.models import Agent, FileVersion
    from memory.tools import call_tool_result
    from memory.writes import add_memory_lines_or_propose
    from proposals import actions

    master = default_agent()
    helper = Agent.objects.create(id="helper", name="Helper")
    made = {"attended notes": 0, "attended facts": 0, "approved lines": 0, "owner edits": 0}
    start = time.perf_counter()
    day0 = dt.datetime(2026, 11, 1, 8, 0, tzinfo=dt.UTC)
    n = 0
    while FileVersion.objects.count() < versions:
        n += 1
        roll = rng.random()
        agent = master if rng.random() < 0.7 else helper
        moment = day0 + dt.timedelta(minutes=n * 4)  # ~30 days at 10,000 versions
        if roll < 0.55:
            # What the memory_save tool does, on the day of `moment` (a month of notes).
            with attributed(actor=f"agent:{agent.pk}", source="telegram", via="tool"):
                notes.memory_save(agent, line(rng), now=moment)
            made["attended notes"] += 1
        elif roll < 0.65:
            call_tool_result(
                agent,
                "user_memory_save",
                {
                    "name": f"fact-{rng.randrange(40)}",
                    "description": line(rng)[:200],
                    "type": "preference",
                    "body": line(rng),
                },
                source="telegram",
            )
            made["attended facts"] += 1
        elif roll < 0.75:
            _, proposal = add_memory_lines_or_propose(agent, [line(rng)], source="job:nightly")
            with attributed(actor="owner", via="pages"):
                actions.approve(proposal, by="owner")
            made["approved lines"] += 1
        else:
            with attributed(actor="owner", source="web", via="pages"):
                text = notes.read_memory(agent) or ""
                notes.write_memory(agent, text + f"- {line(rng)}\n")
            made["owner edits"] += 1
    print(f"wrote {FileVersion.objects.count()} versions in {time.perf_counter() - start:.0f} s:")
    print("  " + ", ".join(f"{k} {v}" for k, v in made.items()))
    return made


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--versions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(21)
    with tempfile.TemporaryDirectory() as tmp:
        setup(Path(tmp))
        from django.contrib.auth import get_user_model
        from django.db import connection
        from django.test import Client

        from memory import feed
        from memory.models import FileVersion

        write_history(args.versions, rng)
        # Spread the versions over 30 days, oldest first, as a month of use would.
        rows = list(FileVersion.objects.order_by("id").values_list("id", flat=True))
        end = dt.datetime(2026, 12, 1, 20, 0, tzinfo=dt.UTC)
        step = dt.timedelta(days=30) / max(1, len(rows))
        with connection.cursor() as cursor:
            cursor.executemany(
                "UPDATE memory_fileversion SET created_at = %s WHERE id = %s",
                [(end - step * (len(rows) - i), pk) for i, pk in enumerate(rows)],
            )
        total = FileVersion.objects.count()
        in_feed = FileVersion.objects.filter(in_feed=True).count()
        print(f"versions: {total}, in the feed: {in_feed}")

        owner = get_user_model().objects.create_superuser("owner", "", "pw-owner-123")
        client = Client()
        client.force_login(owner)
        url = "/manage/memory/activity/writes/"
        day = (end - dt.timedelta(days=3)).date().isoformat()
        cases = [
            ("feed page, everything", {}),
            ("feed page, one agent", {"agent": "helper"}),
            ("feed page, one kind (facts)", {"kind": "fact"}),
            ("feed page, one day", {"day": day}),
        ]
        for name, params in cases:
            response = client.get(url, params)
            assert response.status_code == 200, response.status_code
            assert response.content.count(b'class="card write"') == min(
                20, feed.writes(feed.parse_filters(**params)).count()
            )
            ms = timed(lambda p=params: client.get(url, p), args.runs) * 1000
            print(f"{name}: {ms:.0f} ms (median of {args.runs}; target < {TARGET_MS} ms)")
        api = timed(lambda: client.get("/api/memory/activity/writes", {"limit": 50}), args.runs)
        print(f"API, first page of 50 with diffs: {api * 1000:.0f} ms")
        runs_page = timed(lambda: client.get("/manage/memory/activity/"), args.runs)
        full = timed(lambda: client.get(url), args.runs)
        print(
            f"reference, Activity's runs page: {runs_page * 1000:.0f} ms "
            f"(feed page / runs page: {full / runs_page:.1f}×)"
        )

        def query() -> None:
            rows = feed.writes()
            rows.count()
            list(rows[:20])

        with_index = timed(query, args.runs)
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX version_feed_time")
            cursor.execute("DROP INDEX version_feed_agent")
        without = timed(query, args.runs)
        print(
            f"feed query (count + 20 rows): {with_index * 1000:.1f} ms with its index, "
            f"{without * 1000:.1f} ms without ({without / with_index:.1f}×)"
        )
        newest = feed.writes().first()
        start = time.perf_counter()
        feed.revert(newest, by="owner", via="bench")
        print(f"one revert: {(time.perf_counter() - start) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
