"""Benchmark: one agent's planted file cannot make search slow for the others (SPEC §6.1,
the search's budget).

Builds a workspace in a temporary directory with two agents — alpha (the default agent)
and beta, each with `--days` daily notes — and times alpha's searches (a dozen queries,
`--runs` times each), before and after beta plants a file of `--planted` (30,000) words
sharing a substring with one of alpha's words: alone, and while a thread searches beta's
memory for that substring over and over (the attacker keeping the server busy — before the
plant the same searches, over beta's ordinary notes). Prints alpha's p95 before and after
the plant and their ratio (target: at most 2×), and the median of beta's own searches.

Run: `.venv/bin/python bench/search_isolation.py` (options: --days, --planted, --runs,
--keep). Compare two revisions by running each tree's copy of this file: it imports the
app from the tree it sits in.
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
import threading
import time

ROOT = Path(__file__).resolve().parent.parent
WORDS = (
    "meeting deadline coffee blood pressure book review deploy server backup report budget "
    "travel flight hotel dentist school teacher garden harvest market price weather rain "
    "sách đọc bệnh viện phở họp khách hàng cà phê chợ rau huyết áp chạy bộ công viên"
).split()
QUERIES = [
    "xylophone lesson",  # shares "xylophone" with every planted word
    "xylophone",
    "dentist",
    "blood pressure",
    "coffee budget",
    "garden harvest",
    "sách đọc",
    "huyet ap",
    "flight hotel",
    "teacher school report",
    "market price rain",
    "deploy server backup",
]
SUBSTRING = "xylophone"


def build(home: Path, days: int) -> None:
    rng = random.Random(2026)
    for base in ("", "agents/beta"):
        notes = home / base / "memory"
        notes.mkdir(parents=True, exist_ok=True)
        for day in range(days):
            date = f"2025-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}"
            name = notes / f"{date}{'' if day < 336 else f'-{day}'}.md"
            lines = [f"# {date}", ""]
            for minute in range(25):
                words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
                lines.append(f"- {8 + minute // 4:02d}:{minute % 4 * 15:02d} {words}")
            if day % 40 == 0:
                lines.append("- 19:00 xylophone lesson with Minh")
            name.write_text("\n".join(lines) + "\n", encoding="utf-8")


def setup_django(home: Path, database: Path) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "memoryproject.settings"
    os.environ["MY_AGENT_HOME"] = str(home)
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def time_alpha(alpha, runs: int) -> list[float]:
    from memory import search

    seconds = []
    for _ in range(runs):
        for query in QUERIES:
            started = time.perf_counter()
            search.search(query, agent=alpha)
            seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=400, help="notes per agent")
    parser.add_argument("--planted", type=int, default=30_000, help="words in beta's file")
    parser.add_argument("--runs", type=int, default=20, help="runs of each of alpha's queries")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memory-bench-isolation-"))
    home = tmp / "home"
    home.mkdir()
    os.environ["MEMORY_SEARCH_DIR"] = str(tmp / "search-index")
    setup_django(home, tmp / "bench.sqlite3")
    try:
        run(args, home)
    finally:
        if args.keep:
            print(f"\nworkspace kept at {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, home: Path) -> None:
    from django.core.management import call_command

    from memory import search, search_index, workspace
    from memory.agents import default_agent
    from memory.models import Agent

    call_command("migrate", verbosity=0)
    build(home, args.days)
    alpha = default_agent()
    beta = Agent.objects.create(id="beta", name="Beta")
    search_index.build()
    search.search("warm", agent=alpha)  # opens the index in this thread

    quiet_before = time_alpha(alpha, args.runs)
    busy_before, beta_before = while_beta_searches(alpha, beta, args.runs)

    planted = "".join(f"- {SUBSTRING}{n:05d}q\n" for n in range(args.planted))
    started = time.perf_counter()
    workspace.write("agents/beta/memory/planted.md", planted)  # an app write: indexed next
    search.search(SUBSTRING, agent=beta)
    first = time.perf_counter() - started

    quiet_after = time_alpha(alpha, args.runs)
    busy_after, beta_after = while_beta_searches(alpha, beta, args.runs)

    print(f"alpha's searches: {len(QUERIES)} queries x {args.runs} runs; {args.days} notes")
    print("                                   before plant   with the plant   ratio")
    for label, before, after in (
        ("p95, alone", quiet_before, quiet_after),
        (f"p95, beta searching {SUBSTRING!r}", busy_before, busy_after),
    ):
        ratio = p95(after) / p95(before)
        print(
            f"  {label:<32} {p95(before) * 1000:9.1f} ms   {p95(after) * 1000:11.1f} ms"
            f"   {ratio:5.2f}x  (target: at most 2x)"
        )
    print(f"beta's planted file: {args.planted} words sharing {SUBSTRING!r}")
    print(f"  first search (indexing it)       {first * 1000:9.1f} ms")
    print(
        f"  beta's search of {SUBSTRING!r}: median {statistics.median(beta_before) * 1000:.1f} ms "
        f"before, {statistics.median(beta_after) * 1000:.1f} ms with the plant"
    )


def while_beta_searches(alpha, beta, runs: int) -> tuple[list[float], list[float]]:
    """Alpha's timings while a thread searches beta's memory for SUBSTRING over and over
    (a busy server); and that thread's timings."""
    from django.db import close_old_connections

    from memory import search

    stop = threading.Event()
    attacker: list[float] = []

    def attack() -> None:
        try:
            while not stop.is_set():
                began = time.perf_counter()
                search.search(SUBSTRING, agent=beta)
                attacker.append(time.perf_counter() - began)
        finally:
            close_old_connections()

    thread = threading.Thread(target=attack)
    thread.start()
    try:
        timings = time_alpha(alpha, runs)
    finally:
        stop.set()
        thread.join()
    return timings, attacker


if __name__ == "__main__":
    main()
