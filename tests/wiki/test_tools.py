"""The wiki tools (SPEC §10.4), through the tool registry and over REST."""

import pytest

from memory import tools, workspace
from memory.errors import InvalidInput
from memory.tools import list_tools
from wiki import pages

ARGS: dict = {}  # tool arguments never carry `source` (the caller states it)


def call_tool(agent, name, arguments):
    """A tool call from a chat: the runtime, not the arguments, says so."""
    return tools.call_tool(agent, name, arguments, source="chat")


def run_tool(agent, name, arguments):
    return tools.run_tool(agent, name, arguments, source="chat")


def apply(agent, **arguments):
    return call_tool(agent, "wiki_apply", {**ARGS, **arguments})


def test_the_wiki_tools_are_registered_with_schemas_and_descriptions():
    tools = {tool["name"]: tool for tool in list_tools()}
    for name in ("wiki_get", "wiki_search", "wiki_apply"):
        assert tools[name]["description"]
        assert tools[name]["parameters"]["type"] == "object"
    assert tools["wiki_apply"]["parameters"]["required"][:4] == ["title", "kind", "sources", "body"]


def test_wiki_apply_upserts_and_wiki_get_reads_by_title(master):
    text = apply(master, title="Hạn Eco", kind="entity", sources=["note:2026-11-20"], body="Due.")
    assert text.startswith("Created wiki page [han-eco] (memory/wiki/entities/han-eco.md)")
    text = apply(
        master, title="han eco", kind="entity", sources=["conv:7"], body="Due 5 Dec.",
        questions=["Who signs?"], status="review",
    )  # fmt: skip
    assert text.startswith("Updated wiki page [han-eco]")
    page = call_tool(master, "wiki_get", {**ARGS, "title": "HAN ECO"})
    assert page.startswith("[memory/wiki/entities/han-eco.md]\n---\ntitle: han eco\n")
    assert "Due 5 Dec." in page and "- Who signs?" in page and "status: review" in page
    assert page.endswith("<!-- wiki:related:end -->\n")


def test_wiki_apply_defaults_status_to_ok_and_clears_questions(master):
    apply(master, title="Eco", kind="entity", sources=["conv:1"], body="x", questions=["Q?"])
    apply(master, title="Eco", kind="entity", sources=["conv:1"], body="y")
    page = pages.get_page(master, "eco")
    assert (page.status, page.questions) == ("ok", [])


@pytest.mark.parametrize(
    "sources", [[], ["2026-11-20"], ["note:tomorrow"], ["conv:with space"], ["note:2026-13-01"]]
)
def test_wiki_apply_refuses_a_page_without_sources(master, workspace, sources):
    arguments = {**ARGS, "title": "Eco", "kind": "entity", "sources": sources, "body": "x"}
    with pytest.raises(InvalidInput):
        call_tool(master, "wiki_apply", arguments)
    assert run_tool(master, "wiki_apply", arguments).startswith("Error: ")
    assert not (workspace / "memory" / "wiki").exists()


def test_wiki_apply_without_a_sources_argument_is_an_error_string(master, workspace):
    arguments = {**ARGS, "title": "Eco", "kind": "entity", "body": "x"}
    assert run_tool(master, "wiki_apply", arguments) == "Error: Missing argument: sources."
    assert not (workspace / "memory" / "wiki").exists()


def test_wiki_apply_refuses_a_title_without_letters(master):
    result = run_tool(
        master, "wiki_apply", {**ARGS, "title": "?!", "kind": "entity", "sources": ["conv:1"],
                               "body": "x"}
    )  # fmt: skip
    assert result.startswith("Error: A title needs at least one letter or digit")


def test_wiki_get_of_an_unknown_page_is_an_error_like_memory_gets(master):
    assert run_tool(master, "wiki_get", {**ARGS, "title": "Nobody"}) == (
        "Error: No wiki page is titled 'Nobody' (page name 'nobody'). Try wiki_search."
    )
    assert run_tool(master, "memory_get", {**ARGS, "path": "memory/nobody.md"}).startswith(
        "Error: No such memory file"
    )


def test_wiki_search_uses_the_word_rules_of_memory_search(master):
    apply(master, title="Sách đang đọc", kind="concept", sources=["conv:1"],
          body="Dune, chương 3.\nĐọc tối nay.")  # fmt: skip
    apply(master, title="Docs", kind="concept", sources=["conv:1"], body="docstring rules")
    apply(master, title="Eco", kind="entity", sources=["conv:1"], body="Nothing here.")
    result = call_tool(master, "wiki_search", {**ARGS, "query": "sach dang doc"})
    assert result == "[sach-dang-doc] Sách đang đọc"
    # `doc` (3 letters) only matches whole words: not `docs` or `docstring`.
    assert call_tool(master, "wiki_search", {**ARGS, "query": "doc toi"}) == (
        "[sach-dang-doc] Đọc tối nay."
    )
    # `docs` (4 letters) matches inside `docstring` too.
    assert call_tool(master, "wiki_search", {**ARGS, "query": "docs"}) == "[docs] Docs"
    assert call_tool(master, "wiki_search", {**ARGS, "query": "zebra"}) == (
        'No wiki page matches "zebra".'
    )


def test_wiki_search_shows_partial_matches_when_no_page_has_every_word(master):
    apply(master, title="Eco", kind="entity", sources=["conv:1"], body="deadline friday")
    assert call_tool(master, "wiki_search", {**ARGS, "query": "deadline zebra"}) == (
        "[eco] deadline friday"
    )


def test_wiki_search_returns_at_most_eight_pages_and_skips_the_machine_block(master):
    for index in range(10):
        apply(master, title=f"Page {index}", kind="entity", sources=["conv:1"],
              body=f"alpha {index} [[Hub]]")  # fmt: skip
    apply(master, title="Hub", kind="concept", sources=["conv:1"], body="the hub")
    lines = call_tool(master, "wiki_search", {**ARGS, "query": "alpha"}).split("\n")
    assert len(lines) == 8
    # The hub's machine block names every page; searching its backlinks finds nothing there.
    assert "[hub]" not in call_tool(master, "wiki_search", {**ARGS, "query": "page"})


def test_the_tools_over_rest(master_client, master):
    answer = master_client.post(
        "/api/agents/master/tools/wiki_apply",
        {"title": "Eco", "kind": "entity", "sources": [], "body": "x"},
        format="json",
    )
    assert answer.status_code == 422
    answer = master_client.post(
        "/api/agents/master/tools/wiki_apply",
        {"title": "Eco", "kind": "entity", "sources": ["conv:1"], "body": "x"},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    assert workspace.exists("memory/wiki/entities/eco.md")
    answer = master_client.post(
        "/api/agents/master/tools/wiki_get", {"title": "eco"}, format="json"
    )
    assert answer.json()["result"].startswith("[memory/wiki/entities/eco.md]")
