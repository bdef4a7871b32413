"""Pages (SPEC §10.1, §10.3): sources, folders, and the machine-owned block."""

import os

import pytest

from memory import clock, workspace
from memory.errors import InvalidInput, NotFound
from memory.text import MACHINE_BLOCK_END, MACHINE_BLOCK_START
from tests.wiki.conftest import page_file
from wiki import pages


def save(agent, title, body="", *, kind="entity", sources=("note:2026-11-20",), **extra):
    return pages.save_page(agent, title=title, kind=kind, sources=list(sources), body=body, **extra)


def block_of(text: str) -> str:
    return text[text.rindex(MACHINE_BLOCK_START) :]


def test_it_writes_a_page_with_frontmatter_body_and_machine_block(master):
    page = save(master, "Hạn Eco", "Due 5 Dec.", questions=["Who signs?"])
    text = workspace.read("memory/wiki/entities/han-eco.md")
    today = clock.today().isoformat()
    assert text == (
        "---\n"
        "title: Hạn Eco\n"
        "kind: entity\n"
        "sources:\n- note:2026-11-20\n"
        "questions:\n- Who signs?\n"
        "status: ok\n"
        f"updated: '{today}'\n"
        "---\n\n"
        "Due 5 Dec.\n\n"
        f"{MACHINE_BLOCK_START}\n## Related\n\nLinks out:\n- none\n\nLinked from:\n- none\n"
        f"{MACHINE_BLOCK_END}\n"
    )
    assert (page.status, page.updated, page.created) == ("ok", today, True)


@pytest.mark.parametrize(
    "sources",
    [
        [],
        None,
        ["2026-11-20"],
        ["note:yesterday"],
        ["note:2026-02-30"],
        ["note:2026-11-20.md"],
        ["conv:"],
        ["conv:has space"],
        ["note:2026-11-20", "web"],
    ],
)
def test_it_refuses_a_page_without_valid_sources_and_writes_nothing(master, workspace, sources):
    with pytest.raises(InvalidInput):
        pages.save_page(master, title="Eco", kind="entity", sources=sources, body="x")
    assert not (workspace / "memory" / "wiki").exists()


def test_it_accepts_suffixed_notes_and_conversations_as_sources(master):
    page = save(master, "Eco", sources=["note:2026-09-19-1030", "conv:tg-4411", "conv:tg-4411"])
    assert page.sources == ["note:2026-09-19-1030", "conv:tg-4411"]


def test_an_existing_page_keeps_its_folder_when_its_kind_changes(master):
    save(master, "Eco Retreat", kind="entity")
    page = save(master, "eco retreat", "now an idea", kind="concept")
    assert page.path == "memory/wiki/entities/eco-retreat.md"
    assert page.kind == "concept"
    assert not workspace.exists("memory/wiki/concepts/eco-retreat.md")
    assert "kind: concept\n" in workspace.read(page.path)


def test_slugs_are_unique_across_the_three_folders(master):
    save(master, "Eco", kind="synthesis")
    save(master, "ECO", kind="entity")
    page_files = [
        info.path
        for info in workspace.list_files("memory/wiki", recursive=True)
        if "/reports/" not in info.path
    ]
    assert page_files == ["memory/wiki/syntheses/eco.md"]
    assert [p.path for p in pages.list_pages(master)] == ["memory/wiki/syntheses/eco.md"]


def test_a_compile_or_edit_elsewhere_leaves_the_author_text_intact(master):
    save(master, "Alice", "Alice runs [[Eco Retreat]].")
    path = page_file(master, "entities", "alice")
    # A person edits the author part by hand: odd spacing, extra frontmatter, comments.
    hand = (
        workspace.read(path)
        .replace(
            "Alice runs [[Eco Retreat]].",
            "Alice   runs [[Eco Retreat]].  \n\n<!-- my note -->\n\n| a | b |\n|---|---|",
        )
        .replace("status: ok\n", "status: ok\nmood: sunny\n")
    )
    workspace.write(path, hand)
    author_part = hand[: hand.index(MACHINE_BLOCK_START)]
    save(master, "Eco Retreat", "Run by [[Alice]].", kind="concept")
    after = workspace.read(path)
    assert after.startswith(author_part)
    assert "- [[eco-retreat|Eco Retreat]]\n" in block_of(after)
    assert "Linked from:\n- [[eco-retreat|Eco Retreat]]\n" in block_of(after)


def test_the_machine_block_is_rewritten_whatever_was_in_it(master):
    save(master, "Alice", "Alice.")
    path = page_file(master, "entities", "alice")
    text = workspace.read(path)
    workspace.write(path, text.replace("- none\n\nLinked", "- [[fake|Forged]]\n\nLinked"))
    pages.refresh(master)
    assert workspace.read(path) == text


def test_a_block_pasted_into_a_body_is_not_trusted_and_is_neutralised(master):
    pasted = (
        f"Before.\n\n{MACHINE_BLOCK_START}\n## Related\n\nLinks out:\n- [[bob|Bob]]\n"
        f"{MACHINE_BLOCK_END}\n\nAfter the pasted block."
    )
    page = save(master, "Alice", pasted)
    text = workspace.read(page.path)
    # One real block, at the end; the pasted markers are defused and kept as text.
    assert text.count(MACHINE_BLOCK_START) == 1
    assert text.rstrip().endswith(MACHINE_BLOCK_END)
    assert "<!-- wiki:related-quoted:start" in text
    assert "After the pasted block.\n\n" + MACHINE_BLOCK_START in text
    # The pasted block's link is author text ([[bob|Bob]] is a real link of the body),
    # but nothing in it is read as the machine's: the real block is computed.
    assert page.body.startswith("Before.\n\n<!-- wiki:related-quoted:start")
    assert "After the pasted block." in pages.get_page(master, "alice").body


def test_a_hand_pasted_block_in_the_middle_is_never_the_machine_block(master):
    save(master, "Alice", "Alice.")
    path = page_file(master, "entities", "alice")
    text = workspace.read(path)
    author, block = text[: text.index(MACHINE_BLOCK_START)], block_of(text)
    forged = f"{MACHINE_BLOCK_START}\nLinks out:\n- [[x|X]]\n{MACHINE_BLOCK_END}\n"
    # Pasted by hand on disk (not through the app), followed by author text.
    workspace.write(path, author + forged + "\nMy text after it.\n\n" + block)
    page = pages.get_page(master, "alice")
    assert "My text after it." in page.body
    assert page.body.count(MACHINE_BLOCK_START) == 1  # the forged one is body text
    assert page.links_out == [{"slug": "x", "key": "", "folder": "", "title": "x", "exists": False}]


def test_backlinks_follow_an_edit_and_a_delete(master):
    save(master, "Alice", "Works with [[Bob]].")
    save(master, "Bob", "Bob.")
    bob = page_file(master, "entities", "bob")
    assert "Linked from:\n- [[alice|Alice]]\n" in workspace.read(bob)
    assert pages.get_page(master, "bob").links_in == [
        {
            "slug": "alice",
            "key": "entities/alice",
            "folder": "entities",
            "title": "Alice",
            "exists": True,
        }
    ]

    save(master, "Alice", "Works alone.")
    assert "Linked from:\n- none\n" in workspace.read(bob)

    save(master, "Alice", "Works with [[bob|Bobby]] again.")
    assert "Linked from:\n- [[alice|Alice]]\n" in workspace.read(bob)
    pages.delete_page(master, "alice")
    assert not workspace.exists(page_file(master, "entities", "alice"))
    assert "Linked from:\n- none\n" in workspace.read(bob)


def test_a_rebuild_writes_only_the_pages_whose_block_changed(master):
    save(master, "Alice", "Knows [[Bob]].")
    save(master, "Bob", "Bob.")
    save(master, "Carol", "Carol.")
    carol = workspace.resolve(page_file(master, "entities", "carol"))
    os.utime(carol, (1_000_000_000, 1_000_000_000))
    save(master, "Dave", "Knows [[Bob]] too.")
    assert os.stat(carol).st_mtime == 1_000_000_000  # untouched
    assert "- [[dave|Dave]]\n" in workspace.read(page_file(master, "entities", "bob"))
    assert pages.refresh(master).written == []  # nothing left to change


def test_get_page_is_404_for_an_unknown_slug_and_delete_too(master):
    with pytest.raises(NotFound):
        pages.get_page(master, "nobody")
    with pytest.raises(NotFound):
        pages.delete_page(master, "nobody")


def test_a_helper_agents_vault_lives_in_its_agent_dir(helper_agent, workspace):
    page = save(helper_agent, "Eco")
    assert page.path == "agents/helper/memory/wiki/entities/eco.md"
    assert (workspace / "agents/helper/memory/wiki/reports/stale.md").is_file()


def test_a_hand_edit_is_seen_at_once_even_with_the_same_size_and_time(master):
    save(master, "Alice", "Knows [[Bob]].")
    path = page_file(master, "entities", "alice")
    pages.list_pages(master)  # cached now
    real = workspace.resolve(path)
    stat = os.stat(real)
    text = workspace.read(path)
    workspace.write(path, text.replace("[[Bob]]", "[[Bo1]]"))  # same size
    os.utime(real, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime
    assert pages.get_page(master, "alice").links_out[0]["slug"] == "bo1"
