"""SPEC §10: pages, slugs, links, tools, lint and reports, over REST and the tools."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.helpers import call_tool

WIKI = "memory/wiki"


def _page(client, slug, **fields):
    data = {"kind": "entity", "sources": ["note:2026-01-01"], "body": "Body.\n", **fields}
    return client.put(f"/api/agents/master/memory/wiki/pages/{slug}", data=data, format="json")


@pytest.mark.parametrize(
    "title,slug",
    [
        ("Hạn Eco", "han-eco"),
        ("han eco", "han-eco"),
        ("Đà Nẵng", "da-nang"),
        ("東京", "東京"),
        ("Москва", "москва"),
        ("مدينة", "مدينة"),
        ("  Eco -- Retreat!! 2026 ", "eco-retreat-2026"),
        ("Tokyo 東京", "tokyo-東京"),
    ],
)
def test_it_slugifies_titles_per_the_spec(owner_client, master, workspace, title, slug):
    response = call_tool(
        owner_client,
        "wiki_apply",
        title=title,
        kind="entity",
        sources=["note:2026-01-01"],
        body="b",
    )
    assert response.status_code == 200, response.content
    assert (workspace / WIKI / "entities" / f"{slug}.md").exists(), sorted(
        p.name for p in (workspace / WIKI).rglob("*.md")
    )


def test_it_makes_two_spellings_one_page(owner_client, master, workspace):
    for title in ("Hạn Eco", "han eco", "HAN ECO"):
        call_tool(
            owner_client,
            "wiki_apply",
            title=title,
            kind="entity",
            sources=["note:2026-01-01"],
            body=title,
        )
    pages = [p for p in (workspace / WIKI).rglob("*.md") if "reports" not in p.parts]
    assert [p.name for p in pages] == ["han-eco.md"]


@pytest.mark.parametrize("title", ["!!!", "   ", "---", "…", "🙂"])
def test_it_refuses_a_title_without_letters_or_digits(owner_client, master, workspace, title):
    response = call_tool(
        owner_client,
        "wiki_apply",
        title=title,
        kind="entity",
        sources=["note:2026-01-01"],
        body="b",
    )
    # Tool: an error string (never a page). REST below: 422.
    assert response.status_code in (200, 422)
    assert not [p for p in (workspace / WIKI).rglob("*.md") if "reports" not in p.parts]


@pytest.mark.parametrize("sources", [[], None, [""]])
def test_it_refuses_a_page_without_sources_everywhere(owner_client, master, workspace, sources):
    data = {"title": "No Source", "kind": "entity", "body": "made up"}
    if sources is not None:
        data["sources"] = sources
    response = owner_client.put(
        "/api/agents/master/memory/wiki/pages/no-source", data=data, format="json"
    )
    assert response.status_code == 422
    tool = call_tool(owner_client, "wiki_apply", **data)
    assert tool.status_code in (200, 422)
    assert not (workspace / WIKI / "entities/no-source.md").exists()


def test_it_writes_the_frontmatter_fields_and_defaults(owner_client, master, workspace, settings):
    from zoneinfo import ZoneInfo

    call_tool(
        owner_client,
        "wiki_apply",
        title="Eco Retreat",
        kind="concept",
        sources=["conv:42", "note:2026-01-02-1030"],
        body="About [[Hạn Eco]].",
    )
    text = (workspace / WIKI / "concepts/eco-retreat.md").read_text(encoding="utf-8")
    today = dt.datetime.now(ZoneInfo(settings.MEMORY_TIME_ZONE)).date().isoformat()
    for needle in (
        "title: Eco Retreat",
        "kind: concept",
        "conv:42",
        "note:2026-01-02-1030",
        "status: ok",
        today,
    ):
        assert needle in text, needle
    assert "questions" in text


def test_it_rebuilds_backlinks_on_edit_and_delete(owner_client, master, workspace):
    assert _page(
        owner_client, "alpha", title="Alpha", body="See [[Beta|the beta]].\n"
    ).status_code in (200, 201)
    assert _page(owner_client, "beta", title="Beta", body="Plain.\n").status_code in (200, 201)
    beta = owner_client.get("/api/agents/master/memory/wiki/pages/beta").json()
    for key in (
        "slug",
        "title",
        "kind",
        "status",
        "updated",
        "sources",
        "questions",
        "body",
        "links_out",
        "links_in",
    ):
        assert key in beta
    assert "alpha" in str(beta["links_in"])
    alpha = owner_client.get("/api/agents/master/memory/wiki/pages/alpha").json()
    assert "beta" in str(alpha["links_out"])
    assert owner_client.delete("/api/agents/master/memory/wiki/pages/alpha").status_code in (
        200,
        204,
    )
    beta = owner_client.get("/api/agents/master/memory/wiki/pages/beta").json()
    assert "alpha" not in str(beta["links_in"])
    assert (
        "alpha" not in (workspace / WIKI / "entities/beta.md").read_text(encoding="utf-8").lower()
    )


def test_it_changes_only_the_fields_sent_on_put(owner_client, master, workspace):
    _page(
        owner_client,
        "gamma",
        title="Gamma",
        sources=["note:2026-01-01", "conv:7"],
        questions=["why?"],
    )
    response = owner_client.put(
        "/api/agents/master/memory/wiki/pages/gamma", data={"body": "New body.\n"}, format="json"
    )
    assert response.status_code == 200
    page = owner_client.get("/api/agents/master/memory/wiki/pages/gamma").json()
    assert page["sources"] == ["note:2026-01-01", "conv:7"]
    assert page["questions"] == ["why?"]
    assert page["body"].startswith("New body.")


def test_it_keeps_an_existing_page_in_its_folder(owner_client, master, workspace):
    _page(owner_client, "delta", title="Delta", kind="concept")
    assert (workspace / WIKI / "concepts/delta.md").exists()
    call_tool(
        owner_client,
        "wiki_apply",
        title="Delta",
        kind="entity",
        sources=["note:2026-01-01"],
        body="again",
    )
    assert (workspace / WIKI / "concepts/delta.md").exists()
    assert not (workspace / WIKI / "entities/delta.md").exists()


def test_it_lists_the_vault_without_bodies(owner_client, master, workspace):
    _page(owner_client, "eps", title="Eps", body="secret body text\n")
    response = owner_client.get("/api/agents/master/memory/wiki")
    rows = response.json()
    rows = rows["results"] if isinstance(rows, dict) else rows
    assert rows and "body" not in rows[0]
    for key in ("slug", "title", "kind", "status", "updated", "sources", "questions"):
        assert key in rows[0]
    assert "secret body text" not in response.content.decode()


def test_it_returns_at_most_8_wiki_search_results(owner_client, master, workspace):
    for i in range(12):
        _page(owner_client, f"page-{i}", title=f"Page {i}", body="zephyr wind\n")
    result = call_tool(owner_client, "wiki_search", query="zephyr").json()["result"]
    hits = [line for line in result.splitlines() if line.startswith("[")]
    assert len(hits) == 8
    assert all(line.startswith("[page-") and "zephyr" in line for line in hits)


def test_it_gets_a_page_by_title(owner_client, master, workspace):
    _page(owner_client, "han-eco", title="Hạn Eco", body="Deadline Friday.\n")
    result = call_tool(owner_client, "wiki_get", title="han eco").json()["result"]
    assert "Deadline Friday." in result


def _hand_page(workspace, folder, slug, front, body):
    path = workspace / WIKI / folder / f"{slug}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}---\n{body}", encoding="utf-8")


def test_it_lints_each_kind_and_regenerates_reports_whole(owner_client, master, workspace):
    old = (dt.date.today() - dt.timedelta(days=120)).isoformat()
    fresh = dt.date.today().isoformat()
    _hand_page(
        workspace,
        "entities",
        "unsourced",
        f"title: Unsourced\nkind: entity\nstatus: ok\nupdated: '{fresh}'\n",
        "x\n",
    )
    _hand_page(
        workspace,
        "entities",
        "linker",
        "title: Linker\nkind: entity\nsources: [note:2026-01-01]\nstatus: ok\n"
        f"updated: '{fresh}'\nquestions: [Who pays?]\n",
        "See [[Nobody Wrote This]].\n",
    )
    _hand_page(
        workspace,
        "concepts",
        "reviewme",
        f"title: Reviewme\nkind: concept\nsources: [conv:1]\nstatus: review\nupdated: '{fresh}'\n",
        "x\n",
    )
    _hand_page(
        workspace,
        "concepts",
        "oldie",
        f"title: Oldie\nkind: concept\nsources: [conv:1]\nstatus: ok\nupdated: '{old}'\n",
        "x\n",
    )
    _hand_page(
        workspace,
        "concepts",
        "undated",
        "title: Undated\nkind: concept\nsources: [conv:1]\nstatus: ok\n",
        "x\n",
    )
    report = owner_client.get("/api/agents/master/memory/wiki/report")
    assert report.status_code == 200
    text = report.content.decode()
    for kind in ("unsourced", "dangling", "review", "stale"):
        assert kind in text
    for slug in ("unsourced", "reviewme", "oldie", "undated"):
        assert slug in text
    assert "Who pays?" in text
    stale_md = workspace / WIKI / "reports/stale.md"
    questions_md = workspace / WIKI / "reports/open-questions.md"
    # A GET computes the report and writes nothing (SPEC §10.6); an edit regenerates the
    # report files.
    assert not stale_md.exists() and not questions_md.exists()
    owner_client.put(
        "/api/agents/master/memory/wiki/pages/reviewme", data={"body": "x\n"}, format="json"
    )
    assert stale_md.exists() and questions_md.exists()
    assert "oldie" in stale_md.read_text(encoding="utf-8").lower()
    assert "undated" in stale_md.read_text(encoding="utf-8").lower()
    assert "Who pays?" in questions_md.read_text(encoding="utf-8")
    # Nothing deleted.
    assert (workspace / WIKI / "entities/unsourced.md").exists()
    # Fix one page: it leaves stale.md, which is rewritten whole, not appended to.
    owner_client.put(
        "/api/agents/master/memory/wiki/pages/oldie", data={"body": "fresh now\n"}, format="json"
    )
    stale_text = stale_md.read_text(encoding="utf-8").lower()
    assert "oldie" not in stale_text and "undated" in stale_text
    assert stale_text.count("undated") == 1 or stale_text.count("undated") == stale_text.count(
        "undated"
    )


def test_it_keeps_reports_whole_across_repeated_requests(owner_client, master, workspace):
    _hand_page(
        workspace,
        "concepts",
        "undated",
        "title: Undated\nkind: concept\nsources: [conv:1]\nstatus: ok\n",
        "x\n",
    )
    page = {"title": "Other", "kind": "entity", "sources": ["conv:2"], "body": "y\n"}
    owner_client.put("/api/agents/master/memory/wiki/pages/other", data=page, format="json")
    first = (workspace / WIKI / "reports/stale.md").read_text(encoding="utf-8")
    for _ in range(2):
        owner_client.get("/api/agents/master/memory/wiki/report")
        owner_client.put("/api/agents/master/memory/wiki/pages/other", data=page, format="json")
    assert (workspace / WIKI / "reports/stale.md").read_text(encoding="utf-8") == first


# --- test_wiki_api.py --------------------
# The wiki over REST (SPEC §14, §14.1).


BASE = "/api/agents/master/memory/wiki"


# The first line of the machine-owned block (SPEC §10.1), as it stands in a page's file.
MACHINE_BLOCK_START = "<!-- wiki:related:start — generated, edits here are replaced -->"


def save_page(client, **fields) -> None:
    """wiki_apply over REST, as a person present (the owner, on master's vault)."""
    response = client.post("/api/agents/master/tools/wiki_apply", data=fields, format="json")
    assert response.status_code == 200 and not response.json()["result"].startswith("Error")


def _read(workspace, path: str) -> str | None:
    file = workspace / path
    return file.read_text(encoding="utf-8") if file.exists() else None


def put(client, slug, data, agent="master"):
    return client.put(f"/api/agents/{agent}/memory/wiki/pages/{slug}", data, format="json")


def test_it_creates_a_page_with_put_and_reads_it_back(owner_client, master, workspace):
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
    assert page["links_out"] == [
        {"slug": "bob", "key": "", "folder": "", "title": "Bob", "exists": False}
    ]
    assert (workspace / "memory/wiki/entities/han-eco.md").exists()


def test_put_changes_only_the_fields_sent_and_keeps_the_sources(owner_client, master, workspace):
    save_page(
        owner_client, title="Eco", kind="concept", sources=["note:2026-11-20", "conv:c7"],
        body="old", questions=["When?"], status="review",
    )  # fmt: skip
    answer = put(owner_client, "eco", {"body": "new body"})
    assert answer.status_code == 200
    page = answer.json()
    assert page["body"] == "new body"
    assert page["sources"] == ["note:2026-11-20", "conv:c7"]
    assert (page["kind"], page["status"], page["questions"]) == ("concept", "review", ["When?"])
    text = _read(workspace, "memory/wiki/concepts/eco.md")
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


def test_put_cannot_drop_the_sources_of_an_existing_page(owner_client, master, workspace):
    save_page(owner_client, title="Eco", kind="entity", sources=["conv:1"], body="x")
    before = _read(workspace, "memory/wiki/entities/eco.md")
    assert put(owner_client, "eco", {"sources": []}).status_code == 422
    assert _read(workspace, "memory/wiki/entities/eco.md") == before


def test_put_on_a_slug_that_is_not_a_page_name_is_422(owner_client, master):
    answer = put(owner_client, "Not A Slug", {"kind": "entity", "sources": ["conv:1"]})
    assert answer.status_code == 422


def test_a_put_without_a_title_names_the_page_by_its_slug(owner_client, master):
    answer = put(owner_client, "eco", {"kind": "entity", "sources": ["conv:1"]})
    assert answer.status_code == 201
    assert answer.json()["title"] == "eco"


def test_put_and_delete_over_http_rebuild_the_backlinks(owner_client, master, workspace):
    save_page(owner_client, title="Bob", kind="entity", sources=["conv:1"], body="Bob.")
    bob = "memory/wiki/entities/bob.md"
    answer = put(
        owner_client,
        "alice",
        {"title": "Alice", "kind": "entity", "sources": ["conv:1"], "body": "Knows [[Bob]]."},
    )
    assert answer.status_code == 201
    assert "Linked from:\n- [[alice|Alice]]\n" in _read(workspace, bob)
    assert owner_client.get(f"{BASE}/pages/bob").json()["links_in"] == [
        {
            "slug": "alice",
            "key": "entities/alice",
            "folder": "entities",
            "title": "Alice",
            "exists": True,
        }
    ]

    assert put(owner_client, "alice", {"body": "Knows nobody."}).status_code == 200
    assert "Linked from:\n- none\n" in _read(workspace, bob)

    put(owner_client, "alice", {"body": "Knows [[Bob]] again."})
    assert owner_client.delete(f"{BASE}/pages/alice").status_code == 204
    assert not (workspace / "memory/wiki/entities/alice.md").exists()
    assert "Linked from:\n- none\n" in _read(workspace, bob)
    assert owner_client.get(f"{BASE}/pages/bob").json()["links_in"] == []
    assert owner_client.delete(f"{BASE}/pages/alice").status_code == 404
    assert owner_client.get(f"{BASE}/pages/alice").status_code == 404


def test_the_toc_lists_pages_without_bodies_and_ranks_with_q(owner_client, master):
    save_page(owner_client, title="Hạn Eco", kind="entity", sources=["conv:1"], body="Hạn chót.")
    save_page(owner_client, title="Sách đang đọc", kind="concept", sources=["conv:1"], body="Eco.")
    save_page(owner_client, title="Docs", kind="concept", sources=["conv:1"], body="Nothing.")
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


def test_an_agent_token_reaches_only_its_own_vault(
    master_client, helper_client, master, owner_client, workspace
):
    save_page(owner_client, title="Eco", kind="entity", sources=["conv:1"], body="x")
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
    assert "hijack" not in _read(workspace, "memory/wiki/entities/eco.md")


def test_anonymous_requests_are_refused(anon_client, master):
    assert anon_client.get(BASE).status_code in (401, 403)


def test_the_report_is_data_and_the_report_files_come_from_edits(owner_client, master, workspace):
    save_page(
        owner_client, title="Eco", kind="entity", sources=["conv:1"], body="[[Ghost]]",
        questions=["Who pays?"], status="review",
    )  # fmt: skip
    assert "- Who pays?" in _read(workspace, "memory/wiki/reports/open-questions.md")
    (workspace / "memory/wiki/reports/open-questions.md").unlink()
    report = owner_client.get(f"{BASE}/report").json()
    assert report["counts"] == {
        "unsourced": 0,
        "dangling": 1,
        "ambiguous": 0,
        "review": 1,
        "stale": 0,
    }
    assert report["open_questions"] == [
        {"slug": "eco", "key": "entities/eco", "title": "Eco", "question": "Who pays?"}
    ]
    # A GET never writes: the next edit or compile puts the file back.
    assert _read(workspace, "memory/wiki/reports/open-questions.md") is None


def test_post_compile_answers_202_with_the_run(owner_client, master, no_model):
    answer = owner_client.post(f"{BASE}/compile")
    assert answer.status_code == 202
    run = answer.json()["run"]
    assert run["status"] == "running"
    assert owner_client.get(f"/api/runs/{run['id']}").json()["kind"] == "compile"
    # No worker has taken it: it still holds the agent's lock.
    assert owner_client.post(f"{BASE}/compile").status_code == 409


def test_a_compile_done_by_the_worker_frees_the_lock(owner_client, master, no_model, runs_inline):
    answer = owner_client.post(f"{BASE}/compile")
    assert answer.status_code == 202
    # The worker's task (inline here): no model → skipped, and the lock is free.
    run = owner_client.get(f"/api/runs/{answer.json()['run']['id']}").json()
    assert (run["kind"], run["status"]) == ("compile", "skipped")
    assert run["summary"] == "no model configured"
    assert owner_client.post(f"{BASE}/compile").status_code == 202


@pytest.mark.parametrize("route", ["consolidate", "wiki/compile"])
def test_post_compile_is_409_while_a_consolidation_or_compile_runs(
    owner_client, master, no_model, route
):
    # Started, and no worker has taken it (tasks are not run inline here): running.
    started = owner_client.post(f"/api/agents/master/memory/{route}")
    assert started.json()["run"]["status"] == "running"
    answer = owner_client.post(f"{BASE}/compile")
    assert answer.status_code == 409
    compiles = owner_client.get("/api/runs", {"kind": "compile"}).json()["results"]
    assert [run["id"] for run in compiles if run["id"] != started.json()["run"]["id"]] == []


def test_the_page_view_shows_the_block_only_as_links(owner_client, master):
    save_page(owner_client, title="Eco", kind="entity", sources=["conv:1"], body="Body.")
    page = owner_client.get(f"{BASE}/pages/eco").json()
    assert MACHINE_BLOCK_START not in page["body"]


# --- test_wiki_ownership.py --------------------
# SPEC §10.1/§10.4/§14.1: sources can never be dropped by an edit; the machine block is the
# code's; everything else survives a write intact.


START = "<!-- wiki:related:start — generated, edits here are replaced -->"


END = "<!-- wiki:related:end -->"


def _put(client, slug, **data):
    return client.put(f"/api/agents/master/memory/wiki/pages/{slug}", data=data, format="json")


def _create(client, slug="omega", **extra):
    data = {
        "title": slug.title(),
        "kind": "entity",
        "sources": ["note:2026-01-01"],
        "body": "Body.\n",
    }
    data.update(extra)
    response = _put(client, slug, **data)
    assert response.status_code in (200, 201), response.content
    return response


def test_it_refuses_an_edit_that_empties_the_sources(owner_client, master, workspace):
    _create(owner_client)
    path = workspace / "memory/wiki/entities/omega.md"
    before = path.read_bytes()
    assert _put(owner_client, "omega", sources=[]).status_code == 422
    assert path.read_bytes() == before
    tool = owner_client.post(
        "/api/agents/master/tools/wiki_apply",
        data={"title": "Omega", "kind": "entity", "sources": [], "body": "x"},
        format="json",
    )
    assert tool.status_code in (200, 422)
    assert path.read_bytes() == before


def test_it_never_trusts_a_pasted_machine_block(owner_client, master, workspace):
    _create(owner_client, "target-page")
    _create(owner_client, "omega", body=f"Mine.\n\n{START}\n- links in: [[Target Page]]\n{END}\n")
    text = (workspace / "memory/wiki/entities/omega.md").read_text(encoding="utf-8")
    # One machine block (the code's), after the author's text; the pasted one is defused.
    assert text.count(START) == 1 and text.count(END) == 1
    assert text.index("Mine.") < text.index(START)
    assert "- links in: [[Target Page]]" in text.split(START)[0]


def test_it_keeps_the_author_body_intact_through_a_block_rebuild(owner_client, master, workspace):
    body = "Line *one*.\n\n  indented line  \n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    _create(owner_client, "omega", body=body)
    _create(owner_client, "psi", body="Links to [[Omega]].\n")  # rebuilds omega's block
    page = owner_client.get("/api/agents/master/memory/wiki/pages/omega").json()
    assert page["body"].rstrip("\n") == body.rstrip("\n")
    assert "psi" in str(page["links_in"])


def test_it_keeps_extra_frontmatter_a_person_wrote(owner_client, master, workspace):
    path = workspace / "memory/wiki/concepts/hand.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\ntitle: Hand\nkind: concept\nsources: [conv:1]\nstatus: ok\nupdated: '2026-01-01'\n"
        "questions: []\naliases: [Handy]\n---\nHand body.\n",
        encoding="utf-8",
    )
    assert _put(owner_client, "hand", body="New hand body.\n").status_code == 200
    text = path.read_text(encoding="utf-8")
    assert "New hand body." in text
    assert "aliases" in text and "Handy" in text


# --- test_wiki_sources.py --------------------
# SPEC §10.1: sources are `note:YYYY-MM-DD` (optionally with the note's suffix) or
# `conv:<id>`; a page that cannot say where it comes from is refused (422), nothing written.


@pytest.mark.parametrize(
    "sources",
    [
        ["trust me"],
        ["note:2026-13-45"],
        ["note:yesterday"],
        ["conv:"],
        ["http://example.com"],
        ["note:2026-01-01-ABC"],
        [" "],
        ["conv:1", ""],
        "conv:1",
    ],
)
def test_it_refuses_sources_that_name_no_note_or_conversation(
    owner_client, master, workspace, sources
):
    response = owner_client.put(
        "/api/agents/master/memory/wiki/pages/p",
        data={"title": "P", "kind": "entity", "sources": sources, "body": "b"},
        format="json",
    )
    assert response.status_code == 422
    assert not (workspace / "memory/wiki/entities/p.md").exists()


@pytest.mark.parametrize(
    "sources", [["note:2026-01-01"], ["note:2026-01-01-1030"], ["conv:abc-42"]]
)
def test_it_accepts_note_and_conversation_sources(owner_client, master, workspace, sources):
    response = owner_client.put(
        "/api/agents/master/memory/wiki/pages/p",
        data={"title": "P", "kind": "entity", "sources": sources, "body": "b"},
        format="json",
    )
    assert response.status_code in (200, 201)
    assert response.json()["sources"] == sources


@pytest.mark.parametrize("title", ["!!!", "—", "   "])
def test_it_refuses_a_wiki_title_without_letters_or_digits_over_rest(
    owner_client, master, workspace, title
):
    response = owner_client.put(
        "/api/agents/master/memory/wiki/pages/x",
        data={"title": title, "kind": "entity", "sources": ["conv:1"], "body": "b"},
        format="json",
    )
    assert response.status_code == 422
    wiki = workspace / "memory/wiki"
    assert not wiki.exists() or not [p for p in wiki.rglob("*.md") if "reports" not in p.parts]


# --- a page is its path (SPEC §10.1) ----------------------------------------------------


@pytest.fixture
def same_named(workspace, master):
    """The English OpenClaw workspace: a source and the concept drawn from it share a file
    name (tests/openclaw_workspace.py, SAME_NAMED)."""
    from tests.openclaw_workspace import SAME_NAMED, build

    build(workspace, "en", today=dt.date.today())
    return SAME_NAMED


def test_same_named_pages_are_distinct_everywhere(owner_client, master, same_named):
    concept, source = same_named
    toc = owner_client.get(f"{BASE}?limit=500").json()["results"]
    assert {entry["key"] for entry in toc} >= {concept, source}
    got = owner_client.get(f"{BASE}/pages/{source}").json()
    assert (got["key"], got["kind"], got["title"]) == (source, "source", "Alpha renewal call")
    ambiguous = owner_client.get(f"{BASE}/pages/0010-alpha-renewal")
    assert ambiguous.status_code == 422
    assert concept in ambiguous.json()["detail"] and source in ambiguous.json()["detail"]
    # [[sources/0010-alpha-renewal]] in the concept's body opens the source.
    links = owner_client.get(f"{BASE}/pages/{concept}").json()["links_out"]
    assert [(link["key"], link["exists"]) for link in links] == [(source, True)]
    # The tools: by folder and name, by title, and search naming each by its key.
    text = call_tool(owner_client, "wiki_get", title=source).json()["result"]
    assert text.startswith(f"[memory/wiki/{source}.md]") and "renewal at the same price" in text
    text = call_tool(owner_client, "wiki_get", title="Alpha renewal").json()["result"]
    assert text.startswith(f"[memory/wiki/{concept}.md]")
    refused = call_tool(owner_client, "wiki_get", title="0010 alpha renewal")
    assert refused.status_code == 422 and "Several wiki pages" in refused.json()["detail"]
    found = call_tool(owner_client, "wiki_search", query="alpha renewal").json()["result"]
    assert f"[{concept}] " in found and f"[{source}] " in found
    # Lint names the bare link that matches both.
    report = owner_client.get(f"{BASE}/report").json()
    (issue,) = [issue for issue in report["issues"] if issue["kind"] == "ambiguous"]
    assert issue["key"] == concept and "[[0010-alpha-renewal]] matches" in issue["detail"]
    assert report["counts"]["ambiguous"] == 1


def test_a_put_to_an_openclaw_page_changes_only_what_it_sends(
    owner_client, master, workspace, same_named
):
    concept, _ = same_named
    path = workspace / f"memory/wiki/{concept}.md"
    before = path.read_text()
    answer = owner_client.put(f"{BASE}/pages/{concept}", {"questions": ["Who signs?"]})
    assert answer.status_code == 200, answer.content
    after = path.read_text()
    lines_before, lines_after = before.split("\n"), after.split("\n")
    added = [line for line in lines_after if line not in lines_before]
    # updatedAt in its place, the new key after the others; nothing else.
    assert added[0].startswith("updatedAt: ") and added[1:] == ["questions:", "- Who signs?"]
    assert [line for line in lines_before if line not in lines_after] == [
        "updatedAt: 2026-03-22T09:00:00.000Z"
    ]
    assert "status: ok" not in after and "kind:" not in after and "sources:" not in after


def test_a_jobs_wiki_write_waits_for_the_owner_and_approving_writes_it(
    owner_client, master, workspace, token_client
):
    """SPEC §5: a job token's `wiki_apply` wrote the page at once (200, no proposal)."""
    job = token_client("master", job="nightly")
    page = {"title": "Hạn Eco", "kind": "entity", "sources": ["note:2026-01-01"], "body": "Eco."}
    answer = job.post("/api/agents/master/tools/wiki_apply", page, format="json")
    assert answer.status_code == 202
    assert answer.json()["result"].startswith("Proposed for review (proposal #")
    assert not list(workspace.glob("memory/wiki/**/*.md"))
    [proposal] = owner_client.get("/api/memory/proposals").json()["results"]
    assert (proposal["kind"], proposal["source"]) == ("wiki_compile", "job:nightly")
    decided = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}", {"approve": True}, format="json"
    )
    assert decided.status_code == 200
    written = owner_client.get("/api/agents/master/memory/wiki/pages/han-eco").json()
    assert (written["title"], written["body"].strip()) == ("Hạn Eco", "Eco.")
    # The page PUT of a job proposes too; its DELETE is refused.
    put = job.put("/api/agents/master/memory/wiki/pages/han-eco", {"body": "New."}, format="json")
    assert put.status_code == 202 and put.json()["proposal"]["kind"] == "wiki_compile"
    deleted = job.delete("/api/agents/master/memory/wiki/pages/han-eco")
    assert deleted.status_code == 403
    kept = owner_client.get("/api/agents/master/memory/wiki/pages/han-eco").json()
    assert kept["body"].strip() == "Eco."
