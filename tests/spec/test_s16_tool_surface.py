"""The tool surface over REST (SPEC §14.1, §16): GET /api/agents/{id}/tools and
POST /api/agents/{id}/tools/{tool}, called with agent tokens, checked on disk."""

from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

from tests.spec.steps import memory_token, proposals

FACTS = "users/owner/facts"


def call(client, agent_id, tool, source=None, **arguments):
    """POST a tool call; `source` is stated the runtime's way, in X-Memory-Source (the
    model's arguments never carry it)."""
    headers = {} if source is None else {"HTTP_X_MEMORY_SOURCE": source}
    return client.post(f"/api/agents/{agent_id}/tools/{tool}", arguments, format="json", **headers)


def fact_arguments(**overrides):
    return {
        "name": "prefers-short-answers",
        "description": "Wants answers in three lines or fewer",
        "type": "preference",
        "body": "Said so on 2026-11-30 after a long answer.",
        **overrides,
    }


# --- listing ------------------------------------------------------------------------------


def test_it_lists_the_tools_with_schemas_and_descriptions(master_client):
    response = master_client.get("/api/agents/master/tools")
    assert response.status_code == 200
    listed = {tool["name"]: tool for tool in response.json()}
    for name in ["memory_save", "memory_search", "memory_get"]:
        assert listed[name]["description"]
    # Presence is the caller's: no tool lets the model state it (SPEC §16).
    assert all("source" not in tool["parameters"]["properties"] for tool in listed.values())
    assert "memory_context" not in listed  # REST runtimes have GET …/memory/context
    # Every tool of SPEC §16, the wiki's included (registered from WikiConfig.ready()).
    assert set(listed) >= {
        "memory_save",
        "memory_search",
        "memory_get",
        "user_memory_save",
        "user_memory_forget",
        "wiki_get",
        "wiki_search",
        "wiki_apply",
    }
    assert all(tool["description"] for tool in listed.values())


def test_another_agents_token_may_not_list_or_call_its_tools(
    helper_client, master, workspace, owner_today
):
    assert helper_client.get("/api/agents/master/tools").status_code == 403
    response = call(helper_client, "master", "memory_save", text="sneaky", source="chat")
    assert response.status_code == 403
    assert not (workspace / "memory" / f"{owner_today.isoformat()}.md").exists()


def test_anonymous_callers_are_turned_away(anon_client, master):
    assert anon_client.get("/api/agents/master/tools").status_code in (401, 403)
    assert call(anon_client, "master", "memory_save", text="x", source="chat").status_code in (
        401,
        403,
    )


def test_an_unknown_agent_is_404_for_the_owner(owner_client):
    assert owner_client.get("/api/agents/nobody/tools").status_code == 404


# --- memory_save --------------------------------------------------------------------------


def test_memory_save_appends_to_the_callers_note(helper_client, workspace, owner_today):
    response = call(helper_client, "helper", "memory_save", text="fed the cat", source="telegram")
    assert response.status_code == 200
    day = owner_today.isoformat()
    note = workspace / "agents" / "helper" / "memory" / f"{day}.md"
    text = note.read_text()
    line = text.splitlines()[-1]
    assert text == f"# {day}\n\n{line}\n"
    assert re.fullmatch(r"- \d\d:\d\d fed the cat", line)
    assert response.json() == {"result": f"Saved to memory/{day}.md: {line}"}


def test_the_owner_may_call_any_agents_tools(owner_client, helper_agent, workspace, owner_today):
    response = call(owner_client, "helper", "memory_save", text="from the owner", source="web")
    assert response.status_code == 200
    note = workspace / "agents" / "helper" / "memory" / f"{owner_today.isoformat()}.md"
    assert note.read_text().endswith(" from the owner\n")


def test_bad_arguments_are_422_and_write_nothing(master_client, workspace, owner_today):
    note = workspace / "memory" / f"{owner_today.isoformat()}.md"
    as_argument = master_client.post(
        "/api/agents/master/tools/memory_save", {"text": "x", "source": "chat"}, format="json"
    )
    assert as_argument.status_code == 422
    assert "`source` is not a tool argument" in as_argument.json()["detail"]
    unknown = call(master_client, "master", "memory_save", text="x", source="chat", tags=["a"])
    assert unknown.status_code == 422
    assert "Unknown argument: tags." in unknown.json()["detail"]
    wrong_type = call(master_client, "master", "memory_save", text=["x"], source="chat")
    assert wrong_type.status_code == 422
    assert "text must be of type string." in wrong_type.json()["detail"]
    missing = call(master_client, "master", "memory_save", source="chat")
    assert missing.status_code == 422
    assert "Missing argument: text." in missing.json()["detail"]
    empty = call(master_client, "master", "memory_save", text="", source="chat")
    assert empty.status_code == 422
    assert "text must not be empty." in empty.json()["detail"]
    not_an_object = master_client.post("/api/agents/master/tools/memory_save", ["x"], format="json")
    assert not_an_object.status_code == 422
    assert "must be a JSON object" in not_an_object.json()["detail"]
    not_json = master_client.post(
        "/api/agents/master/tools/memory_save", "{text", content_type="application/json"
    )
    assert not_json.status_code == 422
    assert not note.exists()


def test_an_unknown_tool_is_404(master_client):
    response = call(master_client, "master", "memory_delete", path="MEMORY.md", source="chat")
    assert response.status_code == 404
    assert "No tool named 'memory_delete'" in response.json()["detail"]


# --- memory_get ---------------------------------------------------------------------------


def test_memory_get_reads_a_memory_file_and_refuses_anything_else(
    master_client, helper_agent, workspace
):
    (workspace / "MEMORY.md").write_text("- master line\n")
    (workspace / "agents" / "helper" / "MEMORY.md").write_text("- helper secret\n")
    response = call(master_client, "master", "memory_get", path="MEMORY.md", source="chat")
    assert response.status_code == 200
    assert response.json() == {"result": "- master line\n"}

    for path in ["agents/helper/MEMORY.md", "../MEMORY.md", "%2e%2e/x.md", "/etc/passwd"]:
        refused = call(master_client, "master", "memory_get", path=path, source="chat")
        assert refused.status_code == 422, path
        assert "helper secret" not in refused.content.decode()

    missing = call(master_client, "master", "memory_get", path="memory/x.md", source="chat")
    assert missing.status_code == 404


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"from_line": "3"}, "from_line must be of type integer."),
        ({"from_line": True}, "from_line must be of type integer."),
        ({"from_line": 1.5}, "from_line must be of type integer."),
        ({"from_line": 0}, "from_line must be at least 1."),
        ({"lines": 0}, "lines must be at least 1."),
        ({"lines": 5001}, "lines must be at most 5000."),
    ],
)
def test_memory_get_checks_integer_arguments_strictly(master_client, workspace, extra, message):
    (workspace / "MEMORY.md").write_text("hello\n")
    response = call(master_client, "master", "memory_get", path="MEMORY.md", source="chat", **extra)
    assert response.status_code == 422
    assert message in response.json()["detail"]


def test_memory_get_pages_long_files_over_rest(master_client, workspace):
    (workspace / "memory").mkdir()
    (workspace / "memory" / "long.md").write_text("".join(f"{n}\n" for n in range(1, 301)))
    first = call(master_client, "master", "memory_get", path="memory/long.md", source="chat")
    assert first.json()["result"] == "".join(f"{n}\n" for n in range(1, 121)) + (
        "[… more: call memory_get with from_line=121]"
    )
    second = call(
        master_client, "master", "memory_get", path="memory/long.md", from_line=121, source="chat"
    )
    assert second.json()["result"] == "".join(f"{n}\n" for n in range(121, 241)) + (
        "[… more: call memory_get with from_line=241]"
    )
    rest = call(
        master_client, "master", "memory_get", path="memory/long.md", from_line=241, source="chat"
    )
    assert rest.json()["result"] == "".join(f"{n}\n" for n in range(241, 301))


# --- user_memory_save / user_memory_forget -------------------------------------------------


def test_user_memory_save_from_a_chat_writes_the_fact_and_the_index(
    helper_client, workspace, owner_client
):
    response = call(helper_client, "helper", "user_memory_save", **fact_arguments(), source="chat")
    assert response.status_code == 200
    assert response.json() == {
        "result": (
            "Saved users/owner/facts/prefers-short-answers.md (preference): Wants answers in "
            "three lines or fewer. INDEX.md is updated."
        )
    }
    fact = (workspace / FACTS / "prefers-short-answers.md").read_text()
    assert "written_by: helper\n" in fact
    assert "source: chat\n" in fact
    assert fact.endswith("Said so on 2026-11-30 after a long answer.\n")
    assert (workspace / FACTS / "INDEX.md").read_text() == (
        "- [prefers-short-answers](prefers-short-answers.md) (preference) — "
        "Wants answers in three lines or fewer\n"
    )
    assert proposals(owner_client) == []


def test_user_memory_save_from_a_job_only_proposes(master_client, workspace, owner_client):
    response = call(
        master_client, "master", "user_memory_save", **fact_arguments(), source="job:nightly"
    )
    assert response.status_code == 202
    [proposal] = proposals(owner_client)
    assert proposal["status"] == "pending"
    assert proposal["kind"] == "user_fact"
    assert proposal["source"] == "job:nightly"
    assert proposal["target"] == f"{FACTS}/prefers-short-answers.md"
    assert response.json()["result"] == (
        f"Proposed for review (proposal #{proposal['id']}): save the fact "
        "'prefers-short-answers'. Nothing is written until a person approves it."
    )
    assert response.json()["proposal"]["id"] == proposal["id"]
    assert not (workspace / FACTS / "prefers-short-answers.md").exists()
    assert not (workspace / FACTS / "INDEX.md").exists()


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"name": "Prefers Short"}, ""),
        ({"name": "../../MEMORY"}, ""),
        ({"name": ""}, ""),
        ({"type": "mood"}, "type must be one of"),
        ({"description": ""}, ""),
    ],
)
def test_user_memory_save_refuses_bad_facts_from_anyone(
    master_client, workspace, overrides, message, owner_client
):
    for source in ["chat", "job:nightly"]:
        response = call(
            master_client,
            "master",
            "user_memory_save",
            **fact_arguments(**overrides),
            source=source,
        )
        assert response.status_code == 422
        assert message in response.json()["detail"]
    assert not (workspace / FACTS).exists() or not any((workspace / FACTS).iterdir())
    assert proposals(owner_client) == []


def test_user_memory_forget_from_a_chat_deletes_and_from_a_job_proposes(
    master_client, workspace, owner_client
):
    call(master_client, "master", "user_memory_save", **fact_arguments(), source="chat")
    call(master_client, "master", "user_memory_save", **fact_arguments(name="tea"), source="chat")
    fact = workspace / FACTS / "prefers-short-answers.md"

    proposed = call(master_client, "master", "user_memory_forget", name="tea", source="job:nightly")
    assert proposed.status_code == 202
    [proposal] = proposals(owner_client)
    assert (proposal["kind"], proposal["status"]) == ("user_fact_forget", "pending")
    assert proposed.json()["result"] == (
        f"Proposed for review (proposal #{proposal['id']}): forget the fact 'tea'. Nothing is "
        "written until a person approves it."
    )
    assert (workspace / FACTS / "tea.md").exists()

    forgotten = call(
        master_client, "master", "user_memory_forget", name="prefers-short-answers", source="chat"
    )
    assert forgotten.status_code == 200
    assert forgotten.json() == {
        "result": "Forgot users/owner/facts/prefers-short-answers.md. INDEX.md is updated."
    }
    assert not fact.exists()
    assert "prefers-short-answers" not in (workspace / FACTS / "INDEX.md").read_text()

    unknown = call(master_client, "master", "user_memory_forget", name="nope", source="chat")
    assert unknown.status_code == 404


# --- memory_search ------------------------------------------------------------------------


def test_memory_search_finds_notes_and_facts_of_the_caller(master_client, helper_agent, workspace):
    (workspace / "memory").mkdir()
    (workspace / "memory" / "2025-01-02.md").write_text("# 2025-01-02\n\n- đọc sách Dune\n")
    (workspace / "agents" / "helper" / "memory" / "2025-01-02.md").write_text(
        "# 2025-01-02\n\n- helper đọc sách khác\n"
    )
    call(
        master_client,
        "master",
        "user_memory_save",
        **fact_arguments(name="reading", description="Đang đọc sách Dune", body="Book club"),
        source="chat",
    )
    response = call(master_client, "master", "memory_search", query="sach dune", source="chat")
    assert response.status_code == 200
    result = response.json()["result"]
    assert "[memory/2025-01-02.md:3] (2025-01-02 Thu) - đọc sách Dune" in result
    assert "[users/owner/facts/reading.md] Đang đọc sách Dune — Book club" in result
    assert "helper" not in result


def test_memory_search_refuses_a_query_without_words(master_client, workspace):
    response = call(master_client, "master", "memory_search", query="?!", source="chat")
    assert response.status_code == 422
    assert "no letters or digits" in response.json()["detail"]


def test_memory_search_says_so_when_nothing_matches(master_client, workspace):
    response = call(master_client, "master", "memory_search", query="zebra", source="chat")
    assert response.status_code == 200
    assert response.json() == {"result": 'No memory matches "zebra".'}


def test_memory_get_reads_every_path_memory_search_shows(helper_client, workspace):
    notes = workspace / "agents" / "helper" / "memory"
    (notes / "wiki" / "entities").mkdir(parents=True)
    (notes / "2025-01-02.md").write_text("# 2025-01-02\n\n- eco retreat deadline moved\n")
    (notes / "wiki" / "entities" / "eco-retreat.md").write_text("Eco retreat: deadline 3 March\n")
    (workspace / "agents" / "helper" / "MEMORY.md").write_text("- eco retreat is a client\n")
    call(
        helper_client,
        "helper",
        "user_memory_save",
        **fact_arguments(name="eco", description="Eco retreat project", body="Runs the deadline"),
        source="chat",
    )
    found = call(helper_client, "helper", "memory_search", query="eco", source="chat")
    paths = re.findall(r"^\[([^\]:]+)(?::\d+)?\]", found.json()["result"], re.MULTILINE)
    assert sorted(paths) == [
        "MEMORY.md",
        "memory/2025-01-02.md",
        "memory/wiki/entities/eco-retreat.md",
        "users/owner/facts/eco.md",
    ]
    for path in paths:
        response = call(helper_client, "helper", "memory_get", path=path, source="chat")
        assert response.status_code == 200, path
        assert "eco" in response.json()["result"].lower()


def test_the_wiki_tools_go_through_the_same_validation(master_client, workspace):
    page = {"title": "Eco Retreat", "kind": "entity", "body": "Deadline 3 March."}
    for sources in [None, [], ["note:2026-11-30", 7]]:
        arguments = dict(page)
        if sources is not None:
            arguments["sources"] = sources
        response = call(master_client, "master", "wiki_apply", **arguments)
        assert response.status_code == 422, sources
    assert not (workspace / "memory" / "wiki" / "entities" / "eco-retreat.md").exists()

    response = call(
        master_client, "master", "wiki_apply", **page, sources=["note:2026-11-30"], source="chat"
    )
    assert response.status_code == 200
    assert (workspace / "memory" / "wiki" / "entities" / "eco-retreat.md").exists()
    got = call(master_client, "master", "wiki_get", title="eco retreat", source="chat")
    assert "Deadline 3 March." in got.json()["result"]


# --- test_memory_tool_api.py --------------------
# POST /api/agents/{id}/memory-tool: Anthropic's memory tool (memory_20250818) on the
# agent's dir — each command, the texts Claude expects, traversal, the presence rule.


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


def test_a_job_tokens_edit_of_memory_md_is_a_proposal_and_changes_no_file(
    master, home, owner_client
):
    key = memory_token("agent", "master", "--job", "nightly")
    job = APIClient()
    job.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    before = (home / "MEMORY.md").read_bytes()
    answer = run(
        job, command="str_replace", path="/memories/MEMORY.md", old_str="tea", new_str="coffee"
    )
    assert answer.status_code == 202
    assert answer.json()["result"].startswith("Proposed for review (proposal #")
    [proposal] = proposals(owner_client)
    assert (proposal["kind"], proposal["source"]) == ("memory_rewrite", "job:nightly")
    assert "likes coffee" in proposal["payload"]["memory"]
    assert (home / "MEMORY.md").read_bytes() == before


def test_another_agents_token_gets_403(helper_client, home):
    assert run(helper_client, command="view", path="/memories").status_code == 403


def test_an_unknown_command_is_422(master_client, home):
    assert run(master_client, command="format", path="/memories").status_code == 422
