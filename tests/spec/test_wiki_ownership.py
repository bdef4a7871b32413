"""SPEC §10.1/§10.4/§14.1: sources can never be dropped by an edit; the machine block is the
code's; everything else survives a write intact."""

from __future__ import annotations

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
