"""Benchmark of memory_search (SPEC §6) against ripgrep and SQLite FTS5, plus
memory_save and the context.

Builds a synthetic workspace in a temporary directory — 10 years of daily notes (3,650
files, ~30 lines each, Vietnamese with marks and English, ~10 MB) and 1,000 facts, times
`--scale` (10: 46,501 files, ~96 MB), the notes spread over `--agents` agents — sets up
Django on it (its own SQLite database, migrated), builds the search index, and prints:

- the index: files, entries, size on disk and build time (`manage.py memory_reindex`);
- memory_search, 20 queries of one to three words with and without marks: median and p95
  warm, cold (a new connection in this process; and the first query of a new process), and
  the ratio of the warm median to `rg -i` searching the same files for the same first word
  (output captured, as a caller would read it) and to SQLite FTS5 (`unicode61
  remove_diacritics 2`, bm25, top 12) over the same lines, measured in the same run;
- with `--before REV`: the memory.search of that git revision on the same workspace, in
  the same run (the figures before a change);
- freshness: an app write in the very next query, a line removed by hand never returned,
  a same-size same-mtime hand edit found within the reconcile bound;
- memory_save with 8 threads writing at once (per-call median and p95);
- build_context for a new conversation and for a later turn of one.

Run: `.venv/bin/python bench/search.py` (options: --scale, --agents, --days, --facts,
--runs, --before, --keep). The notes are written as a person's files would be (plain
files, mtime set to their day): they stand for a workspace that already exists.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ holds http.py: its folder goes last on the path, so the standard library's http
# package (which Django imports) is never this benchmark.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse
import datetime as dt
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import threading
import time

ROOT = Path(__file__).resolve().parent.parent
RG = shutil.which("rg") or "/usr/bin/rg"

VIETNAMESE = (
    "sách đang đọc bệnh viện Hồ Chí Minh phở bò Đức Nguyễn Văn An họp với khách hàng uống cà "
    "phê sữa đá đi chợ mua rau huyết áp đo được ngủ sớm chạy bộ công viên gọi điện cho mẹ trả "
    "tiền điện nước học tiếng Anh đọc báo buổi sáng hạn chót dự án nhà hàng chay Đà Nẵng Hà "
    "Nội ô tô xe máy sửa chữa bảo hiểm y tế lịch khám răng cháu bé trường học giá vàng hôm nay "
    "thời tiết mưa nắng gió bão tin tức"
).split()
ENGLISH = (
    "the meeting notes project deadline coffee with Anna blood pressure reading book docs "
    "docstring review pull request deploy server backup weekly report budget travel flight "
    "hotel booking dentist appointment groceries running park sleep learned something new "
    "about python django search ranking eco retreat invoice contract signed call later"
).split()

QUERIES = [
    "sách",
    "sach",
    "nguyen",
    "Nguyễn Văn",
    "benh vien",
    "bệnh viện",
    "ho chi minh",
    "phở",
    "pho bo",
    "duc",
    "doc",
    "docs",
    "deadline",
    "cà phê sữa",
    "huyet ap",
    "eco retreat",
    "dentist appointment",
    "xe may sua",
    "blood pressure reading",
    "zyxwv",
]


def _line(rng: random.Random) -> str:
    pool = VIETNAMESE if rng.random() < 0.5 else ENGLISH
    words = [
        rng.choice(pool) if rng.random() < 0.8 else rng.choice(VIETNAMESE + ENGLISH)
        for _ in range(rng.randint(8, 16))
    ]
    return f"- {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} " + " ".join(words)


def agent_dirs(count: int) -> list[str]:
    """The agent dirs the notes are spread over: the default agent's, then agents/a01…"""
    return [""] + [f"agents/a{number:02d}" for number in range(1, count)]


def build_workspace(home: Path, *, days: int, facts: int, agents: int = 1) -> tuple[int, int]:
    """Write the synthetic workspace; returns (files, bytes)."""
    from memory import facts as facts_module

    rng = random.Random(20261130)
    dirs = agent_dirs(agents)
    for base in dirs:
        (home / base / "memory").mkdir(parents=True, exist_ok=True)
    facts_dir = home / "users" / "owner" / "facts"
    facts_dir.mkdir(parents=True, exist_ok=True)
    end = dt.date.today() - dt.timedelta(days=2)  # today's and yesterday's are in the prompt
    files = total = 0
    for index in range(days):
        day = end - dt.timedelta(days=index // agents)
        lines = [f"# {day.isoformat()}", ""] + [_line(rng) for _ in range(rng.randint(26, 34))]
        text = "\n".join(lines) + "\n"
        path = home / dirs[index % agents] / "memory" / f"{day.isoformat()}.md"
        path.write_text(text, encoding="utf-8")
        stamp = time.mktime(day.timetuple()) + 20 * 3600
        os.utime(path, (stamp, stamp))
        files += 1
        total += len(text.encode("utf-8"))
    for index in range(facts):
        name = f"fact-{index:04d}"
        text = facts_module.render_fact(
            name,
            description=" ".join(rng.choice(VIETNAMESE + ENGLISH) for _ in range(6)),
            type=rng.choice(["profile", "preference", "feedback", "project", "reference"]),
            body=" ".join(rng.choice(VIETNAMESE + ENGLISH) for _ in range(rng.randint(10, 60))),
            written_by="owner",
            source="chat",
        )
        path = facts_dir / f"{name}.md"
        path.write_text(text, encoding="utf-8")
        stamp = time.mktime((end - dt.timedelta(days=rng.randint(0, days))).timetuple())
        os.utime(path, (stamp, stamp))
        files += 1
        total += len(text.encode("utf-8"))
    memory_md = "# Memory\n\n" + "\n".join(_line(rng) for _ in range(80)) + "\n"
    (home / "MEMORY.md").write_text(memory_md, encoding="utf-8")
    (home / "users" / "owner" / "USER.md").write_text(
        "# Owner\n\nAnh Nguyễn, sống ở Hồ Chí Minh, thích câu trả lời ngắn.\n", encoding="utf-8"
    )
    facts_module.regenerate_index()
    return files + 1, total + len(memory_md.encode("utf-8"))


def setup_django(home: Path, database: Path) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "memoryproject.settings"
    os.environ["MY_AGENT_HOME"] = str(home)
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def _time_rg(home: Path, word: str, *options: str) -> float:
    """One `rg -i` over the files memory_search reads, output captured as a caller would.
    With `-c` rg prints one count per file: the search without the cost of its output."""
    start = time.perf_counter()
    subprocess.run(
        [
            RG,
            "-i",
            *options,
            "--no-messages",
            "--",
            word,
            "MEMORY.md",
            "memory",
            "users/owner/facts",
        ],
        cwd=home,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - start


def child_cold(query: str) -> None:
    """In a fresh process (Django already set up): time the first query."""
    from memory import search
    from memory.agents import default_agent

    agent = default_agent()
    start = time.perf_counter()
    search.search(query, agent=agent)
    print(time.perf_counter() - start)


def load_engine(revision: str):
    """memory.search as it was at a git revision, loaded beside today's (same workspace
    module, same Django): the figures before a change, measured in the same run."""
    import importlib.util

    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{revision}:memory/search.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module_path = Path(tempfile.mkdtemp(prefix="memory-search-before-")) / "search_before.py"
    module_path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("memory.search_before", module_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def fts5_reference(home: Path):
    """SQLite FTS5 over the same lines (unicode61 remove_diacritics 2): a query's words
    OR-ed, the 12 best by bm25 — what basic-memory, QMD and OpenClaw answer from."""
    import re
    import sqlite3

    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(body, path UNINDEXED, line UNINDEXED, "
        "tokenize='unicode61 remove_diacritics 2')"
    )
    started = time.perf_counter()
    rows = []
    for path in [
        home / "MEMORY.md",
        *home.glob("**/memory/**/*.md"),
        *home.glob("users/owner/facts/*.md"),
    ]:
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            if line.strip():
                rows.append((line, str(path), number))
    db.executemany("INSERT INTO t(body, path, line) VALUES (?, ?, ?)", rows)
    build = time.perf_counter() - started
    word = re.compile(r"[^\W_]+")

    def query(text: str) -> list:
        match = " OR ".join(f'"{w}"' for w in word.findall(text))
        return db.execute(
            "SELECT path, line FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 12", (match,)
        ).fetchall()

    return query, build, len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=int, default=1, help="times the ten-year workspace")
    parser.add_argument("--agents", type=int, default=1, help="agents the notes are spread over")
    parser.add_argument("--days", type=int, default=None, help="notes (default 3,650 × scale)")
    parser.add_argument("--facts", type=int, default=None, help="facts (default 1,000 × scale)")
    parser.add_argument("--runs", type=int, default=15, help="warm runs per query")
    parser.add_argument("--before", metavar="REV", help="also time memory.search of this revision")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    parser.add_argument("--home", help=argparse.SUPPRESS)  # reuse a kept workspace
    parser.add_argument(
        "--child-cold", nargs=3, metavar=("HOME", "DB", "QUERY"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    args.days = args.days if args.days is not None else 3650 * args.scale
    args.facts = args.facts if args.facts is not None else 1000 * args.scale

    if args.child_cold:
        home, database, query = args.child_cold
        setup_django(Path(home), Path(database))
        child_cold(query)
        return

    tmp = Path(args.home).parent if args.home else Path(tempfile.mkdtemp(prefix="memory-bench-"))
    home, database = tmp / "home", tmp / "bench.sqlite3"
    fresh = not home.exists()
    home.mkdir(exist_ok=True)
    os.environ["MEMORY_SEARCH_DIR"] = str(tmp / "search-index")
    setup_django(home, database)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    try:
        run(args, home, database, fresh)
    finally:
        if args.keep or args.home:
            print(f"\nworkspace kept at {tmp} (reuse it with --home {home})")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, home: Path, database: Path, fresh: bool) -> None:
    from memory import search, search_index, text
    from memory.agents import default_agent
    from memory.models import Agent

    for base in agent_dirs(args.agents)[1:]:
        Agent.objects.get_or_create(id=base.split("/")[1], defaults={"name": base})
    if fresh:
        start = time.perf_counter()
        files, size = build_workspace(home, days=args.days, facts=args.facts, agents=args.agents)
        print(
            f"workspace: {files} files, {size / 1e6:.1f} MB, {args.agents} agent(s), built in "
            f"{time.perf_counter() - start:.1f} s ({home})"
        )
    agent = default_agent()
    rows: list[tuple[str, str, str, str]] = []  # (what, measured, target, verdict)
    report = search_index.build()
    rows.append(
        (
            "index build (memory_reindex): files / entries",
            f"{report.files:,} / {report.entries:,}",
            "",
            "",
        )
    )
    rows.append(("index build time", f"{report.seconds:8.2f} s", "", ""))
    rows.append(
        (
            "index size on disk",
            f"{report.bytes / 1e6:8.1f} MB",
            "",
            f"{report.bytes / max(1, sum(p.stat().st_size for p in home.glob('**/*.md'))):.1f}x",
        )
    )
    fts_query, fts_build, fts_rows = fts5_reference(home)
    rows.append(
        (f"FTS5 reference build ({fts_rows:,} lines, in memory)", f"{fts_build:8.2f} s", "", "")
    )
    before = load_engine(args.before) if args.before else None

    # --- cold --------------------------------------------------------------------------
    cold = []
    for query in QUERIES:
        search.clear_cache()
        started = time.perf_counter()
        search.search(query, agent=agent)
        cold.append(time.perf_counter() - started)
    cold_process = []
    for query in [*QUERIES[:4], QUERIES[-1]]:  # the last finds nothing
        out = subprocess.run(
            [sys.executable, __file__, "--child-cold", str(home), str(database), query],
            capture_output=True,
            text=True,
            check=True,
        )
        cold_process.append(float(out.stdout.strip().splitlines()[-1]))
    before_cold = None
    if before is not None:
        time.sleep(before.RACY_WINDOW_NS / 1e9 + 0.1)
        before.clear_cache()
        started = time.perf_counter()
        before.search(QUERIES[-1], agent=agent)  # reads and folds every file
        before_cold = time.perf_counter() - started

    # --- warm, interleaved with the references so all see the same machine load -------
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(
        f"\n{'query':26} {'hits':>4} {'cold':>9} {'warm med':>9} {'rg -i':>9} {'ratio':>6}"
        f" {'FTS5':>8} {'ratio':>6}" + (f" {'before':>9}" if before else "")
    )
    warm_all: list[float] = []
    medians, rg_medians, fts_medians, before_medians = [], [], [], []
    for query, cold_time in zip(QUERIES, cold, strict=True):
        hits = search.search(query, agent=agent)  # warm-up
        if before is not None:
            before.search(query, agent=agent)
        first_word = query.split()[0]
        _time_rg(home, first_word)
        times, rg_times, fts_times, before_times = [], [], [], []
        for _ in range(args.runs):
            started = time.perf_counter()
            search.search(query, agent=agent)
            times.append(time.perf_counter() - started)
            rg_times.append(_time_rg(home, first_word))
            started = time.perf_counter()
            fts_query(query)
            fts_times.append(time.perf_counter() - started)
            if before is not None:
                started = time.perf_counter()
                before.search(query, agent=agent)
                before_times.append(time.perf_counter() - started)
        median = statistics.median(times)
        medians.append(median)
        rg_medians.append(statistics.median(rg_times))
        fts_medians.append(statistics.median(fts_times))
        warm_all += times
        line = (
            f"{query:26} {len(hits):4} {_ms(cold_time):>9} {_ms(median):>9} "
            f"{_ms(rg_medians[-1]):>9} {median / rg_medians[-1]:6.2f} {_ms(fts_medians[-1]):>8} "
            f"{median / fts_medians[-1]:6.2f}"
        )
        if before is not None:
            before_medians.append(statistics.median(before_times))
            line += f" {_ms(before_medians[-1]):>9}"
        print(line)

    warm_median = statistics.median(warm_all)
    p95 = _percentile(warm_all, 0.95)
    rg_median = statistics.median(rg_medians)
    fts_median = statistics.median(fts_medians)
    ratio = warm_median / rg_median
    rows.append(("search warm median", _ms(warm_median), "<= 50 ms", _verdict(warm_median <= 0.05)))
    rows.append(("search warm p95", _ms(p95), "<= 150 ms", _verdict(p95 <= 0.15)))
    rows.append(("rg -i median (same files, first word)", _ms(rg_median), "", ""))
    rows.append(("warm median / rg median", f"{ratio:8.2f} x", "<= 1.00 x", _verdict(ratio <= 1)))
    rows.append(("SQLite FTS5 median (same lines, bm25 top 12)", _ms(fts_median), "", ""))
    rows.append(("warm median / FTS5 median", f"{warm_median / fts_median:8.2f} x", "", ""))
    if before is not None:
        rows.append(
            (f"before ({args.before}) warm median", _ms(statistics.median(before_medians)), "", "")
        )
        rows.append(
            (
                f"before ({args.before}) warm median / rg median",
                f"{statistics.median(before_medians) / rg_median:8.2f} x",
                "",
                "",
            )
        )
        rows.append((f"before ({args.before}) cold, every file read", _ms(before_cold), "", ""))
    rows.append(("search cold median (new connection)", _ms(statistics.median(cold)), "", ""))
    rows.append(("search cold worst (new connection)", _ms(max(cold)), "", ""))
    rows.append(
        (
            "search cold, new process (worst of 5)",
            _ms(max(cold_process)),
            "<= 1000 ms",
            _verdict(max(cold_process) <= 1),
        )
    )
    rows += bench_freshness(home, agent)
    rows += bench_memory_save(agent)
    rows += bench_context(agent)

    print("\n" + "=" * 96)
    print(f"{'measure':56} {'value':>14} {'target':>12} {'':>8}")
    print("-" * 96)
    for what, value, target, verdict in rows:
        print(f"{what:56} {value:>14} {target:>12} {verdict:>8}")
    print("=" * 96)
    print(f"load average after: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"(query words are folded: {', '.join(text.words(' '.join(QUERIES[:3])))} …)")


def bench_freshness(home: Path, agent) -> list[tuple[str, str, str, str]]:
    """The three freshness claims, on this workspace (docs/decisions.md, "Search")."""
    from django.conf import settings

    from memory import search, search_index, workspace

    notes = sorted((home / "memory").glob("*.md"))
    rows = []
    # An app write: in the very next query, whatever the reconcile bound.
    started = time.perf_counter()
    workspace.append(notes[50].relative_to(home).as_posix(), "- qwxzvy app write\n")
    seen = any("qwxzvy" in hit.text for hit in search.search("qwxzvy", agent=agent))
    rows.append(
        (
            "app write in the next query (append + query)",
            f"{'yes' if seen else 'NO'} {(time.perf_counter() - started) * 1000:.1f} ms",
            "yes",
            _verdict(seen),
        )
    )
    # A line removed by hand, same size and mtime: never returned, even before a reconcile.
    old_note = notes[100]
    original = old_note.read_text(encoding="utf-8")
    before = os.stat(old_note)
    token = "zqxjkvwpqy"  # as long as the heading's date, so the size stays the same
    old_note.write_text(original.replace(old_note.stem, token, 1), encoding="utf-8")
    os.utime(old_note, ns=(before.st_atime_ns, before.st_mtime_ns))
    heading_gone = not any(
        old_note.stem in hit.text for hit in search.search(old_note.stem, agent=agent)
    )
    # … and the new text found within the bound.
    time.sleep(settings.MEMORY_SEARCH_RECONCILE_SECONDS + 0.1)
    started = time.perf_counter()
    found = any(token in hit.text for hit in search.search(token, agent=agent))
    reconcile = time.perf_counter() - started
    old_note.write_text(original, encoding="utf-8")
    os.utime(old_note, ns=(before.st_atime_ns, before.st_mtime_ns))
    rows.append(
        (
            "hand edit (same size, mtime): old line never returned",
            "yes" if heading_gone else "NO",
            "yes",
            _verdict(heading_gone),
        )
    )
    rows.append(
        (
            f"… new line found within {settings.MEMORY_SEARCH_RECONCILE_SECONDS:g} s",
            "yes" if found else "NO",
            "yes",
            _verdict(found),
        )
    )
    rows.append(("query after an idle spell (runs the reconcile)", _ms(reconcile), "", ""))
    started = time.perf_counter()
    search_index.reconcile(search_index.get())
    rows.append(
        ("reconcile alone (stat of every file)", _ms(time.perf_counter() - started), "", "")
    )
    # memory_save into a 2 MB note, then a query: only the note's new tail is indexed.
    big = "memory/2000-01-01.md"
    workspace.write(
        big, "# 2000-01-01\n\n" + "".join(f"- 10:00 line {n} {'x' * 90}\n" for n in range(20_000))
    )
    search.search("qwxzvy", agent=agent)
    times = []
    for n in range(20):
        workspace.append(big, f"- 11:00 grown {n} vbnmtail\n")
        started = time.perf_counter()
        search.search("vbnmtail", agent=agent)
        times.append(time.perf_counter() - started)
    rows.append(
        ("query after an append to a 2 MB note: median", _ms(statistics.median(times)), "", "")
    )
    workspace.delete(big)
    return rows


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def bench_memory_save(agent) -> list[tuple[str, str, str, str]]:
    from django.db import connection

    from memory import notes

    writers, per_writer = 8, 40
    tag = f"run{os.getpid()}"  # a kept workspace (--home) already holds earlier runs' lines
    times: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(writers)

    def writer(number: int) -> None:
        mine = []
        barrier.wait()
        for index in range(per_writer):
            started = time.perf_counter()
            notes.memory_save(agent, f"writer {number} line {index} {tag} đo huyết áp")
            mine.append(time.perf_counter() - started)
        with lock:
            times.extend(mine)
        connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    from memory import clock

    body = notes.read_note(agent, notes.plain_note_name(clock.today()))
    saved = sum(1 for line in body.splitlines() if f" {tag} " in line)
    return [
        (f"memory_save, {writers} threads: per-call median", _ms(statistics.median(times)), "", ""),
        (f"memory_save, {writers} threads: per-call p95", _ms(_percentile(times, 0.95)), "", ""),
        (
            f"memory_save lines kept ({writers * per_writer} written, {wall:.2f} s)",
            str(saved),
            str(writers * per_writer),
            _verdict(saved == writers * per_writer),
        ),
    ]


def bench_context(agent) -> list[tuple[str, str, str, str]]:
    try:
        from memory.context import build_context
    except ImportError:
        return [("build_context", "missing", "", "")]
    first, later = [], []
    for index in range(20):
        conversation = f"bench-{index}"
        started = time.perf_counter()
        build_context(agent, conversation, "direct")
        first.append(time.perf_counter() - started)
        started = time.perf_counter()
        build_context(agent, conversation, "direct")
        later.append(time.perf_counter() - started)
    return [
        ("build_context, new conversation: median", _ms(statistics.median(first)), "", ""),
        ("build_context, new conversation: p95", _ms(_percentile(first, 0.95)), "", ""),
        ("build_context, later turn: median", _ms(statistics.median(later)), "", ""),
    ]


if __name__ == "__main__":
    main()
