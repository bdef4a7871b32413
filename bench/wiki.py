"""Benchmark of the wiki vault at scale (SPEC §10.3, §10.6; docs/decisions.md, "Wiki").

Builds a vault of `--pages` pages (default 5,000; `--pages 20000` for the large one) with four
`[[links]]` per page (~1% to pages that do not exist; Vietnamese and English text,
frontmatter with sources, questions, dates of which some are stale) in a temporary
workspace, gives every page its machine block (not timed, written without fsync: the files
stand for a vault that already exists), then prints each figure with its target and a
reference measured in the same run:

- the **full pass** with nothing parsed (a fresh process): stat and read every page,
  parse it, build the graph, check every machine block, lint, regenerate both reports —
  target ≤ 1 s; reference: reading every page file (open, read, close), nothing parsed;
- the same rebuild warm (`refresh`: a stat of every page, nothing changed);
- a **one-page edit** (`save_page` changing a page's links: the page, the blocks of the
  pages that gained or lost a backlink, lint and the reports, fsyncs included) — target
  ≤ 100 ms; reference: one atomic write of a page-sized file;
- a **page GET** (`get_page` with its links, as the API and the page view call it) right
  after an edit made in this process and with nothing changed — target ≤ 50 ms;
  reference: a stat and a read of the page file;
- the lint report computed on read (`report`, what a GET of the report needs).

Run: `.venv/bin/python bench/wiki.py --pages 20000` (options: --pages, --links-per-page,
--runs, --keep).
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
import resource
import shutil
import statistics
import tempfile
import time

ROOT = Path(__file__).resolve().parent.parent
if sys.path and Path(sys.path[0]).resolve() == ROOT / "bench":
    sys.path.pop(0)  # bench/http.py must not shadow the standard library's http
sys.path.insert(0, str(ROOT))

from memory import clock  # noqa: E402

WORDS = (
    "sách đang đọc bệnh viện Hồ Chí Minh phở bò Đức Nguyễn Văn An họp với khách hàng hạn chót "
    "dự án nhà hàng chay Đà Nẵng Hà Nội bảo hiểm y tế the meeting notes project deadline "
    "coffee with Anna contract signed invoice eco retreat budget travel flight hotel booking"
).split()

FULL_TARGET = 1.0
EDIT_TARGET = 0.100
GET_TARGET = 0.050


def setup_django(home: Path) -> None:
    """Django on the vault's workspace with its own SQLite database, migrated: every write
    records its version in the file history, as in the app."""
    os.environ["MY_AGENT_HOME"] = str(home)
    os.environ["DATABASE_URL"] = f"sqlite:///{home.parent / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build_vault(home: Path, count: int, per_page: int, rng: random.Random) -> None:
    import datetime as dt

    today = clock.today()
    folders = ("entities", "concepts", "syntheses")
    kinds = ("entity", "concept", "synthesis")
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


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def read_every_page(home: Path) -> float:
    """Reference: open, read and close every page file, nothing parsed."""
    start = time.perf_counter()
    for folder in ("entities", "concepts", "syntheses"):
        directory = home / "memory" / "wiki" / folder
        for name in os.listdir(directory):
            fd = os.open(directory / name, os.O_RDONLY)
            while os.read(fd, 1 << 20):
                pass
            os.close(fd)
    return time.perf_counter() - start


def atomic_write(directory: Path, size: int) -> float:
    """Reference: one atomic write (temp file, fsync, rename, fsync of the directory)."""
    start = time.perf_counter()
    tmp = directory / ".reference.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"x" * size)
    os.fsync(fd)
    os.close(fd)
    os.replace(tmp, directory / ".reference")
    dir_fd = os.open(directory, os.O_RDONLY)
    os.fsync(dir_fd)
    os.close(dir_fd)
    return time.perf_counter() - start


def stat_and_read(path: Path) -> float:
    start = time.perf_counter()
    os.stat(path)
    path.read_bytes()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--links-per-page", type=int, default=4)
    parser.add_argument("--runs", type=int, default=5, help="full passes; edits and GETs × 4")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="wiki-bench-")) / "home"
    home.mkdir()
    setup_django(home)
    from memory.models import Agent
    from wiki import pages, vault

    agent = Agent.objects.get(is_default=True)  # the master agent the migrations made
    rng = random.Random(42)
    try:
        build_vault(home, args.pages, args.links_per_page, rng)
        real_fsync = os.fsync
        os.fsync = lambda fd: None  # the existing vault's blocks, not a write under test
        try:
            first, refreshed = timed(lambda: pages.refresh(agent))
        finally:
            os.fsync = real_fsync
        links = sum(len(r.links) for r in refreshed.vault.pages.values())
        print(f"vault: {len(refreshed.vault.pages)} pages, {links} links, {home}")
        print(f"blocks of every page written (not timed, no fsync): {first:.1f} s")
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        time.sleep(vault.RACY_SECONDS + 0.1)  # the pages are no longer "racily clean"
        rows: list[tuple[str, list[float], float | None]] = []

        cold, cold_cpu, reads = [], [], []
        for _ in range(args.runs):
            vault.clear_cache()  # as in a fresh process: nothing parsed, no graph known
            cpu = time.process_time()
            seconds, result = timed(lambda: pages.refresh(agent))
            cold_cpu.append(time.process_time() - cpu)
            assert result.written == [], result.written[:3]
            cold.append(seconds)
            reads.append(read_every_page(home))
        rows.append(("full pass, nothing parsed", cold, FULL_TARGET))
        rows.append(("  its CPU time (this process)", cold_cpu, None))
        rows.append(("  reference: read every page file", reads, None))
        warm = [timed(lambda: pages.refresh(agent))[0] for _ in range(args.runs)]
        rows.append(("refresh, warm (stat every page)", warm, None))

        edits, writes, gets_after, gets, page_reads, reports = [], [], [], [], [], []
        directory = home / "memory" / "wiki" / "entities"
        for run in range(args.runs * 4):
            index = rng.randrange(args.pages)
            page = pages.get_page(agent, f"page-{index}")
            new_body = page.body.replace("[[Page ", "[[Page 1", 1) + f"\n\nEdit {run}: [[Page 7]]."
            seconds, saved = timed(
                lambda page=page, new_body=new_body: pages.save_page(
                    agent, slug=page.slug, body=new_body, partial=True
                )
            )
            assert saved.body.endswith(f"Edit {run}: [[Page 7]].")
            edits.append(seconds)
            writes.append(atomic_write(directory, len(saved.text.encode("utf-8"))))
            gets_after.append(timed(lambda slug=page.slug: pages.get_page(agent, slug))[0])
            other = f"page-{rng.randrange(args.pages)}"
            gets.append(timed(lambda other=other: pages.get_page(agent, other))[0])
            path = home / pages.get_page(agent, other).path
            page_reads.append(stat_and_read(path))
        # (the report was once only computed by a refresh that wrote it)
        report_on_read = pages.report
        for _ in range(args.runs):
            reports.append(timed(lambda: report_on_read(agent))[0])
        rows.append(("one-page edit (save + rebuild)", edits, EDIT_TARGET))
        rows.append(("  reference: one atomic write of the page", writes, None))
        rows.append(("page GET, the page just edited", gets_after, GET_TARGET))
        rows.append(("page GET, another page", gets, GET_TARGET))
        rows.append(("  reference: stat and read of a page file", page_reads, None))
        rows.append(("lint report computed on read", reports, None))

        print(f"\n{'measure':44} {'median':>10} {'p95':>10} {'max':>10} {'target':>16} {'':>6}")
        print("-" * 100)
        for name, values, target in rows:
            median, p95 = statistics.median(values), _percentile(values, 0.95)
            verdict = ("PASS" if median <= target else "FAIL") if target else ""
            target_text = f"median ≤ {target * 1000:.0f} ms" if target else ""
            print(
                f"{name:44} {median * 1000:7.2f} ms {p95 * 1000:7.2f} ms "
                f"{max(values) * 1000:7.2f} ms {target_text:>16} {verdict:>6}"
            )
        print(f"({len(cold)} full passes, {len(edits)} edits and GETs each)")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS of this process: {rss:.0f} MB")
        print(f"load average after: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    finally:
        if args.keep:
            print(f"kept: {home}")
        else:
            shutil.rmtree(home.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
