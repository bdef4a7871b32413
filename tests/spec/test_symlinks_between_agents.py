"""SPEC §14 (an agent token reaches only its own agent's memory) and §5 (memory_get refuses
"a symlink out"): a link inside one agent's dir that points at another agent's file must not
become a way to read or write that file. memory_get already refuses it; the other paths must
agree with it."""

from __future__ import annotations

import os

import pytest

from memory import clock

SECRET = "topsecret master memory\n"


@pytest.fixture
def linked(master, helper_agent, workspace):
    (workspace / "MEMORY.md").write_text(SECRET, encoding="utf-8")
    today = clock.today()
    os.symlink(workspace / "MEMORY.md", workspace / f"agents/helper/memory/{today}.md")
    return today


def test_it_refuses_memory_get_through_the_link(helper_client, linked):
    response = helper_client.post(
        "/api/agents/helper/tools/memory_get",
        data={"path": f"memory/{linked}.md"},
        format="json",
    )
    assert "topsecret" not in response.content.decode()


def test_it_never_appends_through_a_link_into_another_agents_file(helper_client, workspace, linked):
    helper_client.post(
        "/api/agents/helper/tools/memory_save",
        data={"text": "via link"},
        format="json",
    )
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == SECRET


def test_it_never_reads_another_agents_file_through_a_link(helper_client, workspace, linked):
    note = helper_client.get(f"/api/agents/helper/memory/notes/{linked}")
    context = helper_client.get("/api/agents/helper/memory/context", {"conversation": "c"})
    assert "topsecret" not in note.content.decode()
    assert "topsecret" not in context.content.decode()
