"""A small generator of OpenClaw workspaces, in the shapes real ones have (SPEC §1).

Three shapes, one per language the real workspaces were written in, each a few dozen
files. Every shape holds what those workspaces hold, in OpenClaw's own formats:

- `USER.md` at the root (OpenClaw keeps the owner's profile there, not in users/owner/);
- the long-term file as OpenClaw names it: `MEMORY.md`, or `memory.md` (the Vietnamese
  shape) which OpenClaw reads when MEMORY.md is absent;
- persona files (`AGENTS.md`, `SOUL.md`, `TOOLS.md`…) that are not memory;
- daily notes `memory/YYYY-MM-DD.md` (today's and yesterday's among them);
- session-hook transcripts `memory/YYYY-MM-DD-HHMM.md` in the session-memory hook's format
  (`# Session: … UTC`, `- **Session Key**: …`);
- odd but real note names: `2026-03-22-zhiji-E001.md`, `2026-01-05_1030.md`, and an
  impossible date `2026-02-30.md` (not a note);
- hand-kept files and subfolders (`memory/projects.md`, `memory/people/…`);
- an OpenClaw memory-wiki vault in `memory/wiki/` (English shape): pages with `id`,
  `pageType`, `sourceIds`, `updatedAt`, `## Related` blocks between
  `<!-- openclaw:wiki:related:start/end -->`, `[[folder/slug|label]]` links, a `sources/`
  folder, OpenClaw's own `reports/` and `index.md`, its hidden `.openclaw-wiki/` state;
  and, as in a real vault, same-named pages in two folders (`sources/0010-alpha-renewal.md`
  beside `concepts/0010-alpha-renewal.md`, the concept drawn from that source), linked
  to by folder (`[[sources/0010-alpha-renewal|…]]`) and by the bare name (which matches
  both: `SAME_NAMED`);
- per-agent folders `agents/<id>/MEMORY.md` + `memory/`;
- what a workspace also carries and the app must skip and explain: a hidden file, a file
  that is not UTF-8, a symlinked note, a non-Markdown file.

`build(root, shape, today=…)` writes one into `root` (which must hold no file yet) and
returns what it wrote. Run as a script to make one by hand:

    .venv/bin/python -m tests.openclaw_workspace vi /tmp/oc-vi
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

SHAPES = ("vi", "en", "zh")
# The same-named pages of the English shape's vault: one file name in two folders.
SAME_NAMED = ("concepts/0010-alpha-renewal", "sources/0010-alpha-renewal")
RELATED_START = "<!-- openclaw:wiki:related:start -->"
RELATED_END = "<!-- openclaw:wiki:related:end -->"


@dataclass
class Built:
    """What `build` wrote: the root, the shape, today, and paths (workspace-relative)."""

    root: Path
    shape: str
    today: dt.date
    files: list[str] = field(default_factory=list)
    memory_file: str = "MEMORY.md"  # the long-term file as this shape names it
    agents: list[str] = field(default_factory=list)  # per-agent folders (agents/<id>)
    symlinks: list[str] = field(default_factory=list)
    undecodable: list[str] = field(default_factory=list)


class _Writer:
    def __init__(self, root: Path, built: Built) -> None:
        self.root = root
        self.built = built

    def text(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        self.built.files.append(rel)

    def raw(self, rel: str, data: bytes) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.built.files.append(rel)

    def symlink(self, rel: str, target: Path) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path)
        self.built.symlinks.append(rel)


def _session(day: dt.date, hhmm: str, source: str, lines: list[tuple[str, str]]) -> str:
    """A transcript as OpenClaw's session-memory hook writes it on /new."""
    stamp = f"{day.isoformat()} {hhmm[:2]}:{hhmm[2:]}:00 UTC"
    body = [
        f"# Session: {stamp}",
        "",
        "- **Session Key**: agent:main:main",
        f"- **Session ID**: {day:%Y%m%d}{hhmm}abcdef",
        f"- **Source**: {source}",
        "",
        "## Conversation Summary",
        "",
    ]
    body += [f"{who}: {said}" for who, said in lines]
    return "\n".join(body) + "\n"


def _daily(day: dt.date, entries: list[str]) -> str:
    return f"# {day.isoformat()}\n\n" + "".join(f"- {entry}\n" for entry in entries)


def _persona(w: _Writer, name: str) -> None:
    w.text("AGENTS.md", f"# AGENTS.md\n\nYou are {name}. Read USER.md and MEMORY.md first.\n")
    w.text("SOUL.md", "# SOUL.md\n\nCalm, brief, kind.\n")
    w.text("TOOLS.md", "# TOOLS.md\n\nThe printer is on the second floor.\n")


def _skipped_things(w: _Writer, outside: Path) -> None:
    """What every real workspace also had: hidden, undecodable, linked and binary files."""
    w.text("memory/.draft.md", "hidden draft\n")
    w.raw("memory/scan-latin1.md", "Caf\xe9 au lait\n".encode("latin-1"))
    w.built.undecodable.append("memory/scan-latin1.md")
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "synced.md").write_text("# Synced elsewhere\n\nA note kept in a synced folder.\n")
    w.symlink("memory/synced.md", outside / "synced.md")
    w.raw("memory/photo.jpg", b"\xff\xd8\xff\xe0 not really a jpeg")


def _vietnamese(w: _Writer, today: dt.date) -> None:
    y1, y2 = today - dt.timedelta(days=1), today - dt.timedelta(days=2)
    _persona(w, "Mây")
    w.text(
        "USER.md", "# Về tôi\n\n- Tên: Nguyễn Minh Anh\n- Thích trả lời ngắn, bằng tiếng Việt.\n"
    )
    # OpenClaw reads memory.md when MEMORY.md is absent; this workspace has only that.
    w.built.memory_file = "memory.md"
    w.text(
        "memory.md",
        "# Trí nhớ dài hạn\n\n- Chủ nhân dậy lúc 6 giờ sáng (2026-03-01)\n"
        "- Sách đang đọc ghi ở memory/sach-dang-doc.md\n",
    )
    w.text("memory/" + f"{y2.isoformat()}.md", _daily(y2, ["07:10 Đi bộ 5 km quanh hồ Tây."]))
    w.text(
        "memory/" + f"{y1.isoformat()}.md",
        _daily(y1, ["08:00 Đọc xong chương 3 của sách đang đọc.", "21:30 Hẹn gặp chị Lan."]),
    )
    w.text("memory/" + f"{today.isoformat()}.md", _daily(today, ["06:45 Uống cà phê sữa đá."]))
    w.text(
        f"memory/{y1.isoformat()}-0930.md",
        _session(
            y1,
            "0930",
            "telegram",
            [("user", "Nhắc tôi mua sách Đắc Nhân Tâm"), ("assistant", "Đã ghi nhớ.")],
        ),
    )
    w.text("memory/sach-dang-doc.md", "# Sách đang đọc\n\n- Đắc Nhân Tâm (chương 3)\n")
    w.text("memory/people/chi-lan.md", "# Chị Lan\n\nĐồng nghiệp cũ, thích trà sen.\n")
    w.text("memory/projects.md", "# Dự án\n\n- Sửa nhà ở Đà Lạt\n")
    w.text("agents/ke-toan/MEMORY.md", "# Kế toán\n\n- Hóa đơn điện nộp trước ngày 15\n")
    w.text(
        f"agents/ke-toan/memory/{y1.isoformat()}.md",
        _daily(y1, ["10:00 Đã nộp hóa đơn điện tháng này."]),
    )
    w.built.agents.append("agents/ke-toan")


def _page(meta: list[str], body: str, related: str | None) -> str:
    text = "---\n" + "\n".join(meta) + "\n---\n\n" + body.rstrip("\n") + "\n"
    if related is not None:
        text += f"\n## Related\n{RELATED_START}\n{related}\n{RELATED_END}\n"
    return text


def _vault(w: _Writer) -> None:
    """An OpenClaw memory-wiki vault, as `openclaw wiki init` + compile leave it."""
    base = "memory/wiki"
    w.text(f"{base}/AGENTS.md", "# Wiki agent rules\n\nKeep provenance on every page.\n")
    w.text(f"{base}/WIKI.md", "# WIKI.md\n\nThis vault is maintained by memory-wiki.\n")
    w.text(
        f"{base}/index.md",
        "# Wiki Index\n\n<!-- openclaw:wiki:index:start -->\n"
        "- [[entities/alpha|Alpha]]\n- [[concepts/heartbeat|Heartbeat]]\n"
        "<!-- openclaw:wiki:index:end -->\n",
    )
    w.text(f"{base}/inbox.md", "# Inbox\n\n- check the Alpha contract\n")
    w.text(
        f"{base}/entities/alpha.md",
        _page(
            [
                "pageType: entity",
                "id: entity.alpha",
                "title: Alpha",
                "sourceIds:",
                "  - source.alpha-notes",
                "status: active",
                "updatedAt: 2026-03-20T09:15:00.000Z",
                "questions:",
                "  - Is the Alpha contract renewed?",
            ],
            "# Alpha\n\nAlpha is the vendor of the [[concepts/heartbeat|heartbeat]] monitor.\n"
            "See also [[syntheses/vendor-review]].\n\n## Notes\n"
            "<!-- openclaw:human:start -->\nCall before April.\n<!-- openclaw:human:end -->",
            "### Sources\n- [[sources/alpha-notes|Alpha notes]]\n\n"
            "### Referenced By\n- [[concepts/heartbeat|Heartbeat]]",
        ),
    )
    w.text(
        f"{base}/concepts/heartbeat.md",
        _page(
            [
                "pageType: concept",
                "id: concept.heartbeat",
                "title: Heartbeat",
                "sourceIds: [source.alpha-notes]",
                "status: active",
                "updatedAt: 2026-03-21",
            ],
            "# Heartbeat\n\nA check every 30 minutes; [[entities/alpha|Alpha]] sells it.",
            "### Referenced By\n- [[entities/alpha|Alpha]]",
        ),
    )
    w.text(
        f"{base}/sources/alpha-notes.md",
        _page(
            [
                "pageType: source",
                "id: source.alpha-notes",
                "title: Alpha notes",
                "sourceType: local-file",
                "status: active",
                "updatedAt: 2026-03-19T18:00:00.000Z",
            ],
            "# Alpha notes\n\nRaw notes from the Alpha call.",
            None,
        ),
    )
    _same_named(w, base)
    w.text(
        f"{base}/sources/raw-clipping.md",
        "<!-- openclaw:wiki:raw-source -->\n# A clipping\n\nPasted from a newsletter.\n",
    )
    w.text(
        f"{base}/reports/open-questions.md",
        _page(
            [
                "pageType: report",
                "id: report.open-questions",
                "title: Open Questions",
                "status: active",
            ],
            "# Open Questions\n\n## Generated\n<!-- openclaw:wiki:generated:start -->\n"
            "- [[entities/alpha|Alpha]]: Is the Alpha contract renewed?\n"
            "<!-- openclaw:wiki:generated:end -->",
            None,
        ),
    )
    w.text(f"{base}/.openclaw-wiki/log.jsonl", '{"type":"compile"}\n')


def _same_named(w: _Writer, base: str) -> None:
    """A source and the concept drawn from it under one file name, as OpenClaw's ingest
    numbers both (`0010-…`): two pages, told apart only by their folders."""
    w.text(
        f"{base}/sources/0010-alpha-renewal.md",
        _page(
            [
                "pageType: source",
                "id: source.0010-alpha-renewal",
                "title: Alpha renewal call",
                "sourceType: local-file",
                "status: active",
                "updatedAt: 2026-03-22T08:00:00.000Z",
            ],
            "# Alpha renewal call\n\nNotes from the call: renewal at the same price, "
            "two-year term.",
            None,
        ),
    )
    w.text(
        f"{base}/concepts/0010-alpha-renewal.md",
        _page(
            [
                "pageType: concept",
                "id: concept.0010-alpha-renewal",
                "title: Alpha renewal",
                "sourceIds: [source.0010-alpha-renewal]",
                "status: active",
                "updatedAt: 2026-03-22T09:00:00.000Z",
                "reviewer: sam  # kept as written",
            ],
            "# Alpha renewal\n\nThe contract renews for two years; from "
            "[[sources/0010-alpha-renewal|the call notes]]. Also see [[0010-alpha-renewal]].",
            "### Sources\n- [[sources/0010-alpha-renewal|Alpha renewal call]]",
        ),
    )


def _english(w: _Writer, today: dt.date) -> None:
    y1 = today - dt.timedelta(days=1)
    _persona(w, "Juniper")
    w.text("USER.md", "# USER.md\n\n- Name: Sam Rivera\n- Prefers short answers.\n")
    w.text(
        "MEMORY.md",
        "# MEMORY.md\n\n- Sam's gateway runs on the Mac Studio (2026-03-01)\n"
        "- Backups go to the NAS every night\n",
    )
    w.text(f"memory/{y1.isoformat()}.md", _daily(y1, ["18:00 Renewed the domain for a year."]))
    w.text(f"memory/{today.isoformat()}.md", _daily(today, ["09:00 Standup moved to 9:30."]))
    w.text(
        f"memory/{today.isoformat()}-1430.md",
        _session(
            today, "1430", "webchat", [("user", "Book the dentist"), ("assistant", "Booked.")]
        ),
    )
    w.text(
        "memory/2026-03-22-zhiji-E001.md",
        "# zhiji E001\n\n- Episode one of the zhiji podcast: notes on focus.\n",
    )
    w.text("memory/2026-01-05_1030.md", "# Meeting 2026-01-05 10:30\n\n- Budget approved.\n")
    w.text("memory/2026-02-30.md", "# Not a real day\n\n- A file with an impossible date.\n")
    w.text("memory/projects.md", "# Projects\n\n- Garden shed (spring)\n")
    w.text("memory/people/dana.md", "# Dana\n\nSister; birthday in May.\n")
    _vault(w)
    w.text("agents/research/MEMORY.md", "# Research agent\n\n- Sources must be cited.\n")
    w.text(f"agents/research/memory/{y1.isoformat()}.md", _daily(y1, ["11:00 Read two papers."]))
    w.built.agents.append("agents/research")


def _chinese(w: _Writer, today: dt.date) -> None:
    y1 = today - dt.timedelta(days=1)
    _persona(w, "小助手")
    w.text("USER.md", "# 用户\n\n- 名字：李华\n- 喜欢简短的回答。\n")
    w.text("MEMORY.md", "# 长期记忆\n\n- 每天检查心跳任务\n- 大同旅游计划在 memory/travel/ 里\n")
    # 心跳 (heartbeat) in six files, as in the real workspace.
    w.text(
        f"memory/{y1.isoformat()}.md", _daily(y1, ["08:00 心跳检查正常。", "20:00 订了火车票。"])
    )
    w.text(f"memory/{today.isoformat()}.md", _daily(today, ["07:30 心跳任务跑了两次。"]))
    for hhmm in ("0900", "1530"):
        w.text(
            f"memory/{y1.isoformat()}-{hhmm}.md",
            _session(y1, hhmm, "feishu", [("user", "心跳怎么配置？"), ("assistant", "每30分钟。")]),
        )
    w.text("memory/heartbeat-notes.md", "# 心跳笔记\n\n- 心跳间隔 30 分钟\n")
    w.text("memory/travel/datong.md", "# 大同旅游攻略\n\n- 云冈石窟\n- 华严寺\n")
    w.text("agents/writer/MEMORY.md", "# 写作助手\n\n- 文风：简洁\n")
    w.text(f"agents/writer/memory/{y1.isoformat()}.md", _daily(y1, ["09:00 写了心跳的说明。"]))
    w.built.agents.append("agents/writer")


def build(root: Path, shape: str, *, today: dt.date, outside: Path | None = None) -> Built:
    """Write one OpenClaw workspace of `shape` ("vi", "en" or "zh") into `root`.

    `today` names the daily notes (today's and yesterday's exist in every shape);
    `outside` is where the symlinked note really lives (default: `<root>-outside`)."""
    if shape not in SHAPES:
        raise ValueError(f"shape is one of {', '.join(SHAPES)}, not {shape!r}")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    if any(path.is_file() or path.is_symlink() for path in root.rglob("*")):
        raise ValueError(f"{root} already holds files")
    built = Built(root, shape, today)
    writer = _Writer(root, built)
    {"vi": _vietnamese, "en": _english, "zh": _chinese}[shape](writer, today)
    _skipped_things(writer, outside or root.with_name(root.name + "-outside"))
    return built


def big_note(root: Path, day: dt.date, chars: int) -> str:
    """Make today's (or any day's) plain note about `chars` long, as a transcript pasted
    into a note makes it; returns its workspace path."""
    rel = f"memory/{day.isoformat()}.md"
    line = "- 10:00 " + "pasted transcript line with some words in it " * 4 + "\n"
    count = max(1, chars // len(line))
    (root / "memory").mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(f"# {day.isoformat()}\n\n" + line * count, encoding="utf-8")
    return rel


if __name__ == "__main__":  # pragma: no cover - a tool for people
    if len(sys.argv) != 3 or sys.argv[1] not in SHAPES:
        sys.exit(f"usage: python -m tests.openclaw_workspace {{{','.join(SHAPES)}}} <empty dir>")
    result = build(Path(sys.argv[2]), sys.argv[1], today=dt.date.today())
    print(f"{len(result.files)} files written to {result.root}")
