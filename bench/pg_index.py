"""Should the search index live in PostgreSQL when the app runs on it? This measures the
same entries both ways, in the same run (docs/decisions.md, "Search"):

- takes a built SQLite index (`--index`, e.g. the one bench/index_life.py --keep left; or it
  builds one on the workspace of bench/search.py at `--scale`), and loads its entries into
  PostgreSQL (`--database-url`, e.g. what bin/start-postgres prints) as one shared index
  would hold them: `entries(scope, rowid, words tsvector)` with a GIN index and
  `tokens(token)` with a pg_trgm GIN index for the "inside a word" rule;
- prints the load time (COPY + indexes) against the SQLite build time recorded in the index;
- runs the queries of bench/search.py the way memory.search does — each word's matching
  words (`tokens`), then the entries holding every word, newest first, 12 — on both, warm,
  and prints median and p95 of each and the ratio.

Run: `.venv/bin/python bench/pg_index.py --index PATH --database-url postgres://…`.
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse
import io
import sqlite3
import statistics
import time

import psycopg

QUERIES = [
    "sach",
    "nguyen",
    "benh vien",
    "ho chi minh",
    "pho bo",
    "deadline",
    "ca phe sua",
    "huyet ap",
    "docstring",
    "eco retreat",
    "zyxwv",
]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def load(index: sqlite3.Connection, pg: psycopg.Connection) -> float:
    started = time.perf_counter()
    with pg.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        cursor.execute("DROP TABLE IF EXISTS entries, tokens")
        cursor.execute(
            "CREATE TABLE entries(scope int, rid bigint, first int, last int, words tsvector)"
        )
        cursor.execute("CREATE TABLE tokens(id int PRIMARY KEY, token text)")
        scopes = [row[0] for row in index.execute("SELECT id FROM scopes")]
        with cursor.copy("COPY entries(scope, rid, first, last, words) FROM STDIN") as copy:
            for scope in scopes:
                for rowid, words, first, last in index.execute(
                    f"SELECT rowid, words, first, last FROM e{scope}"
                ):
                    copy.write_row((scope, rowid, first, last, _tsvector(words)))
        with cursor.copy("COPY tokens(id, token) FROM STDIN") as copy:
            for row in index.execute("SELECT id, token FROM tokens"):
                copy.write_row(row)
        cursor.execute("CREATE INDEX entries_words ON entries USING gin(words)")
        # rid as the index stores it (search_index.FLIP − rowid): newest first is ascending
        cursor.execute("CREATE INDEX entries_rank ON entries(scope, rid)")
        cursor.execute("CREATE INDEX tokens_trgm ON tokens USING gin(token gin_trgm_ops)")
        cursor.execute("ANALYZE entries")
        cursor.execute("ANALYZE tokens")
    pg.commit()
    return time.perf_counter() - started


def _tsvector(words: str) -> str:
    out = io.StringIO()
    for word in words.split():
        out.write("'" + word.replace("'", "''") + "' ")
    return out.getvalue()


def sqlite_query(index: sqlite3.Connection, words: list[str], scope: int) -> list[int]:
    expanded = []
    for word in words:
        if len(word) <= 3:
            rows = index.execute("SELECT token FROM tokens WHERE token = ?", (word,)).fetchall()
        else:
            rows = index.execute(
                "SELECT t.token FROM tokens_fts f JOIN tokens t ON t.id = f.rowid "
                "WHERE tokens_fts MATCH ?",
                (f'"{word}"',),
            ).fetchall()
        if not rows:
            return []
        expanded.append("(" + " OR ".join(f'"{row[0]}"' for row in rows) + ")")
    return [
        row[0]
        for row in index.execute(
            f"SELECT rowid FROM e{scope} WHERE e{scope} MATCH ? ORDER BY rowid LIMIT 12",
            (" AND ".join(expanded),),
        )
    ]


def pg_query(pg: psycopg.Connection, words: list[str], scope: int) -> list[int]:
    parts = []
    with pg.cursor() as cursor:
        for word in words:
            if len(word) <= 3:
                cursor.execute("SELECT token FROM tokens WHERE token = %s", (word,))
            else:
                cursor.execute("SELECT token FROM tokens WHERE token LIKE %s", (f"%{word}%",))
            found = [row[0] for row in cursor.fetchall()]
            if not found:
                return []
            parts.append("(" + " | ".join("'" + t.replace("'", "''") + "'" for t in found) + ")")
        cursor.execute(
            "SELECT rid FROM entries WHERE scope = %s AND words @@ to_tsquery('simple', %s) "
            "ORDER BY rid LIMIT 12",
            (scope, " & ".join(parts)),
        )
        return [row[0] for row in cursor.fetchall()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", required=True, help="a built index generation (.sqlite3)")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    index = sqlite3.connect(f"file:{args.index}?mode=ro", uri=True)
    meta = dict(index.execute("SELECT key, value FROM meta"))
    entries = sum(row[0] for row in index.execute("SELECT entries FROM scopes"))
    files = index.execute("SELECT count(*) FROM files").fetchone()[0]
    print(f"index: {files:,} files, {entries:,} entries, built in {meta['build_seconds']} s")
    with psycopg.connect(args.database_url) as pg:
        loaded = load(index, pg)
        print(f"PostgreSQL: loaded (COPY of the built entries + GIN indexes) in {loaded:.1f} s")
        with pg.cursor() as cursor:
            cursor.execute("SELECT pg_total_relation_size('entries') + "
                           "pg_total_relation_size('tokens')")  # fmt: skip
            print(f"  size {cursor.fetchone()[0] / 1e6:.0f} MB")
        scopes = [
            row[0] for row in index.execute("SELECT id FROM scopes ORDER BY entries DESC LIMIT 3")
        ]
        print(f"\n{'query':<14} {'SQLite ms':>10} {'PG ms':>10} {'PG ÷ SQLite':>12}  same hits")
        ratios = []
        for query in QUERIES:
            words = query.split()
            lite, post = [], []
            same = True
            for _ in range(args.runs):
                for scope in scopes:
                    started = time.perf_counter()
                    a = sqlite_query(index, words, scope)
                    lite.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    b = pg_query(pg, words, scope)
                    post.append(time.perf_counter() - started)
                    same = same and a == b
            ratio = statistics.median(post) / max(statistics.median(lite), 1e-6)
            ratios.append(ratio)
            print(
                f"{query:<14} {statistics.median(lite) * 1000:10.2f} "
                f"{statistics.median(post) * 1000:10.2f} {ratio:12.1f}  {same}"
            )
        print(f"\nmedian ratio PG ÷ SQLite: {statistics.median(ratios):.1f}")


if __name__ == "__main__":
    main()
