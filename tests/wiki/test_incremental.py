"""The incremental rebuild (wiki.graph.plan_blocks) must end where a full rebuild from disk
ends, whatever happens between passes — edits through the app, hand edits, deletes."""

import random
import threading

import pytest

from memory import workspace
from wiki import graph, pages, vault


def full_rebuild_changes(agent) -> dict:
    """What a full rebuild from the files alone would still rewrite (nothing, if every
    block is right) — parsed afresh, without touching this process's caches."""
    base = vault.vault_dir(agent)
    texts = {
        info.path: workspace.read(info.path)
        for info in workspace.list_files(base, recursive=True)
        if "/reports/" not in info.path
    }
    empty = vault.Vault(base, "fresh", {}, {}, [])
    return graph.block_changes(vault.with_changes(empty, texts))


def test_random_edits_leave_every_block_as_a_full_rebuild_would(master, monkeypatch):
    # Trust unchanged stamps at once (the writes here replace files: new inodes), so
    # records are not re-read for being recent and the incremental pass really works
    # from what it verified before.
    monkeypatch.setattr(vault, "RACY_NS", -(10**18))
    rng = random.Random(7)
    titles = [f"Page {index}" for index in range(12)]

    def body() -> str:
        return " ".join(f"[[{rng.choice(titles + ['Ghost'])}]]" for _ in range(rng.randrange(4)))

    for step in range(200):
        action = rng.random()
        title = rng.choice(titles)
        slug = vault.page_slug(title)
        existing = pages.find_page(master, slug)
        if action < 0.55 or existing is None:
            pages.save_page(
                master, title=title, kind=rng.choice(vault.KINDS), sources=["conv:1"], body=body()
            )
        elif action < 0.7:
            pages.delete_page(master, slug)
        elif action < 0.75:
            # Moved by hand to another folder (a new file, the old one deleted).
            folder = rng.choice([f for f in vault.FOLDERS if f != existing.folder])
            moved = existing.path.replace(f"/{existing.folder}/", f"/{folder}/")
            workspace.write(moved, workspace.read(existing.path))
            workspace.delete(existing.path)
            pages.refresh(master)
        elif action < 0.85:
            # A hand edit on disk between passes (another process, an editor).
            text = workspace.read(existing.path)
            workspace.write(existing.path, text.replace(existing.body, body() or "plain", 1))
            pages.refresh(master)
        else:
            # A retitle by hand: the pages linking to it must show the new title.
            text = workspace.read(existing.path)
            retitled = text.replace(f"title: {existing.title}\n", f"title: {title} v{step}\n", 1)
            workspace.write(existing.path, retitled)
            pages.refresh(master)
        assert full_rebuild_changes(master) == {}, f"step {step}"


@pytest.mark.django_db(transaction=True)  # the threads record file versions
def test_concurrent_edits_from_threads_lose_no_backlink(master):
    pages.save_page(master, title="Hub", kind="concept", sources=["conv:1"], body="Hub.")
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        try:
            for round_ in range(3):
                pages.save_page(
                    master, title=f"Spoke {index}", kind="entity", sources=["conv:1"],
                    body=f"Round {round_}: [[Hub]].",
                )  # fmt: skip
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(index,)) for index in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    hub = workspace.read("memory/wiki/concepts/hub.md")
    for index in range(6):
        assert f"- [[spoke-{index}|Spoke {index}]]\n" in hub
    assert full_rebuild_changes(master) == {}
