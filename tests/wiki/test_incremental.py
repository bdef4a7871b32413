"""The incremental rebuild (wiki.graph.plan_blocks), lint and reports must end where a full
pass from disk ends, whatever happens between passes — edits through the app, hand edits,
deletes — and a vault kept in one process must take in what changed: the app's writes (in
any process) at the very next load, hand edits within MEMORY_RECONCILE_SECONDS, the page
one opens at once."""

import datetime as dt
import os
import random
import threading
import time

import pytest

from memory import clock, workspace
from wiki import graph, lint, pages, vault


def full_rebuild_changes(agent) -> dict:
    """What a full rebuild from the files alone would still rewrite (nothing, if every
    block is right) — parsed afresh, without touching this process's caches."""
    base = vault.vault_dir(agent)
    texts = {
        info.path: workspace.read(info.path)
        for info in workspace.list_files(base, recursive=True)
        if "/reports/" not in info.path
    }
    return graph.block_changes(vault.from_texts(base, texts))


def test_random_edits_leave_every_block_as_a_full_rebuild_would(master, monkeypatch):
    # Trust unchanged stamps at once (the writes here replace files: new inodes), so
    # records are not re-read for being recent and the incremental pass really works
    # from what it verified before.
    monkeypatch.setattr(vault, "RACY_NS", -(10**18))
    rng = random.Random(7)
    titles = [f"Page {index}" for index in range(12)]

    def body() -> str:
        # Bare links, and links naming a folder (`[[sources/page-3]]`, as OpenClaw writes).
        targets = titles + ["Ghost"] + [f"{f}/page-{n}" for f in vault.FOLDERS for n in (1, 3)]
        return " ".join(f"[[{rng.choice(targets)}]]" for _ in range(rng.randrange(4)))

    shared = 0
    for step in range(200):
        action = rng.random()
        title = rng.choice(titles)
        slug = vault.page_slug(title)
        keys = vault.load(master).holders(slug)
        existing = pages.find_page(master, rng.choice(keys)) if keys else None
        if action < 0.55 or existing is None:
            pages.save_page(
                master, title=title, kind=rng.choice(vault.KINDS), sources=["conv:1"], body=body(),
                slug=existing.key if existing is not None else None,
            )  # fmt: skip
        elif action < 0.7:
            pages.delete_page(master, existing.key)
        elif action < 0.75:
            # Moved by hand to another folder (a new file, the old one deleted) — or, one
            # time in two, copied there: two pages of one name in two folders (SPEC §10.1).
            folder = rng.choice([f for f in vault.FOLDERS if f != existing.folder])
            moved = existing.path.replace(f"/{existing.folder}/", f"/{folder}/")
            workspace.write(moved, workspace.read(existing.path))
            if rng.random() < 0.5:
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
        shared += any(len(keys) > 1 for keys in vault.load(master).named.values())
    assert shared  # the walk did go through pages of one name in two folders


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


# --- lint and reports: the incremental ones end where a full pass from disk ends ----------


def full_lint(agent):
    """(issues, report texts) of a vault parsed afresh from the files alone."""
    base = vault.vault_dir(agent)
    texts = {
        info.path: workspace.read(info.path)
        for info in workspace.list_files(base, recursive=True)
        if "/reports/" not in info.path
    }
    fresh = vault.from_texts(base, texts)
    issues = lint.lint(fresh, today=clock.today())
    return issues, (lint.render_open_questions(fresh), lint.render_stale(fresh, issues))


def test_random_edits_keep_lint_and_reports_equal_to_a_full_pass(master, monkeypatch):
    monkeypatch.setattr(vault, "RACY_NS", -(10**18))
    rng = random.Random(11)
    titles = [f"Topic {index}" for index in range(10)]
    old = (clock.today() - dt.timedelta(days=200)).isoformat()
    shared = 0
    for step in range(120):
        title = rng.choice(titles)
        slug = vault.page_slug(title)
        keys = vault.load(master).holders(slug)
        existing = pages.find_page(master, rng.choice(keys)) if keys else None
        action = rng.random()
        if action < 0.6 or existing is None:
            targets = titles + ["Nowhere", "???", "sources/topic-1", "entities/topic-2"]
            links = " ".join(f"[[{rng.choice(targets)}]]" for _ in range(3))
            pages.save_page(
                master,
                title=title,
                kind=rng.choice(vault.KINDS),
                sources=[rng.choice(["conv:1", "note:2026-11-20"])],
                body=links,
                questions=rng.choice([[], [f"Why {step}?"]]),
                status=rng.choice(["ok", "ok", "review"]),
                slug=existing.key if existing is not None else None,
            )
        elif action < 0.7:
            pages.delete_page(master, existing.key)
        elif action < 0.78:
            # Copied by hand into another folder: two pages of one name (lint: ambiguous).
            folder = rng.choice([f for f in vault.FOLDERS if f != existing.folder])
            copy = existing.path.replace(f"/{existing.folder}/", f"/{folder}/")
            workspace.write(copy, workspace.read(existing.path))
            pages.refresh(master)
        else:
            # By hand: made stale, unsourced or retitled; taken in by the next refresh.
            text = workspace.read(existing.path)
            text = text.replace(f"updated: '{existing.updated}'", f"updated: '{old}'", 1)
            if rng.random() < 0.3:
                text = text.replace("sources:\n- ", "sources:\n- web ", 1)
            workspace.write(existing.path, text)
            pages.refresh(master)
        current = pages.load(master)
        issues, reports = full_lint(master)
        assert lint.lint(current, today=clock.today()) == issues, f"step {step}"
        questions_path, stale_path = lint.report_paths(current)
        assert (workspace.read(questions_path), workspace.read(stale_path)) == reports
        shared += any(issue.kind == "ambiguous" for issue in issues)
    assert shared  # lint did report bare links that match two pages


# --- freshness: app writes at once everywhere, hand edits within the bound ----------------


def _hand_edit_same_size_same_mtime(rel: str, old: str, new: str) -> None:
    """Replace `old` by `new` (same length) in place, then set the mtime back: only the
    ctime (which no user can set) tells the file changed."""
    assert len(old.encode()) == len(new.encode())
    path = workspace.resolve(rel)
    before = os.stat(path)
    text = path.read_text(encoding="utf-8")
    with open(path, "r+", encoding="utf-8") as handle:
        handle.write(text.replace(old, new, 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size


def test_a_page_opened_is_its_current_file_even_after_a_same_size_same_mtime_hand_edit(
    master, settings
):
    settings.MEMORY_RECONCILE_SECONDS = 3600  # no reconcile: only the page's own stat
    pages.save_page(master, title="Eco", kind="concept", sources=["conv:1"], body="Plan A.")
    time.sleep(vault.RACY_SECONDS + 0.05)
    assert pages.get_page(master, "eco").body == "Plan A."  # read, and now trusted
    _hand_edit_same_size_same_mtime("memory/wiki/concepts/eco.md", "Plan A.", "Plan B.")
    assert pages.get_page(master, "eco").body == "Plan B."


def test_a_hand_edit_elsewhere_shows_in_backlinks_within_the_reconcile_bound(
    master, settings, monkeypatch
):
    settings.MEMORY_RECONCILE_SECONDS = 10
    pages.save_page(master, title="Hub", kind="concept", sources=["conv:1"], body="Hub.")
    pages.save_page(master, title="Spoke", kind="entity", sources=["conv:1"], body="Alone.")
    time.sleep(vault.RACY_SECONDS + 0.05)
    pages.get_page(master, "spoke")  # trusted from here on
    path = "memory/wiki/entities/spoke.md"
    text = workspace.read(path)
    with open(workspace.resolve(path), "w", encoding="utf-8") as handle:  # by hand, in place
        handle.write(text.replace("Alone.", "See [[Hub]]."))
    # Within the bound another page's backlinks may still be the old ones …
    assert pages.get_page(master, "hub").links_in == []
    # … and once the bound has passed, the next load looks at every file.
    clock_now = time.monotonic() + 11
    monkeypatch.setattr(vault.time, "monotonic", lambda: clock_now)
    assert [row["slug"] for row in pages.get_page(master, "hub").links_in] == ["spoke"]


def test_a_lost_change_list_makes_the_next_load_look_at_every_file(master, settings):
    settings.MEMORY_RECONCILE_SECONDS = 3600
    pages.save_page(master, title="Hub", kind="concept", sources=["conv:1"], body="Hub.")
    pages.get_page(master, "hub")
    base = vault.vault_dir(master)
    workspace.ensure_dir(f"{base}/entities")
    with open(workspace.resolve(f"{base}/entities/spoke.md"), "w", encoding="utf-8") as handle:
        handle.write("---\ntitle: Spoke\nsources: [conv:1]\n---\n\nSee [[Hub]].\n")
    workspace.delete(vault.changes_path(base))  # lost: readers cannot trust what they know
    assert [row["slug"] for row in pages.get_page(master, "hub").links_in] == ["spoke"]


OTHER_PROCESS = """
import os, sys
sys.path.insert(0, {root!r})
os.environ["DJANGO_SETTINGS_MODULE"] = "memoryproject.settings"
os.environ["MY_AGENT_HOME"] = {home!r}
import django
django.setup()
from memory.models import Agent
from wiki import pages
agent = Agent(id="master", name="Master", is_default=True)
pages.save_page(agent, title="Spoke", kind="entity", sources=["conv:1"], body="To [[Hub]].")
pages.save_page(agent, title="Hub", kind="concept", sources=["conv:1"], body="Hub, renamed.")
"""


def test_an_edit_in_another_process_is_in_the_very_next_load_here(master, settings, workspace):
    import subprocess
    import sys
    from pathlib import Path

    settings.MEMORY_RECONCILE_SECONDS = 3600  # so only the change list can tell
    pages.save_page(master, title="Hub", kind="concept", sources=["conv:1"], body="Hub.")
    assert pages.list_pages(master)[0].body == "Hub."  # loaded and kept in this process
    root = str(Path(__file__).resolve().parents[2])
    script = OTHER_PROCESS.format(root=root, home=str(workspace))
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120, env=dict(os.environ))
    listed = {page.slug: page.body for page in pages.list_pages(master)}
    assert listed == {"hub": "Hub, renamed.", "spoke": "To [[Hub]]."}
    hub = pages.get_page(master, "hub")
    assert [row["slug"] for row in hub.links_in] == ["spoke"]
    assert full_rebuild_changes(master) == {}


def _every_file(root) -> dict:
    found = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            st = os.lstat(path)
            with open(path, "rb") as handle:
                found[path] = (handle.read(), st.st_mode)
    return found


def test_loading_and_reading_write_nothing(master, settings, workspace):
    pages.save_page(master, title="Hub", kind="concept", sources=["conv:1"], body="[[Spoke]]")
    base = vault.vault_dir(master)
    with open(workspace / base / "concepts" / "spoke.md", "w", encoding="utf-8") as handle:
        handle.write("---\ntitle: Spoke\n---\n\nBy hand, [[Hub]].\n")  # blocks now wrong
    vault.clear_cache()
    before = _every_file(workspace)
    settings.MEMORY_RECONCILE_SECONDS = 0  # every load looks at every file
    pages.get_page(master, "hub")
    pages.list_pages(master)
    pages.search_pages(master, "hub")
    report = pages.report(master)
    assert _every_file(workspace) == before
    assert report["counts"]["unsourced"] == 1  # the hand-made page, linted on read


def test_a_slug_that_cannot_be_a_file_is_simply_no_page(master):
    pages.save_page(master, title="Hub", kind="concept", sources=["conv:1"], body="Hub.")
    for slug in ["../../users/owner/USER", "a/b", "x\x00y", "..", "ｈｕｂ", ".hidden"]:
        assert pages.find_page(master, slug) is None
