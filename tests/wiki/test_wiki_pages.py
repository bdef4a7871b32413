"""The Wiki tab: vault by folder, search, page with links, edit, delete, lint, compile."""

from memory.models import Run
from wiki import pages as wiki_pages


def text_of(response) -> str:
    return response.content.decode()


def two_pages(agent):
    wiki_pages.save_page(
        agent,
        title="Hạn Eco Retreat",
        kind="entity",
        sources=["note:2026-11-28"],
        body="Hạn nộp hồ sơ là 15/12. Xem [[Lan|chị Lan]] và [[Trang chưa viết]].",
        questions=["Ai ký hợp đồng?"],
    )
    wiki_pages.save_page(
        agent,
        title="Lan",
        kind="entity",
        sources=["note:2026-11-29"],
        body="Chủ của dự án. Liên quan: [[Hạn Eco Retreat]].",
    )


def test_it_groups_the_vault_by_folder_with_the_lint_report(pages, master, workspace):
    two_pages(master)
    html = text_of(pages.get("/manage/memory/wiki/master/"))
    assert "<code>entities/</code>" in html and "<code>concepts/</code>" in html
    assert (
        'href="/manage/memory/wiki/master/pages/entities/han-eco-retreat/">Hạn Eco Retreat</a>'
        in html
    )
    assert "Lint report" in html
    assert "link to a missing page" in html  # the lint kind "dangling", in words
    assert "Ai ký hợp đồng?" in html


def test_it_searches_the_vault_with_folded_words(pages, master, workspace):
    two_pages(master)
    html = text_of(pages.get("/manage/memory/wiki/master/?q=han nop"))
    assert "Results for" in html
    assert "<mark>Hạn</mark> <mark>nộp</mark> hồ sơ là 15/12." in html


def test_it_renders_a_page_with_links_sources_and_questions(pages, master, workspace):
    two_pages(master)
    html = text_of(pages.get("/manage/memory/wiki/master/pages/entities/han-eco-retreat/"))
    assert (
        '<a href="/manage/memory/wiki/master/pages/entities/lan/" title="Lan" '
        'rel="noopener noreferrer">chị Lan</a>' in html
    )
    assert "<code>note:2026-11-28</code>" in html
    assert "Ai ký hợp đồng?" in html
    lan = text_of(pages.get("/manage/memory/wiki/master/pages/entities/lan/"))
    assert (
        "Linked from" in lan
        and 'href="/manage/memory/wiki/master/pages/entities/han-eco-retreat/"' in lan
    )


def test_it_edits_a_page_keeping_its_sources(pages, master, workspace):
    two_pages(master)
    form = text_of(pages.get("/manage/memory/wiki/master/pages/entities/lan/edit/"))
    assert "note:2026-11-29</textarea>" in form
    response = pages.post(
        "/manage/memory/wiki/master/pages/entities/lan/edit/",
        {
            "title": "Lan",
            "kind": "entity",
            "status": "review",
            "sources": "note:2026-11-29\r\nnote:2026-11-30",
            "questions": "Sinh nhật?",
            "body": "Chị Lan, chủ dự án.",
        },
    )
    assert response.status_code == 302
    text = (workspace / "memory/wiki/entities/lan.md").read_text()
    assert "note:2026-11-30" in text and "Chị Lan, chủ dự án." in text and "status: review" in text


def test_it_refuses_an_edit_without_sources_and_writes_nothing(pages, master, workspace):
    two_pages(master)
    before = (workspace / "memory/wiki/entities/lan.md").read_text()
    response = pages.post(
        "/manage/memory/wiki/master/pages/entities/lan/edit/",
        {"title": "Lan", "kind": "entity", "status": "ok", "sources": "  \r\n", "body": "x"},
    )
    assert response.status_code == 422
    assert "A page needs at least one source." in text_of(response)
    assert (workspace / "memory/wiki/entities/lan.md").read_text() == before


def test_it_refuses_a_rename_through_the_title(pages, master, workspace):
    two_pages(master)
    response = pages.post(
        "/manage/memory/wiki/master/pages/entities/lan/edit/",
        {
            "title": "Bà Lan",
            "kind": "entity",
            "status": "ok",
            "sources": "note:2026-11-29",
            "body": "x",
        },
    )
    assert response.status_code == 422
    assert 'value="Bà Lan"' in text_of(response)  # kept as typed, the error above the form
    assert not (workspace / "memory/wiki/entities/ba-lan.md").exists()


def test_it_creates_and_deletes_a_page(pages, master, workspace):
    response = pages.post(
        "/manage/memory/wiki/master/new/",
        {
            "title": "Chạy bộ",
            "kind": "concept",
            "status": "ok",
            "sources": "note:2026-11-30",
            "body": "Mỗi sáng 5 km.",
        },
    )
    assert response["Location"] == "/manage/memory/wiki/master/pages/concepts/chay-bo/"
    assert (workspace / "memory/wiki/concepts/chay-bo.md").exists()
    html = text_of(
        pages.post("/manage/memory/wiki/master/pages/concepts/chay-bo/delete/", follow=True)
    )
    assert "Page chay-bo deleted." in html
    assert not (workspace / "memory/wiki/concepts/chay-bo.md").exists()
    gone = text_of(
        pages.post("/manage/memory/wiki/master/pages/concepts/chay-bo/delete/", follow=True)
    )
    assert "Not found: No wiki page &#x27;concepts/chay-bo&#x27;." in gone


def test_it_answers_404_for_an_unknown_page(pages, master):
    assert pages.get("/manage/memory/wiki/master/pages/nobody/").status_code == 404
    assert pages.get("/manage/memory/wiki/master/pages/entities/nobody/").status_code == 404


def test_an_address_by_name_alone_opens_the_page_of_that_name(pages, master, workspace):
    two_pages(master)
    response = pages.get("/manage/memory/wiki/master/pages/lan/")
    assert response.status_code == 302
    assert response["Location"] == "/manage/memory/wiki/master/pages/entities/lan/"


def test_same_named_pages_in_two_folders_are_two_pages(pages, master, workspace):
    """SPEC §10.1: a page is its path. OpenClaw keeps a source beside the concept drawn
    from it, under one file name."""
    folder = workspace / "memory/wiki"
    for kind, folder_name in (("concept", "concepts"), ("source", "sources")):
        (folder / folder_name).mkdir(parents=True, exist_ok=True)
        (folder / folder_name / "0010-alpha.md").write_text(
            f"---\nid: {kind}.alpha\npageType: {kind}\ntitle: Alpha {kind}\n"
            f"sourceIds: [source.x]\nstatus: active\nupdatedAt: 2026-11-30\n---\n\n"
            f"The {kind} page. See [[sources/0010-alpha]] and [[0010-alpha]].\n"
        )
    html = text_of(pages.get("/manage/memory/wiki/master/"))
    for key in ("concepts/0010-alpha", "sources/0010-alpha"):
        assert f'href="/manage/memory/wiki/master/pages/{key}/"' in html
    assert "matches concepts/0010-alpha, sources/0010-alpha" in html  # lint: ambiguous
    source = text_of(pages.get("/manage/memory/wiki/master/pages/sources/0010-alpha/"))
    assert "The source page." in source and "The concept page." not in source
    concept = text_of(pages.get("/manage/memory/wiki/master/pages/concepts/0010-alpha/"))
    assert 'href="/manage/memory/wiki/master/pages/sources/0010-alpha/"' in concept
    assert pages.get("/manage/memory/wiki/master/pages/0010-alpha/").status_code == 404


def test_it_starts_a_compile_and_says_409_while_one_runs(pages, master, workspace):
    html = text_of(pages.post("/manage/memory/wiki/master/compile/", follow=True))
    run = Run.objects.get(agent=master, kind="compile")
    assert f"run #{run.pk} is recorded as skipped and nothing changed" in html  # no model
    if run.status != "running":
        from memory.jobs.runs import start_run

        start_run(master, "consolidate", trigger="test")
    again = text_of(pages.post("/manage/memory/wiki/master/compile/", follow=True))
    assert "Conflict: a consolidation or compile is already running for master" in again


def test_it_edits_only_the_author_text_never_the_generated_block(pages, master, workspace):
    from memory.text import MACHINE_BLOCK_START

    two_pages(master)
    files = list((workspace / "memory/wiki").rglob("*.md"))
    assert any(MACHINE_BLOCK_START in f.read_text() for f in files)  # blocks exist on disk
    slug = wiki_pages.list_pages(master)[0].slug
    html = text_of(pages.get(f"/manage/memory/wiki/master/pages/{slug}/edit/"))
    assert "wiki:related" not in html
