"""OpenClaw's memory-wiki pages are read, not damaged (SPEC §10.1): `id`, `pageType`,
`sourceIds`, `updatedAt`, `[[folder/slug|label]]` links, the `sources/` folder, OpenClaw's
`<!-- openclaw:wiki:related:start/end -->` blocks and its own reports. The vault is the
generated English OpenClaw workspace's (tests/openclaw_workspace.py)."""

from __future__ import annotations

import pytest
import yaml

from memory import clock
from memory.errors import InvalidInput
from tests.openclaw_workspace import RELATED_END, RELATED_START, SAME_NAMED, build
from wiki import lint, pages
from wiki.vault import clear_cache, load

VAULT = "memory/wiki"


@pytest.fixture
def vault(workspace, master):
    clear_cache()
    built = build(workspace, "en", today=clock.today())
    return built.root / VAULT


def files_of(root) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_pages_are_read_as_what_they_are(vault, master):
    alpha = pages.get_page(master, "alpha")
    assert (alpha.title, alpha.kind, alpha.status, alpha.updated) == (
        "Alpha",
        "entity",
        "active",
        "2026-03-20",
    )
    assert alpha.sources == ["source.alpha-notes"]
    assert alpha.questions == ["Is the Alpha contract renewed?"]
    # sources/ is a folder of pages; a raw source takes its title from its heading.
    source = pages.get_page(master, "alpha-notes")
    assert (source.folder, source.kind, source.title) == ("sources", "source", "Alpha notes")
    assert pages.get_page(master, "raw-clipping").title == "A clipping"
    # OpenClaw's files that are not pages stay out of the vault.
    keys = {page.key for page in pages.list_pages(master)}
    assert keys == {
        "entities/alpha",
        "concepts/heartbeat",
        "sources/alpha-notes",
        "sources/raw-clipping",
        *SAME_NAMED,  # one file name in two folders: two pages
    }


def test_folder_links_resolve_and_openclaws_related_block_is_not_the_authors(vault, master):
    alpha = pages.get_page(master, "alpha")
    out = {link["slug"]: link["exists"] for link in alpha.links_out}
    assert out == {"heartbeat": True, "vendor-review": False}
    assert [link["slug"] for link in alpha.links_in] == ["heartbeat"]
    # The body shown and edited is the author's; OpenClaw's Related block is kept apart.
    assert RELATED_START not in alpha.body
    assert alpha.body.endswith("<!-- openclaw:human:end -->")


def test_a_refresh_and_the_report_leave_every_openclaw_file_as_it_is(vault, master):
    before = files_of(vault)
    report = pages.report(master)
    # The report is computed on read: nothing is written (SPEC §10.6).
    assert files_of(vault) == before
    assert report["reports"]["open_questions"].endswith("reports/open-questions.md")
    pages.refresh(master)  # what an edit or a compile does
    after = files_of(vault)
    assert {path: data for path, data in after.items() if path in before} == before
    # Its own reports/open-questions.md is OpenClaw's: not overwritten.
    assert set(after) - set(before) == {"reports/stale.md"}


def test_lint_reports_real_problems_not_field_names(vault, master):
    issues = lint.lint(load(master), today=clock.today())
    found = {(issue.kind, issue.slug, issue.detail) for issue in issues}
    # A folder link names that page (SPEC §10.1: a page is its path).
    detail = "[[syntheses/vendor-review]] → syntheses/vendor-review: no such page"
    assert ("dangling", "alpha", detail) in found
    assert not [issue for issue in issues if issue.kind in ("unsourced", "review")]
    assert not [issue for issue in issues if "not a date" in issue.detail]
    stale = {issue.slug for issue in issues if issue.kind == "stale"}
    assert "raw-clipping" not in stale  # a raw source opts out of freshness, as in OpenClaw


def test_a_put_keeps_openclaws_marker_block_and_fields(vault, master, owner_client):
    path = vault / "entities/alpha.md"
    original = path.read_text()
    tail = original[original.index("## Related\n") :]
    response = owner_client.put(
        "/api/agents/master/memory/wiki/pages/alpha",
        {"body": "# Alpha\n\nAlpha sells the [[concepts/heartbeat|heartbeat]] monitor."},
        format="json",
    )
    assert response.status_code == 200, response.content
    text = path.read_text()
    assert text.endswith(tail)  # OpenClaw's block, byte for byte
    assert text.count("## Related") == 1
    assert RELATED_START in text and RELATED_END in text
    assert "related-quoted" not in text and "wiki:related:start —" not in text
    header = yaml.safe_load(text.split("---\n")[1])
    assert list(header)[:4] == ["pageType", "id", "title", "sourceIds"]
    assert header["pageType"] == "entity" and header["id"] == "entity.alpha"
    assert header["sourceIds"] == ["source.alpha-notes"]
    assert not {"kind", "sources", "updated"} & set(header)
    assert str(header["updatedAt"]).startswith(clock.today().isoformat()[:4])
    assert "Alpha sells the [[concepts/heartbeat|heartbeat]] monitor." in text
    # The pages linked to are not touched either (they are OpenClaw's).
    assert (vault / "concepts/heartbeat.md").read_bytes() == files_of(vault)[
        "concepts/heartbeat.md"
    ]


def test_the_apps_own_pages_keep_their_block_beside_openclaws(vault, master):
    before = (vault / "concepts/heartbeat.md").read_bytes()
    pages.save_page(
        master,
        title="Kiln",
        kind="entity",
        sources=["note:2026-03-20"],
        body="Watched by the [[concepts/heartbeat|heartbeat]]; see [[Alpha]].",
    )
    kiln = (vault / "entities/kiln.md").read_text()
    assert "<!-- wiki:related:start" in kiln
    assert "- [[heartbeat|Heartbeat]]\n" in kiln and "- [[alpha|Alpha]]\n" in kiln
    assert (vault / "concepts/heartbeat.md").read_bytes() == before
    assert [link["slug"] for link in pages.get_page(master, "heartbeat").links_in] == [
        "alpha",
        "kiln",
    ]


def test_a_source_page_keeps_its_kind_and_ids_when_edited(vault, master):
    pages.save_page(master, slug="alpha-notes", body="# Alpha notes\n\nMore.", partial=True)
    text = (vault / "sources/alpha-notes.md").read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["pageType"] == "source" and "kind" not in header
    assert header["sourceType"] == "local-file"


# --- a page is its path: one file name in two folders (SPEC §10.1) --------------------------


def test_same_named_pages_in_two_folders_are_two_pages(vault, master):
    concept_key, source_key = SAME_NAMED
    concept, source = pages.get_page(master, concept_key), pages.get_page(master, source_key)
    assert (concept.kind, concept.title) == ("concept", "Alpha renewal")
    assert (source.kind, source.title) == ("source", "Alpha renewal call")
    assert concept.name == concept_key and source.name == source_key
    with pytest.raises(InvalidInput, match="Several wiki pages are named '0010-alpha-renewal'"):
        pages.get_page(master, "0010-alpha-renewal")
    # `[[sources/0010-alpha-renewal]]` opens the source, not the concept.
    out = {link["key"]: link["exists"] for link in concept.links_out}
    assert out == {source_key: True}
    assert [link["key"] for link in source.links_in] == [concept_key]
    # A title picks the page it is the title of.
    assert pages.get_page_by_title(master, "Alpha renewal call").key == source_key
    assert pages.get_page_by_title(master, "sources/0010-alpha-renewal").key == source_key
    # Search tells them apart by key.
    names = {hit.name for hit in pages.search_pages(master, "renewal")}
    assert names >= {concept_key, source_key}


def test_lint_reports_a_bare_link_that_matches_two_pages(vault, master):
    issues = lint.lint(load(master), today=clock.today())
    (ambiguous,) = [issue for issue in issues if issue.kind == "ambiguous"]
    assert ambiguous.key == SAME_NAMED[0]
    assert ambiguous.detail == (
        "[[0010-alpha-renewal]] matches concepts/0010-alpha-renewal, sources/0010-alpha-renewal: "
        "it opens concepts/0010-alpha-renewal; write [[concepts/0010-alpha-renewal]] or "
        "[[sources/0010-alpha-renewal]] to name one"
    )
    assert lint.shared_names(load(master)) == {
        "same_named": [list(SAME_NAMED)],
        "ambiguous_links": [
            {"page": SAME_NAMED[0], "link": "0010-alpha-renewal", "matches": list(SAME_NAMED)}
        ],
    }


def test_an_edit_of_an_openclaw_page_changes_only_what_was_edited(vault, master):
    path = vault / "concepts/0010-alpha-renewal.md"
    before = path.read_text().split("\n")
    pages.save_page(master, slug=SAME_NAMED[0], status="review", partial=True)
    after = path.read_text().split("\n")
    changed = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
    assert changed[0] == ("status: active", "status: review")
    assert changed[1][0] == "updatedAt: 2026-03-22T09:00:00.000Z"
    assert changed[1][1].startswith(f"updatedAt: {clock.today().year}") and len(changed) == 2
    # Unknown keys, their order and comments, flow lists and the Related block: as written.
    assert "reviewer: sam  # kept as written" in after
    assert "sourceIds: [source.0010-alpha-renewal]" in after


def test_a_body_edit_adds_no_frontmatter_and_no_status(vault, master):
    path = vault / "sources/raw-clipping.md"
    body = "<!-- openclaw:wiki:raw-source -->\n# A clipping\n\nPasted, then trimmed."
    pages.save_page(master, slug="sources/raw-clipping", body=body, partial=True)
    assert path.read_text() == body + "\n"
    alpha = vault / "sources/alpha-notes.md"
    header = alpha.read_text().split("---\n")[1]
    pages.save_page(master, slug="alpha-notes", body="# Alpha notes\n\nMore.", partial=True)
    new_header = alpha.read_text().split("---\n")[1]
    unchanged = [line for line in header.split("\n") if not line.startswith("updatedAt:")]
    assert [line for line in new_header.split("\n") if not line.startswith("updatedAt:")] == (
        unchanged
    )
    assert "status: ok" not in alpha.read_text()
