"""Benchmark of writes and listings at scale (SPEC §2, §3; docs/decisions.md, "Facts, notes and the
prompt").

Builds a workspace of `--scale` times the ten-year benchmark — 3,650 daily notes and 1,000
facts at 1×, so 36,500 notes and 10,000 facts (46,501 files) at 10× — plus a 2 MB note for
today, sets up Django on it (its own SQLite database, migrated), and prints each figure
with its target and a reference measured in the same run:

- a fact write (`user_memory_save` as a person: the fact file and INDEX.md, fsyncs
  included), updates of existing facts and new facts alternating — reference: one atomic
  write (temp file, fsync, rename, fsync of the directory) of a fact-sized file;
- `memory_save` into today's 2 MB note — reference: appending one line to a 2 MB file and
  fsyncing it;
- one page (50) of an agent's notes, the first and the last page, and `/api/stats` through
  the Django test client — reference: `os.listdir` of the notes directory; the whole
  listing of every note with its size and date is shown too (what a page used to cost).

Run: `.venv/bin/python bench/writes.py --scale 10` (options: --scale, --runs, --keep).
The generated files are written as a person's files would be (plain files, no fsync):
they stand for a workspace that already exists, not for writes under test. The machine
may be shared: the references are measured interleaved with the figures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.path and Path(sys.path[0]).resolve() == ROOT / "bench":
    sys.path.pop(0)  # bench/http.py must not shadow the standard library's http
sys.path.insert(0, str(ROOT))

FACT_WRITE_TARGET = 0.050
MEMORY_SAVE_TARGET = 0.020
LISTING_TARGET = 0.200
STATS_TARGET = 0.200
PAGE = 50

WORDS = (
    "sách đang đọc bệnh viện Hồ Chí Minh phở bò Đức Nguyễn Văn An họp với khách hàng uống cà "
    "phê sữa đá the meeting notes project deadline coffee with Anna blood pressure reading "
    "book docs review pull request deploy server backup weekly report budget travel flight"
).split()
TYPES = ("profile", "preference", "feedback", "project", "reference")


def setup_django(home: Path, database: Path) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "memoryproject.settings"
    os.environ["MY_AGENT_HOME"] = str(home)
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
    import django

    django.setup()


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def build_workspace(home: Path, *, notes: int, facts: int, today_bytes: int) -> tuple[int, int]:
    """Plain files as a person's workspace would hold them; returns (files, bytes)."""
    from memory import clock
    from memory import facts as facts_module

    rng = random.Random(20261130)
    notes_dir = home / "memory"
    facts_dir = home / "users" / "owner" / "facts"
    notes_dir.mkdir(parents=True, exist_ok=True)
    facts_dir.mkdir(parents=True, exist_ok=True)
    today = clock.today()
    files = total = 0
    for index in range(1, notes + 1):
        day = today - dt.timedelta(days=index)
        lines = [f"# {day.isoformat()}", ""]
        lines += [f"- {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {_words(rng, 8, 16)}"]
        lines += [f"- 10:{minute:02d} {_words(rng, 8, 16)}" for minute in range(29)]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        path = notes_dir / f"{day.isoformat()}.md"
        path.write_bytes(data)
        stamp = time.mktime(day.timetuple()) + 20 * 3600
        os.utime(path, (stamp, stamp))
        files, total = files + 1, total + len(data)
    for index in range(facts):
        name = f"fact-{index:05d}"
        data = facts_module.render_fact(
            name,
            description=_words(rng, 5, 9),
            type=rng.choice(TYPES),
            body=_words(rng, 10, 60),
            written_by="owner",
            source="chat",
            updated=(today - dt.timedelta(days=rng.randint(0, 400))).isoformat(),
        ).encode("utf-8")
        (facts_dir / f"{name}.md").write_bytes(data)
        files, total = files + 1, total + len(data)
    # Today's note, 2 MB of `- HH:MM` lines, as a busy day of an agent that saves a lot.
    lines, size = [f"# {today.isoformat()}", ""], 0
    while size < today_bytes:
        line = f"- {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {_words(rng, 8, 16)}"
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
    data = ("\n".join(lines) + "\n").encode("utf-8")
    (notes_dir / f"{today.isoformat()}.md").write_bytes(data)
    files, total = files + 1, total + len(data)
    facts_module.regenerate_index()
    return files + 1, total + (facts_dir / "INDEX.md").stat().st_size


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _timed(func) -> float:
    started = time.perf_counter()
    func()
    return time.perf_counter() - started


def reference_atomic_write(scratch: Path, size: int) -> float:
    """One atomic write of `size` bytes: temp file, fsync, rename, fsync of the directory."""
    data = b"x" * size
    started = time.perf_counter()
    tmp = scratch / "reference.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
    os.replace(tmp, scratch / "reference.md")
    directory = os.open(scratch, os.O_RDONLY)
    os.fsync(directory)
    os.close(directory)
    return time.perf_counter() - started


def reference_append(path: Path) -> float:
    """Appending one line to a file and fsyncing it."""
    started = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"- 12:00 one more line of a busy day\n")
    os.fsync(fd)
    os.close(fd)
    return time.perf_counter() - started


def notes_page(agent, offset: int, limit: int):
    """One page of notes through the operation the API and pages call."""
    from memory import notes

    listing = getattr(notes, "notes_listing", None)
    if listing is not None:
        return listing(agent, offset=offset, limit=limit).items
    return notes.list_notes(agent)[
        offset : offset + limit
    ]  # the old way: list every note, then take the page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1 = 3,650 notes, 1,000 facts")
    parser.add_argument("--runs", type=int, default=40, help="timed calls per figure")
    parser.add_argument("--today-mb", type=float, default=2.0, help="size of today's note")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memory-writes-bench-"))
    home, database = tmp / "home", tmp / "bench.sqlite3"
    home.mkdir()
    setup_django(home, database)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    try:
        run(args, home, tmp)
    finally:
        if args.keep:
            print(f"\nworkspace kept at {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, home: Path, tmp: Path) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client, override_settings

    from memory import clock, notes, writes
    from memory.agents import default_agent
    from memory.models import ApiToken

    started = time.perf_counter()
    note_count, fact_count = round(3650 * args.scale), round(1000 * args.scale)
    files, size = build_workspace(
        home, notes=note_count, facts=fact_count, today_bytes=int(args.today_mb * 1e6)
    )
    print(
        f"workspace: {files} files ({note_count} notes, {fact_count} facts), "
        f"{size / 1e6:.1f} MB, built in {time.perf_counter() - started:.1f} s ({home})"
    )
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    agent = default_agent()
    rng = random.Random(7)
    scratch = tmp / "scratch"
    scratch.mkdir()
    rows: list[tuple[str, list[float], float | None, str]] = []

    # --- a fact write ---------------------------------------------------------------------
    fact_times, atomic_times = [], []
    for run_index in range(args.runs):
        if run_index % 2:
            name = f"fact-{rng.randrange(fact_count):05d}"  # an update
        else:
            name = f"new-fact-{run_index:04d}"  # a new fact: a line more in INDEX.md
        fact_times.append(
            _timed(
                lambda name=name: writes.save_fact_or_propose(
                    name,
                    description=_words(rng, 5, 9),
                    type=rng.choice(TYPES),
                    body=_words(rng, 10, 60),
                    source="chat",
                    written_by="owner",
                )
            )
        )
        atomic_times.append(reference_atomic_write(scratch, 600))
    rows.append(("fact write (user_memory_save)", fact_times, FACT_WRITE_TARGET, "p95"))
    # The write that also looks for hand edits of fact files (an lstat of every fact),
    # made at most every MEMORY_RECONCILE_SECONDS: forced here on every call.
    reconciling = []
    with override_settings(MEMORY_RECONCILE_SECONDS=0):
        for _ in range(max(5, args.runs // 4)):
            name = f"fact-{rng.randrange(fact_count):05d}"
            reconciling.append(
                _timed(
                    lambda name=name: writes.save_fact_or_propose(
                        name,
                        description=_words(rng, 5, 9),
                        type=rng.choice(TYPES),
                        body=_words(rng, 10, 60),
                        source="chat",
                        written_by="owner",
                    )
                )
            )
    rows.append(("  the same, with the hand-edit check", reconciling, None, "p95"))
    rows.append(("  reference: one atomic write, 600 B", atomic_times, None, "p95"))

    # --- memory_save into today's 2 MB note -----------------------------------------------
    today_note = home / "memory" / f"{clock.today().isoformat()}.md"
    reference_file = scratch / "big.md"
    shutil.copyfile(today_note, reference_file)
    save_times, append_times = [], []
    for run_index in range(args.runs):
        save_times.append(
            _timed(lambda i=run_index: notes.memory_save(agent, f"đo huyết áp lần {i}"))
        )
        append_times.append(reference_append(reference_file))
    note_mb = today_note.stat().st_size / 1e6
    rows.append(
        (f"memory_save, today's note {note_mb:.1f} MB", save_times, MEMORY_SAVE_TARGET, "p95")
    )
    rows.append(("  reference: append one line + fsync", append_times, None, "p95"))

    # --- listings -------------------------------------------------------------------------
    user = get_user_model().objects.create_superuser("owner", "owner@example.com", "pw-bench")
    _, key = ApiToken.issue(user=user)
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    total = len(os.listdir(home / "memory"))
    first, last, stats, listdir, whole = [], [], [], [], []
    client.get("/api/stats")  # warm-up: imports, URL resolution, the token's row
    notes_page(agent, 0, PAGE)
    for _ in range(max(5, args.runs // 4)):
        first.append(_timed(lambda: notes_page(agent, 0, PAGE)))
        last.append(_timed(lambda: notes_page(agent, max(0, total - PAGE), PAGE)))

        def get_stats() -> None:
            answer = client.get("/api/stats")
            assert answer.status_code == 200, answer.content[:200]

        stats.append(_timed(get_stats))
        listdir.append(_timed(lambda: os.listdir(home / "memory")))
    for _ in range(3):
        whole.append(_timed(lambda: notes.list_notes(agent)))
    rows.append((f"notes, first page of {PAGE} (of {total})", first, LISTING_TARGET, "p95"))
    rows.append((f"notes, last page of {PAGE}", last, LISTING_TARGET, "p95"))
    rows.append(("GET /api/stats", stats, STATS_TARGET, "p95"))
    rows.append(("  reference: os.listdir of the notes", listdir, None, "p95"))
    rows.append(("  every note with size and date", whole, None, "median"))
    connection.close()

    print(f"\n{'measure':44} {'median':>10} {'p95':>10} {'target':>12} {'verdict':>8}")
    print("-" * 88)
    for what, values, target, figure in rows:
        median, p95 = statistics.median(values), _percentile(values, 0.95)
        measured = p95 if figure == "p95" else median
        target_text = f"{figure} ≤ {_ms(target)}" if target else ""
        verdict = ("PASS" if measured <= target else "FAIL") if target else ""
        print(f"{what:44} {_ms(median):>10} {_ms(p95):>10} {target_text:>12} {verdict:>8}")
    print(f"load average after: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
