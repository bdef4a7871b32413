"""Benchmark of the review and history (SPEC §7), in a temporary workspace and
a temporary SQLite database:

- **storage** of 1,000 versions of a 24 KB MEMORY.md: each version an owner edit of one or
  two lines somewhere in the file, every tenth a consolidation-like rewrite touching ~10% of
  the lines; bytes stored in `data` per 1,000 versions, against the 24 MB the whole texts
  would take (and zlib of each whole text);
- **history page** of that file (1,000 versions listed) rendered by the management page;
- **blame** of that file (1,000 versions replayed);
- **2 MB proposal**: the queue page with one `agent_memory` proposal on a 2 MB MEMORY.md of
  25,000 identical lines (plus the one new line), and a `memory_rewrite` of a 2 MB file
  changing 500 scattered lines; and, for the ratio, difflib on the identical-lines case at
  sizes it can still finish.

Run: `.venv/bin/python bench/review.py` (options: --versions, --runs). Other load on the
machine shows in the absolute numbers; ratios are from the same run.
"""

from __future__ import annotations

import argparse
import difflib
import os
import random
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup(tmp: Path) -> None:
    home = tmp / "home"
    home.mkdir()
    os.environ["MY_AGENT_HOME"] = str(home)
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ["ALLOWED_HOSTS"] = "testserver"  # the test client's host
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


def memory_text(rng: random.Random, lines: int = 300) -> list[str]:
    words = "Lan likes tea runs at six meeting Thursday project budget Đà Nẵng sách đọc".split()
    out = []
    for _ in range(lines):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(8, 14)))
        out.append(f"- {text} (2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d})\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--versions", type=int, default=999)  # + the empty file at creation
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(13)
    with tempfile.TemporaryDirectory() as tmp:
        setup(Path(tmp))
        from django.contrib.auth import get_user_model
        from django.db.models import Sum
        from django.db.models.functions import Length
        from django.test import Client

        from memory import history, notes
        from memory.agents import default_agent
        from memory.models import FileVersion
        from memory.writes import add_memory_lines_or_propose
        from proposals import actions
        from proposals.models import Proposal

        master = default_agent()
        owner = get_user_model().objects.create_superuser("owner", "", "pw-owner-123")
        client = Client()
        client.force_login(owner)

        # --- storage of N versions of a 24 KB MEMORY.md -------------------------------------
        lines = memory_text(rng)
        while sum(len(line.encode()) for line in lines) < 24_000:
            lines += memory_text(rng, 10)
        whole = 0
        whole_zlib = 0
        start = time.perf_counter()
        for n in range(args.versions):
            if n % 10 == 9:
                for index in rng.sample(range(len(lines)), len(lines) // 10):
                    lines[index] = memory_text(rng, 1)[0]
            else:
                lines[rng.randrange(len(lines))] = memory_text(rng, 1)[0]
            text = "".join(lines)
            notes.write_memory(master, text)
            whole += len(text.encode())
            whole_zlib += len(zlib.compress(text.encode(), 6))
        write_seconds = time.perf_counter() - start
        rows = FileVersion.objects.filter(path="MEMORY.md")
        stored = rows.aggregate(total=Sum(Length("data")))["total"] or 0
        count = rows.count()
        per_thousand = stored * 1000 / count
        print(f"versions of a {len(''.join(lines).encode()) / 1024:.1f} KB MEMORY.md: {count}")
        print(
            f"  stored (data column): {stored / 1e6:.2f} MB → {per_thousand / 1e6:.2f} MB per "
            f"1,000 versions; whole texts {whole / 1e6:.1f} MB, zlib of each {whole_zlib / 1e6:.1f}"
            f" MB (ratio stored/whole {stored / whole:.3f}, stored/zlib {stored / whole_zlib:.3f})"
        )
        print(f"  write + record: {write_seconds / count * 1000:.1f} ms per version (with fsync)")
        assert history.content(rows.order_by("-seq").first()) == "".join(lines).encode()

        page = timed(
            lambda: client.get("/manage/memory/history/", {"path": "MEMORY.md"}), args.runs
        )
        response = client.get("/manage/memory/history/", {"path": "MEMORY.md"})
        assert response.status_code == 200, response.status_code
        assert response.content.count(b'class="op-') == min(count, 1000), "every version listed"
        print(f"history page of {count} versions: {page * 1000:.0f} ms (median of {args.runs})")
        blame = timed(lambda: history.blame("MEMORY.md"), max(1, args.runs // 2))
        print(f"blame of MEMORY.md over {count} versions: {blame * 1000:.0f} ms")
        old = rows.order_by("seq")[count // 2]
        read = timed(lambda: history.content(old), args.runs)
        print(f"read one version back: {read * 1000:.2f} ms")

        # --- a 2 MB MEMORY.md proposal ------------------------------------------------------
        Proposal.objects.all().delete()
        big = "- the same line of memory, repeated many times over\n" * 40_000
        notes.write_memory(master, big)
        print(f"2 MB MEMORY.md: {len(big.encode()) / 1e6:.2f} MB, {big.count(chr(10))} lines")
        _, proposal = add_memory_lines_or_propose(master, ["one new line"], source="job:bench")
        queue = timed(lambda: client.get("/manage/memory/proposals/"), args.runs)
        assert b"+one new line" in client.get("/manage/memory/proposals/").content
        detail = timed(lambda: client.get(f"/manage/memory/proposals/{proposal.pk}/"), args.runs)
        print(
            f"  queue page, identical lines + 1: {queue * 1000:.0f} ms; "
            f"review page {detail * 1000:.0f} ms"
        )
        actions.reject(proposal, by="owner")

        base = memory_text(rng, 26_000)
        notes.write_memory(master, "".join(base))
        changed = list(base)
        for index in rng.sample(range(len(changed)), 500):
            changed[index] = memory_text(rng, 1)[0]
        rewrite = actions.propose(
            "memory_rewrite",
            agent=master,
            target="MEMORY.md",
            payload={"memory": "".join(changed)},
            source="job:bench",
        )
        size = len("".join(base).encode()) / 1e6
        queue = timed(lambda: client.get("/manage/memory/proposals/"), args.runs)
        print(
            f"  queue page, {size:.1f} MB rewrite with 500 scattered changes: {queue * 1000:.0f} ms"
        )
        actions.reject(rewrite, by="owner")

        # --- the ratio against difflib on identical lines --------------------------------
        from memory import textdiff

        for n in (1_000, 2_000, 4_000):
            old = ["- same\n"] * n
            new = old + ["- new\n"]
            ours = timed(lambda old=old, new=new: textdiff.line_opcodes(old, new), 3)
            theirs = timed(
                lambda old=old, new=new: difflib.SequenceMatcher(
                    a=old, b=new, autojunk=False
                ).get_opcodes(),
                1,
            )
            print(
                f"identical lines {n:>5} + 1: textdiff {ours * 1000:.2f} ms, difflib "
                f"{theirs * 1000:.0f} ms (×{theirs / ours:.0f})"
            )


if __name__ == "__main__":
    main()
