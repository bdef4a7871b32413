"""`make demo`: fill an EMPTY workspace with a small demo so every tab of the management
pages shows something real. Refuses (exit code 1) to touch a workspace that holds any file.

Everything is written through the same operations the API uses (facts, notes, wiki pages,
the presence rule that turns a job's write into a proposal, the script store), so the demo
is exactly what those would have produced.
"""

from __future__ import annotations

import datetime as dt
import os

from django.core.management.base import BaseCommand, CommandError

from memory import clock, facts, notes, scripts, workspace
from memory.agents import default_agent
from memory.attribution import attributed
from memory.binding import require_own_workspace
from memory.jobs.nightly import consolidate_agent
from memory.models import Agent
from memory.writes import add_memory_lines_or_propose
from wiki import pages as wiki_pages

USER_MD = """\
# Lan

- Tên: Nguyễn Thị Lan. Làm kế toán cho một công ty du lịch ở Đà Nẵng.
- Thích câu trả lời ngắn, gạch đầu dòng, tiếng Việt; thuật ngữ kỹ thuật giữ tiếng Anh.
- Prefers metric units and 24-hour times.
- Đang đọc: "Dế Mèn phiêu lưu ký" (đọc lại cùng con).
"""


def _facts(today: dt.date) -> list[dict]:
    return [
        {
            "name": "coffee",
            "type": "preference",
            "description": "Uống cà phê đen, không đường, trước 9 giờ sáng",
            "body": "Sau 2 giờ chiều thì không uống cà phê nữa (khó ngủ).",
        },
        {
            "name": "eco-retreat",
            "type": "project",
            "description": "Eco Retreat Hội An: hồ sơ xin tài trợ, hạn nộp 15/12",
            "body": "Lan phụ trách phần ngân sách. Xem trang wiki *Eco Retreat*.",
        },
        {
            "name": "answer-style",
            "type": "feedback",
            "description": "Short answers first, details only when asked",
            "body": "Said on Telegram after a long reply: “ngắn thôi em”.",
        },
        {
            "name": "old-gym",
            "type": "reference",
            "description": "Phòng gym cũ ở đường Lê Duẩn (đã chuyển đi?)",
            "body": "Not confirmed for a long time — the list marks it stale.",
            "updated": (today - dt.timedelta(days=200)).isoformat(),
        },
    ]


def _memory_md(today: dt.date) -> str:
    d = [(today - dt.timedelta(days=n)).isoformat() for n in (0, 2, 30, 120)]
    return f"""\
# MEMORY.md

- Lan lives in Đà Nẵng; time zone Asia/Ho_Chi_Minh. ({d[2]})
- Báo cáo tài chính gửi anh Minh mỗi thứ Sáu trước 17:00. ({d[1]})
- Lịch chạy bộ: thứ Ba, thứ Năm, 5 km quanh cầu Rồng. ({d[0]})
- Ngưỡng huyết áp cần nhắc: trên 140/90. ({d[3]})
- Morning bulletin goes out at 07:00 on Telegram.
"""


def _notes(today: dt.date) -> dict[str, str]:
    days = [today - dt.timedelta(days=n) for n in range(4)]
    return {
        days[3].isoformat(): (
            f"# {days[3].isoformat()}\n\n"
            "- 08:10 Lan hỏi về hạn nộp hồ sơ Eco Retreat: 15/12.\n"
            "- 14:30 Sent the budget draft (v1) to Minh for review.\n"
        ),
        days[2].isoformat(): (
            f"# {days[2].isoformat()}\n\n"
            "- 07:00 Bulletin sent: weather 27°C, light rain.\n"
            "- 21:15 Sách đang đọc: Dế Mèn phiêu lưu ký, chương 4.\n"
        ),
        f"{days[1].isoformat()}-1030": (
            f"# {days[1].isoformat()} — họp Eco Retreat\n\n"
            "- Chị Hoa (bên tài trợ) muốn thêm mục chi phí vận chuyển.\n"
            "- Open question: who signs the contract, Lan or Minh?\n"
        ),
        days[1].isoformat(): (
            f"# {days[1].isoformat()}\n\n"
            "- 06:45 Chạy bộ 5.2 km, 31 phút.\n"
            "- 18:20 Huyết áp 128/82.\n"
        ),
        days[0].isoformat(): (
            f"# {days[0].isoformat()}\n\n"
            "- 07:00 Bulletin sent: 29°C, sunny.\n"
            "- 09:05 Lan: từ nay gửi báo cáo cho anh Minh vào thứ Năm thay vì thứ Sáu.\n"
        ),
    }


def _wiki_pages(today: dt.date) -> list[dict]:
    yesterday = (today - dt.timedelta(days=1)).isoformat()
    three = (today - dt.timedelta(days=3)).isoformat()
    return [
        {
            "title": "Eco Retreat",
            "kind": "entity",
            "sources": [f"note:{three}", f"note:{yesterday}-1030"],
            "questions": ["Ai ký hợp đồng: Lan hay anh Minh?"],
            "body": (
                "Hồ sơ xin tài trợ cho khu nghỉ dưỡng sinh thái ở Hội An.\n\n"
                "- **Hạn nộp:** 15/12.\n"
                "- Ngân sách do Lan phụ trách; bản nháp v1 đã gửi cho [[Minh|anh Minh]].\n"
                "- Chị Hoa (bên tài trợ) muốn thêm mục chi phí vận chuyển.\n"
            ),
        },
        {
            "title": "Minh",
            "kind": "entity",
            "sources": [f"note:{three}", f"note:{today.isoformat()}"],
            "questions": [],
            "body": (
                "Lan's manager. Receives the weekly finance report — now on **Thursdays** "
                "(changed today), before 17:00.\n\nReviewing the budget of [[Eco Retreat]].\n"
            ),
        },
    ]


def is_generated(path: str) -> bool:
    """A file the app writes by itself, which holds no one's memory: the wiki's lint
    reports (regenerated whole from the pages, SPEC §10.6) and INDEX.md (regenerated from
    the facts). Lock files and hidden files are never listed at all."""
    parts = path.split("/")
    if parts[-1] == "INDEX.md" and path.startswith("users/owner/facts/"):
        return True
    return len(parts) >= 4 and parts[-3:-1] == ["wiki", "reports"] and parts[-4] == "memory"


def workspace_files() -> list[str]:
    """Every file in the workspace that holds someone's memory: not the empty MEMORY.md
    files start-up creates, not lock or hidden files, not what the app generates."""
    return [
        info.path
        for info in workspace.list_files("", suffix="", recursive=True)
        if info.size and not is_generated(info.path)
    ]


class Command(BaseCommand):
    help = "Fill an empty workspace with a small demo (refuses a workspace that holds files)."

    def handle(self, *args, **options) -> None:
        require_own_workspace()
        existing = workspace_files()
        if existing:
            raise CommandError(
                f"The workspace {workspace.root()} is not empty ({len(existing)} file(s), e.g. "
                f"{existing[0]}). The demo only fills an empty workspace; point MY_AGENT_HOME "
                "at an empty directory, e.g. MY_AGENT_HOME=/tmp/demo-home make demo."
            )
        summary = fill_demo()
        self.stdout.write(summary)


def fill_demo() -> str:
    """Write the demo. Returns a short summary of what was written."""
    master = default_agent()
    helper, _ = Agent.objects.get_or_create(id="researcher", defaults={"name": "Researcher"})
    today = clock.today()

    with attributed(actor="owner", source="web", via="command"):
        facts.write_user(USER_MD)
    # What the agents wrote in their conversations (the feed of what was remembered lists
    # these, SPEC §7): facts and notes from Telegram, the wiki pages master keeps.
    with attributed(actor=f"agent:{master.pk}", source="telegram", via="command"):
        _agents_writes(master, helper, today)
    # A scheduled job may not write durable memory by itself: this becomes the one
    # pending proposal (Memory → Proposals).
    _, proposal = add_memory_lines_or_propose(
        master,
        [f"Báo cáo tài chính gửi anh Minh mỗi thứ Năm trước 17:00. ({today.isoformat()})"],
        source="job:demo-nightly",
    )
    return _finish(master, proposal, today)


def _agents_writes(master: Agent, helper: Agent, today: dt.date) -> None:
    for fact in _facts(today):
        updated = fact.pop("updated", None)
        if updated:
            # An old confirmation date, so the list shows what a stale fact looks like.
            text = facts.render_fact(
                **fact, written_by="master", source="telegram", updated=updated
            )
            workspace.write(facts.fact_path(fact["name"]), text)
        else:
            facts.save_fact(**fact, written_by="master", source="telegram")
    facts.regenerate_index()

    for name, text in _notes(today).items():
        notes.write_note(master, name, text)
    notes.write_memory(master, _memory_md(today))

    with attributed(actor=f"agent:{helper.pk}", source="telegram", via="command"):
        notes.write_note(
            helper,
            today.isoformat(),
            f"# {today.isoformat()}\n\n"
            "- 10:00 Found 3 eco-tourism grant programmes in Quảng Nam.\n",
        )
        notes.write_memory(
            helper, "- Research notes for Lan's projects. (" + today.isoformat() + ")\n"
        )
    for page in _wiki_pages(today):
        wiki_pages.save_page(master, **page)


def _finish(master: Agent, proposal, today: dt.date) -> str:
    # A real run for Activity: MEMORY.md is newer than every note, so consolidation has
    # nothing to do and records itself as skipped — no model is called.
    run = consolidate_agent(master, trigger="demo")

    scripts.store(master, "schedule", "morning-bulletin", "last_sent", today.isoformat())
    scripts.store(master, "schedule", "morning-bulletin", "sent_count", 42)
    scripts.store(
        master,
        "conversation",
        "telegram-1042",
        "reading_list",
        [{"title": "Dế Mèn phiêu lưu ký", "chapter": 4}],
    )
    port = os.environ.get("PORT") or "8000"
    root = workspace.root()
    return (
        f"Demo written to {root}:\n"
        "  USER.md, 4 facts (one stale), MEMORY.md with dated lines,\n"
        "  5 daily notes of master (Vietnamese and English), one of researcher,\n"
        "  2 linked wiki pages (Eco Retreat ↔ Minh),\n"
        f"  1 pending proposal (#{proposal.pk}: a MEMORY.md line from a job),\n"
        "  3 script-store entries,\n"
        f"  1 consolidation run in Activity ({run.status}: {run.summary}).\n"
        f"Start it with `MY_AGENT_HOME={root} make run` (this database now serves that "
        f"workspace) and open http://127.0.0.1:{port}/manage/memory/\n"
    )
