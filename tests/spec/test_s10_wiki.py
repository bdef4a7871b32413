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
    # A GET computes the report and writes nothing (issue 10.10); an edit regenerates the
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
