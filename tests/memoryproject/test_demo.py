"""`make demo`: fills an empty workspace, refuses a non-empty one."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.models import ScriptEntry
from proposals.models import Proposal


def test_it_fills_an_empty_workspace_so_every_tab_shows_something(pages, master, workspace):
    out = io.StringIO()
    call_command("memory_demo", stdout=out)
    assert "1 pending proposal" in out.getvalue()
    assert "Lan" in (workspace / "users/owner/USER.md").read_text()
    assert len(list((workspace / "users/owner/facts").glob("*.md"))) == 5  # 4 + INDEX.md
    assert len(list((workspace / "memory").glob("20*.md"))) == 5
    assert "(20" in (workspace / "MEMORY.md").read_text()
    assert (workspace / "memory/wiki/entities/eco-retreat.md").exists()
    assert Proposal.objects.filter(status="pending").count() == 1
    assert ScriptEntry.objects.count() == 3

    home = pages.get("/manage/memory/").content.decode()
    assert "Uống cà phê đen" in home and "stale" in home
    assert 'id="pending-badge">1<' in home
    page = pages.get("/manage/memory/wiki/master/pages/entities/eco-retreat/").content.decode()
    assert 'href="/manage/memory/wiki/master/pages/entities/minh/"' in page
    assert "Dế Mèn" in pages.get("/manage/memory/agents/master/").content.decode()
    assert "morning-bulletin" in pages.get("/manage/memory/scripts/master").content.decode()
    assert (
        "sách đang đọc"
        in pages.get("/manage/memory/search/?q=sach+dang+doc").content.decode().lower()
    )


def test_it_refuses_a_workspace_that_holds_a_file(master, workspace):
    (workspace / "MEMORY.md").write_text("- mine\n")
    with pytest.raises(CommandError, match="is not empty"):
        call_command("memory_demo", stdout=io.StringIO())
    assert (workspace / "MEMORY.md").read_text() == "- mine\n"
    assert not (workspace / "users/owner/USER.md").exists()


def test_it_fills_a_workspace_that_make_run_has_only_prepared(master, workspace):
    # `make run` makes only its hidden machinery (.memory-locks/, .memory-state/): that
    # is not memory, and the demo takes the workspace as empty.
    call_command("memory_init", stdout=io.StringIO())
    assert not (workspace / "MEMORY.md").exists()
    call_command("memory_demo", stdout=io.StringIO())
    assert (workspace / "MEMORY.md").read_text().strip()
