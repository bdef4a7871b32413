"""OpenClaw's memory-wiki pages are read, not damaged (SPEC §10.1): `id`, `pageType`,
`sourceIds`, `updatedAt`, `[[folder/slug|label]]` links, the `sources/` folder, OpenClaw's
`<!-- openclaw:wiki:related:start/end -->` blocks and its own reports. The vault is the
generated English OpenClaw workspace's (tests/openclaw_workspace.py)."""

from __future__ import annotations

import pytest
import yaml

from memory import clock
from tests.openclaw_workspace import RELATED_END, RELATED_START, build
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
    slugs = {page.slug for page in pages.list_pages(master)}
    assert slugs == {"alpha", "heartbeat", "alpha-notes", "raw-clipping"}


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
    assert ("dangling", "alpha", "[[syntheses/vendor-review]] → vendor-review: no such page") in (
        found
    )
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
