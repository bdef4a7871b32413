"""SPEC §5 (memory_save appends `- HH:MM <text>` as a line) after the owner edited today's
note on the management pages (§15): a browser's textarea sends no final newline, and the
next saved line must still be a line of its own."""

from __future__ import annotations

import re

from django.test import Client

from memory import clock
from memory import workspace as ws


def test_it_keeps_a_saved_line_separate_after_a_page_edit(owner_client, alice, master, workspace):
    today = clock.today()
    (workspace / "memory").mkdir(exist_ok=True)
    path = workspace / f"memory/{today}.md"
    path.write_text(f"# {today}\n\n- 01:00 a\n", encoding="utf-8")
    client = Client()
    client.force_login(alice)
    edited = client.post(
        f"/manage/memory/agents/master/notes/{today}/",
        {"body": f"# {today}\r\n\r\n- 01:00 a edited", "base_hash": ws.hash_text(path.read_text())},
    )
    assert edited.status_code == 302
    owner_client.post(
        "/api/agents/master/tools/memory_save",
        data={"text": "after edit"},
        format="json",
    )
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[2] == "- 01:00 a edited"
    assert re.fullmatch(r"- \d\d:\d\d after edit", lines[3])
