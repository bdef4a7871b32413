"""POST /api/agents/{id}/memory-tool: Anthropic's memory tool (memory_20250818) on the
agent's dir — each command, the texts Claude expects, traversal, the presence rule."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memory.models import ApiToken
from proposals.models import Proposal

URL = "/api/agents/master/memory-tool"


@pytest.fixture
def home(master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "MEMORY.md").write_text("# Memory\n- likes tea\n- runs on Tuesdays\n")
    (workspace / "memory" / "2026-03-14.md").write_text("# 2026-03-14\n- 09:00 ran 5 km\n")
    (workspace / "users/owner/facts").mkdir(parents=True)
    (workspace / "users/owner/facts/tea.md").write_text("---\nname: tea\n---\nsecret fact\n")
    (workspace / "users/owner/USER.md").write_text("the owner\n")
    return workspace


def run(client, **command):
    return client.post(URL, command, format="json")


def test_view_lists_the_agents_dir_two_levels_deep(master_client, home):
    answer = run(master_client, command="view", path="/memories")
    assert answer.status_code == 200
    text = answer.json()["result"]
    assert text.startswith(
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden "
        "items:\n"
    )
    assert "\t/memories/MEMORY.md" in text and "\t/memories/memory/" in text
    assert "users" not in text and "USER.md" not in text  # nothing outside the agent's memory


def test_view_shows_a_file_with_line_numbers_and_a_range(master_client, home):
    text = run(master_client, command="view", path="/memories/MEMORY.md").json()["result"]
    assert text == (
        "Here's the content of /memories/MEMORY.md with line numbers:\n"
        "     1\t# Memory\n     2\t- likes tea\n     3\t- runs on Tuesdays\n     4\t"
    )
    ranged = run(master_client, command="view", path="/memories/MEMORY.md", view_range=[2, 2])
    assert ranged.json()["result"].endswith("\n     2\t- likes tea")


def test_create_writes_a_new_file_below_memory_once(master_client, home):
    answer = run(
        master_client, command="create", path="/memories/memory/books.md", file_text="# Books\n"
    )
    assert answer.json() == {"result": "File created successfully at: /memories/memory/books.md"}
    assert (home / "memory/books.md").read_text() == "# Books\n"
    again = run(master_client, command="create", path="/memories/memory/books.md", file_text="x")
    assert again.status_code == 409
    assert again.json()["detail"] == "File /memories/memory/books.md already exists"
    assert (home / "memory/books.md").read_text() == "# Books\n"


def test_str_replace_edits_memory_md_and_shows_the_snippet(master_client, home):
    answer = run(
        master_client,
        command="str_replace",
        path="/memories/MEMORY.md",
        old_str="likes tea",
        new_str="likes green tea",
    )
    assert answer.status_code == 200
    assert answer.json()["result"].startswith(
        "The memory file has been edited. Here is the snippet showing the change (with line "
        "numbers):\n     1\t# Memory\n     2\t- likes green tea"
    )
    assert "- likes green tea\n" in (home / "MEMORY.md").read_text()


def test_str_replace_refuses_a_missing_or_repeated_string(master_client, home):
    missing = run(
        master_client, command="str_replace", path="/memories/MEMORY.md", old_str="zz", new_str="y"
    )
    assert missing.status_code == 422
    assert missing.json()["detail"] == (
        "No replacement was performed, old_str `zz` did not appear verbatim in /memories/MEMORY.md."
    )
    twice = run(
        master_client, command="str_replace", path="/memories/MEMORY.md", old_str="- ", new_str="*"
    )
    assert "Multiple occurrences of old_str `- ` in lines: 2, 3" in twice.json()["detail"]
    assert (home / "MEMORY.md").read_text() == "# Memory\n- likes tea\n- runs on Tuesdays\n"


def test_insert_adds_a_line_at_a_position(master_client, home):
    answer = run(
        master_client,
        command="insert",
        path="/memories/memory/2026-03-14.md",
        insert_line=1,
        insert_text="- 08:00 woke up",
    )
    assert answer.json() == {"result": "The file /memories/memory/2026-03-14.md has been edited."}
    assert (home / "memory/2026-03-14.md").read_text() == (
        "# 2026-03-14\n- 08:00 woke up\n- 09:00 ran 5 km\n"
    )
    bad = run(
        master_client, command="insert", path="/memories/MEMORY.md", insert_line=9, insert_text="x"
    )
    assert bad.json()["detail"] == (
        "Invalid `insert_line` parameter: 9. It should be within the range [0, 3]."
    )


@pytest.mark.parametrize(
    "command",
    [
        {"command": "delete", "path": "/memories/memory/2026-03-14.md"},
        {"command": "rename", "old_path": "/memories/MEMORY.md", "new_path": "/memories/m.md"},
    ],
)
def test_delete_and_rename_are_refused_and_touch_nothing(master_client, home, command):
    answer = master_client.post(URL, command, format="json")
    assert answer.status_code == 422
    assert "never deleted or renamed" in answer.json()["detail"]
    assert (home / "memory/2026-03-14.md").exists() and (home / "MEMORY.md").exists()


@pytest.mark.parametrize(
    "path",
    [
        "/memories/../users/owner/USER.md",
        "/memories/../../etc/passwd",
        "/memories/users/owner/facts/tea.md",
        "/memories/memory/../../users/owner/facts/tea.md",
        "/memories/memory/%2e%2e/x.md",
        "/etc/passwd",
        "/memories/.memory-locks",
        "/memories/agents/helper/MEMORY.md",
    ],
)
def test_nothing_outside_the_agents_memory_is_reachable(master_client, helper_agent, home, path):
    (home / "agents/helper/MEMORY.md").write_text("helper secret\n")
    for command in [
        {"command": "view", "path": path},
        {"command": "create", "path": path, "file_text": "pwned"},
        {"command": "str_replace", "path": path, "old_str": "secret", "new_str": "pwned"},
        {"command": "insert", "path": path, "insert_line": 0, "insert_text": "pwned"},
    ]:
        answer = master_client.post(URL, command, format="json")
        assert answer.status_code in (404, 422), (command, answer.content)
        assert "secret" not in answer.content.decode()
    assert "pwned" not in "".join(p.read_text() for p in home.rglob("*.md"))


def test_wiki_pages_are_read_but_never_written_as_raw_files(master_client, home):
    (home / "memory/wiki/entities").mkdir(parents=True)
    (home / "memory/wiki/entities/eco.md").write_text("---\ntitle: Eco\n---\nbody\n")
    seen = run(master_client, command="view", path="/memories/memory/wiki/entities/eco.md")
    assert seen.status_code == 200
    answer = run(
        master_client,
        command="str_replace",
        path="/memories/memory/wiki/entities/eco.md",
        old_str="body",
        new_str="x",
    )
    assert answer.status_code == 422 and "wiki_apply" in answer.json()["detail"]


def test_a_job_tokens_edit_of_memory_md_is_a_proposal_and_changes_no_file(master, home):
    _, key = ApiToken.issue(agent=master, job="nightly")
    job = APIClient()
    job.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    before = (home / "MEMORY.md").read_bytes()
    answer = run(
        job, command="str_replace", path="/memories/MEMORY.md", old_str="tea", new_str="coffee"
    )
    assert answer.status_code == 202
    assert answer.json()["result"].startswith("Proposed for review (proposal #")
    proposal = Proposal.objects.get()
    assert (proposal.kind, proposal.source) == ("memory_rewrite", "job:nightly")
    assert "likes coffee" in proposal.payload["memory"]
    assert (home / "MEMORY.md").read_bytes() == before


def test_another_agents_token_gets_403(helper_client, home):
    assert run(helper_client, command="view", path="/memories").status_code == 403


def test_an_unknown_command_is_422(master_client, home):
    assert run(master_client, command="format", path="/memories").status_code == 422
