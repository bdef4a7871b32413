"""A workspace as a person left it: written with plain file calls, never through the app
(the app never initialised it), in the shapes people keep — a BOM and CRLF USER.md, a note
with a byte that is not UTF-8, a hand-kept file in an NFD name, a wiki vault without
machine blocks, no `.memory-locks/`. Shared by the tests that check that reading writes
nothing (tests/spec, over HTTP; tests/memory/mcp, over MCP)."""

from __future__ import annotations

import datetime as dt
import os
import unicodedata
from pathlib import Path


def snapshot(home: Path) -> dict[str, tuple]:
    """Every entry below the home (folders too), with its bytes, mode and mtime."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(home):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = os.lstat(path)
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            found[str(path.relative_to(home))] = (st.st_mode, st.st_mtime_ns, data)
    found["."] = (os.lstat(home).st_mode, os.lstat(home).st_mtime_ns, b"")
    return found


HAND_PAGE = """---
title: Hạn Eco
kind: entity
sources: [note:2026-11-29]
status: ok
updated: 2026-11-29
---

Hạn links to [[Minh]] and [[Nowhere]].
"""


MINH_PAGE = """---
title: Minh
kind: entity
sources: [note:2026-11-29]
updated: 2026-01-01
questions: [Who is Minh?]
---

The owner.
"""


def write_hand_written(workspace: Path, today: dt.date) -> Path:
    """Write the hand-kept workspace into `workspace` (which holds the app's agent dirs
    at most); returns it."""
    (workspace / "users/owner/facts").mkdir(parents=True, exist_ok=True)
    (workspace / "users/owner/USER.md").write_bytes(b"\xef\xbb\xbfI am Minh.\r\nHi.\r\n")
    (workspace / "users/owner/facts/coffee.md").write_text(
        "---\nname: coffee\ndescription: likes coffee\ntype: preference\nwritten_by: owner\n"
        "source: web\nupdated: 2026-11-01\n---\n\nBlack.\n"
    )
    (workspace / "users/owner/facts/INDEX.md").write_text(
        "- [coffee](coffee.md) (preference) — likes coffee\n"
    )
    (workspace / "MEMORY.md").write_bytes(b"- durable\r\n")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / f"{today.isoformat()}.md").write_bytes(
        f"# {today.isoformat()}\n\n- 08:00 caf\xe9 latin-1\n".encode("latin-1")
    )
    (workspace / "memory/2026-11-29.md").write_text("# 2026-11-29\n\n- 09:00 Minh\n")
    (workspace / "memory" / unicodedata.normalize("NFD", "sách-đang-đọc.md")).write_text("- Dune\n")
    (workspace / "memory/wiki/entities").mkdir(parents=True)
    (workspace / "memory/wiki/entities/han-eco.md").write_text(HAND_PAGE)
    (workspace / "memory/wiki/entities/minh.md").write_text(MINH_PAGE)
    (workspace / "agents/helper/memory").mkdir(parents=True, exist_ok=True)
    (workspace / "agents/helper/memory/2026-11-29.md").write_text("# 2026-11-29\n\n- helped\n")
    for path in workspace.rglob("*"):
        if path.is_file():
            os.chmod(path, 0o644)
    return workspace
