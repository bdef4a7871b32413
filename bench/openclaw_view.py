"""What one MCP tool call costs in OpenClaw's view (SPEC §16; docs/openclaw.md).

OpenClaw hands the model an MCP tool result as text blocks (its `src/agents/mcp-content.ts`,
`projectMcpCallToolResult`): when the result has `structuredContent`, a first block
`structuredContent:\\n<the JSON, keys sorted, indented by two>`, then every text block of
`content` except one that is exactly the JSON of the structured content; else the text
blocks alone. This benchmark builds an OpenClaw workspace (tests/openclaw_workspace.py, the
English shape, with a day of busy notes), calls `memory_search` for a few queries and
`memory_context` as an MCP client would (memory.mcp.server, in this process), and prints,
per call, the characters of the text alone and of OpenClaw's view, and their ratio — the
reference is the text alone, measured in the same run.

`memory_context` is measured as a plain client calls it and as OpenClaw's connection does
(`runtime: openclaw`, which leaves out USER.md and MEMORY.md: OpenClaw injects both itself),
when this revision has that runtime.

Run: `.venv/bin/python bench/openclaw_view.py` (`--keep` keeps the workspace).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ holds http.py: its folder goes last on the path, so the standard library's http
# package (which Django imports) is never that benchmark.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse
import datetime as dt
import json
import os
import shutil
import tempfile

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUERIES = ("dentist", "domain renewed", "standup", "Alpha contract", "garden shed", "backups NAS")


def openclaw_view(result) -> list[str]:
    """The text blocks OpenClaw's model reads for one CallToolResult (mcp-content.ts)."""
    texts = [block.text for block in result.content if block.type == "text"]
    structured = result.structured_content
    if not isinstance(structured, dict):
        return texts
    as_sorted = json.dumps(structured, sort_keys=True, indent=2, ensure_ascii=False)
    mirror = json.dumps(structured, indent=2, ensure_ascii=False)
    return [f"structuredContent:\n{as_sorted}", *(text for text in texts if text != mirror)]


def chars(blocks: list[str]) -> int:
    """Characters the model reads: the blocks, a blank line between two."""
    return sum(len(block) for block in blocks) + 2 * max(len(blocks) - 1, 0)


def _setup(home: Path) -> None:
    os.environ["MY_AGENT_HOME"] = str(home)
    os.environ["DATABASE_URL"] = f"sqlite:///{home.parent / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _busy_day(home: Path, today: dt.date) -> None:
    """A day as an assistant's notes hold it: a plain note of saved lines and two session
    notes; and a MEMORY.md of a few months."""
    topics = (
        "called the dentist about the crown, moved to Tuesday",
        "standup notes: the release slips a week, Dana takes the docs",
        "domain renewed for a year, the invoice went to the shared folder",
        "garden shed: the timber order is late again",
        "backups to the NAS checked, two disks at 80%",
        "Alpha contract draft sent back with the renewal clause marked",
    )
    lines = [
        f"- {9 + n // 6:02d}:{(n * 7) % 60:02d} {topics[n % len(topics)]} (item {n})"
        for n in range(60)
    ]
    (home / f"memory/{today}.md").write_text(f"# {today}\n\n" + "\n".join(lines) + "\n")
    memory = ["# MEMORY.md", ""] + [
        f"- Sam prefers item {n}: short answers, metric units, the NAS backups "
        f"(2026-03-{n % 28 + 1:02d})"
        for n in range(120)
    ]
    (home / "MEMORY.md").write_text("\n".join(memory) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-openclaw-view-"))
    home = tmp / "home"
    try:
        from tests.openclaw_workspace import build

        today = dt.date.today()
        build(home, "en", today=today, outside=tmp / "outside")
        _busy_day(home, today)
        _setup(home)
        from memory import clock

        if clock.today() != today:  # the owner's zone is another day than this machine's
            _busy_day(home, clock.today())
        measure()
    finally:
        if args.keep:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def measure() -> None:
    from memory.mcp.server import call_tool_now
    from memory.presence import Caller

    caller = Caller(agent_id="master")
    rows: list[tuple[str, int, int]] = []
    for query in QUERIES:
        result = call_tool_now(caller, "memory_search", {"query": query})
        texts = [block.text for block in result.content if block.type == "text"]
        rows.append((f'memory_search "{query}"', chars(texts), chars(openclaw_view(result))))
    calls = [("memory_context", {"conversation": "bench-plain"}, Caller(agent_id="master"))]
    try:
        calls.append(
            (
                "memory_context (OpenClaw)",
                {"conversation": "bench-openclaw"},
                Caller(agent_id="master", runtime="openclaw"),
            )
        )
    except TypeError:  # a revision without the runtime
        pass
    for label, arguments, who in calls:
        result = call_tool_now(who, "memory_context", arguments)
        texts = [block.text for block in result.content if block.type == "text"]
        rows.append((label, chars(texts), chars(openclaw_view(result))))
    print("characters per call: the text alone (reference) and OpenClaw's view of the result")
    for label, alone, viewed in rows:
        print(f"  {label:34} text {alone:7,}  OpenClaw {viewed:7,}  ({viewed / alone:.2f}x)")
    searches = [row for row in rows if row[0].startswith("memory_search")]
    alone = sum(row[1] for row in searches) / len(searches)
    viewed = sum(row[2] for row in searches) / len(searches)
    print(
        f"  {'memory_search, mean of ' + str(len(searches)):34} text {alone:7,.0f}  "
        f"OpenClaw {viewed:7,.0f}  ({viewed / alone:.2f}x)"
    )


if __name__ == "__main__":
    main()
