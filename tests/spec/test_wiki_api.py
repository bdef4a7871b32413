"""The wiki over REST (SPEC §14, §14.1)."""

import pytest

from memory import workspace
from memory.jobs import runs
from memory.models import Run
from memory.text import MACHINE_BLOCK_START
from wiki import compile as wiki_compile
from wiki import pages

BASE = "/api/agents/master/memory/wiki"


def put(client, slug, data, agent="master"):
    return client.put(f"/api/agents/{agent}/memory/wiki/pages/{slug}", data, format="json")


def test_it_creates_a_page_with_put_and_reads_it_back(owner_client, master):
    answer = put(
        owner_client,
        "han-eco",
        {
            "title": "Hạn Eco",
            "kind": "entity",
            "sources": ["note:2026-11-20"],
            "body": "See [[Bob]].",
        },
    )
    assert answer.status_code == 201
    page = owner_client.get(f"{BASE}/pages/han-eco").json()
    assert set(page) >= {
        "slug", "title", "kind", "status", "updated", "sources", "questions", "body",
        "links_out", "links_in",
    }  # fmt: skip
    assert page["title"] == "Hạn Eco"
    assert page["body"] == "See [[Bob]]."
    assert page["links_out"] == [{"slug": "bob", "title": "Bob", "exists": False}]
    assert workspace.exists("memory/wiki/entities/han-eco.md")


def test_put_changes_only_the_fields_sent_and_keeps_the_sources(owner_client, master):
    pages.save_page(
        master, title="Eco", kind="concept", sources=["note:2026-11-20", "conv:c7"],
        body="old", questions=["When?"], status="review",
    )  # fmt: skip
    answer = put(owner_client, "eco", {"body": "new body"})
    assert answer.status_code == 200
    page = answer.json()
    assert page["body"] == "new body"
    assert page["sources"] == ["note:2026-11-20", "conv:c7"]
    assert (page["kind"], page["status"], page["questions"]) == ("concept", "review", ["When?"])
    text = workspace.read("memory/wiki/concepts/eco.md")
    assert "- note:2026-11-20\n- conv:c7\n" in text


@pytest.mark.parametrize(
    "data",
    [
        {"title": "Eco", "kind": "entity", "body": "x"},
        {"title": "Eco", "kind": "entity", "sources": [], "body": "x"},
        {"title": "Eco", "kind": "entity", "sources": ["yesterday"], "body": "x"},
        {"title": "Eco", "kind": "entity", "sources": "note:2026-11-20", "body": "x"},
        {"title": "Eco", "kind": "thing", "sources": ["conv:1"], "body": "x"},
        {"title": "Eco", "sources": ["conv:1"], "body": "x"},
        {"title": "Other", "kind": "entity", "sources": ["conv:1"], "body": "x"},
        {"title": "Eco", "kind": "entity", "sources": ["conv:1"], "body": 5},
        ["not", "an", "object"],
    ],
)
def test_put_refuses_bad_pages_with_422_and_writes_nothing(owner_client, master, workspace, data):
    answer = put(owner_client, "eco", data)
    assert answer.status_code == 422, answer.content
    assert not (workspace / "memory" / "wiki").exists()


def test_put_cannot_drop_the_sources_of_an_existing_page(owner_client, master):
    pages.save_page(master, title="Eco", kind="entity", sources=["conv:1"], body="x")
    before = workspace.read("memory/wiki/entities/eco.md")
    assert put(owner_client, "eco", {"sources": []}).status_code == 422
    assert workspace.read("memory/wiki/entities/eco.md") == before


def test_put_on_a_slug_that_is_not_a_page_name_is_422(owner_client, master):
    answer = put(owner_client, "Not A Slug", {"kind": "entity", "sources": ["conv:1"]})
    assert answer.status_code == 422


def test_a_put_without_a_title_names_the_page_by_its_slug(owner_client, master):
    answer = put(owner_client, "eco", {"kind": "entity", "sources": ["conv:1"]})
    assert answer.status_code == 201
    assert answer.json()["title"] == "eco"


def test_put_and_delete_over_http_rebuild_the_backlinks(owner_client, master):
    pages.save_page(master, title="Bob", kind="entity", sources=["conv:1"], body="Bob.")
    bob = "memory/wiki/entities/bob.md"
    answer = put(
        owner_client,
        "alice",
        {"title": "Alice", "kind": "entity", "sources": ["conv:1"], "body": "Knows [[Bob]]."},
    )
    assert answer.status_code == 201
    assert "Linked from:\n- [[alice|Alice]]\n" in workspace.read(bob)
    assert owner_client.get(f"{BASE}/pages/bob").json()["links_in"] == [
        {"slug": "alice", "title": "Alice", "exists": True}
    ]

    assert put(owner_client, "alice", {"body": "Knows nobody."}).status_code == 200
    assert "Linked from:\n- none\n" in workspace.read(bob)

    put(owner_client, "alice", {"body": "Knows [[Bob]] again."})
    assert owner_client.delete(f"{BASE}/pages/alice").status_code == 204
    assert not workspace.exists("memory/wiki/entities/alice.md")
    assert "Linked from:\n- none\n" in workspace.read(bob)
    assert owner_client.get(f"{BASE}/pages/bob").json()["links_in"] == []
    assert owner_client.delete(f"{BASE}/pages/alice").status_code == 404
    assert owner_client.get(f"{BASE}/pages/alice").status_code == 404


def test_the_toc_lists_pages_without_bodies_and_ranks_with_q(owner_client, master):
    pages.save_page(master, title="Hạn Eco", kind="entity", sources=["conv:1"], body="Hạn chót.")
    pages.save_page(master, title="Sách đang đọc", kind="concept", sources=["conv:1"], body="Eco.")
    pages.save_page(master, title="Docs", kind="concept", sources=["conv:1"], body="Nothing.")
    rows = owner_client.get(BASE).json()["results"]
    assert [row["slug"] for row in rows] == ["han-eco", "docs", "sach-dang-doc"]
    assert all("body" not in row for row in rows)
    assert set(rows[0]) >= {"slug", "title", "kind", "status", "updated", "sources", "questions"}
    assert [
        r["slug"] for r in owner_client.get(BASE, {"q": "sach dang doc"}).json()["results"]
    ] == ["sach-dang-doc"]
    assert [r["slug"] for r in owner_client.get(BASE, {"q": "han eco"}).json()["results"]] == [
        "han-eco"
    ]
    assert owner_client.get(BASE, {"q": "zebra"}).json()["results"] == []
    assert owner_client.get(BASE, {"q": "?!"}).status_code == 422


def test_an_agent_token_reaches_only_its_own_vault(master_client, helper_client, master):
    pages.save_page(master, title="Eco", kind="entity", sources=["conv:1"], body="x")
    assert master_client.get(BASE).status_code == 200
    assert master_client.get(f"{BASE}/pages/eco").status_code == 200
    for call in (
        lambda: helper_client.get(BASE),
        lambda: helper_client.get(f"{BASE}/pages/eco"),
        lambda: put(helper_client, "eco", {"body": "hijack"}),
        lambda: helper_client.delete(f"{BASE}/pages/eco"),
        lambda: helper_client.get(f"{BASE}/report"),
        lambda: helper_client.post(f"{BASE}/compile"),
    ):
        assert call().status_code == 403
    assert "hijack" not in workspace.read("memory/wiki/entities/eco.md")


def test_anonymous_requests_are_refused(anon_client, master):
    assert anon_client.get(BASE).status_code in (401, 403)


def test_the_report_is_data_and_the_report_files_come_from_edits(owner_client, master):
    pages.save_page(
        master, title="Eco", kind="entity", sources=["conv:1"], body="[[Ghost]]",
        questions=["Who pays?"], status="review",
    )  # fmt: skip
    assert "- Who pays?" in workspace.read("memory/wiki/reports/open-questions.md")
    workspace.delete("memory/wiki/reports/open-questions.md")
    report = owner_client.get(f"{BASE}/report").json()
    assert report["counts"] == {"unsourced": 0, "dangling": 1, "review": 1, "stale": 0}
    assert report["open_questions"] == [{"slug": "eco", "title": "Eco", "question": "Who pays?"}]
    # A GET never writes (SPEC §10.6): the next edit or compile puts the file back.
    assert workspace.read("memory/wiki/reports/open-questions.md") is None


def test_post_compile_answers_202_with_the_run(owner_client, master, no_model):
    answer = owner_client.post(f"{BASE}/compile")
    assert answer.status_code == 202
    run = answer.json()["run"]
    assert run["status"] == "running"
    assert Run.objects.get(pk=run["id"]).kind == "compile"
    # The worker's task (called directly here): no model → skipped, and the lock is free.
    assert wiki_compile.run_compile(run["id"]) == "skipped"
    assert Run.objects.get(pk=run["id"]).summary == "no model configured"
    assert owner_client.post(f"{BASE}/compile").status_code == 202


@pytest.mark.parametrize("kind", ["consolidate", "compile"])
def test_post_compile_is_409_while_a_consolidation_or_compile_runs(owner_client, master, kind):
    running = runs.start_run(master, kind, trigger="test")
    answer = owner_client.post(f"{BASE}/compile")
    assert answer.status_code == 409
    assert list(Run.objects.filter(kind="compile").exclude(pk=running.pk)) == []


def test_the_page_view_shows_the_block_only_as_links(owner_client, master):
    pages.save_page(master, title="Eco", kind="entity", sources=["conv:1"], body="Body.")
    page = owner_client.get(f"{BASE}/pages/eco").json()
    assert MACHINE_BLOCK_START not in page["body"]
