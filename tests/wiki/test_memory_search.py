"""memory_search covers the wiki's pages (SPEC §6.1) — their author text, not the
generated block that lists every neighbour."""

from memory import search, tools
from wiki import pages


def call_tool(agent, name, arguments):
    """A tool call from a chat: the runtime, not the arguments, says so."""
    return tools.call_tool(agent, name, arguments, source="chat")


def run_tool(agent, name, arguments):
    return tools.run_tool(agent, name, arguments, source="chat")


def test_memory_search_finds_wiki_pages_by_their_own_text(master):
    pages.save_page(master, title="Zebra Hub", kind="concept", sources=["conv:1"], body="Hub.")
    for index in range(5):
        pages.save_page(
            master, title=f"Okapi {index}", kind="entity", sources=["conv:1"],
            body=f"Okapi number {index}, see [[Zebra Hub]].",
        )  # fmt: skip
    hits = search.search("okapi", agent=master)
    paths = {hit.path for hit in hits if "/wiki/" in hit.path and "/reports/" not in hit.path}
    # Each Okapi page is found by its body; the hub's block lists all five, and is not.
    assert paths == {f"memory/wiki/entities/okapi-{index}.md" for index in range(5)}
    result = call_tool(master, "memory_search", {"query": "zebra hub"})
    assert "[memory/wiki/concepts/zebra-hub.md:" in result
