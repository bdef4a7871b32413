"""`/api/memory/user` and its facts (SPEC §2, §5, §14.1)."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from tests.helpers import all_at_once
from tests.spec.steps import ABSENT, proposals, text_hash

PHO = {"description": "Thích phở bò", "type": "preference", "body": "Nói hôm 2026-11-02."}


def test_it_shows_user_md_with_the_facts_and_the_index(owner_client, workspace, owner_today):
    assert owner_client.get("/api/memory/user").json() == {
        "body": "",
        "facts": [],
        "index": "",
        "hash": ABSENT,
        "invalid_utf8": False,
    }
    assert (
        owner_client.put("/api/memory/user", {"body": "Tôi là Minh.\n"}, format="json").status_code
        == 200
    )
    owner_client.put("/api/memory/user/facts/pho", {**PHO, "source": "web"}, format="json")
    today = owner_today.isoformat()
    assert owner_client.get("/api/memory/user").json() == {
        "body": "Tôi là Minh.\n",
        "facts": [
            {
                "name": "pho",
                "description": "Thích phở bò",
                "type": "preference",
                "written_by": "owner",
                "source": "web",
                "updated": today,
                "body": "Nói hôm 2026-11-02.",
                "stale": False,
                "invalid_utf8": False,
            }
        ],
        "index": "- [pho](pho.md) (preference) — Thích phở bò\n",
        "hash": text_hash("Tôi là Minh.\n"),
        "invalid_utf8": False,
    }
    assert (workspace / "users/owner/USER.md").read_text(encoding="utf-8") == "Tôi là Minh.\n"


def test_put_creates_then_updates_a_fact(master_client, owner_client, workspace):
    created = master_client.put("/api/memory/user/facts/pho", PHO, format="json")
    assert created.status_code == 201
    assert created.json()["written_by"] == "master"
    assert created.json()["source"] == "http"
    updated = master_client.put(
        "/api/memory/user/facts/pho",
        {**PHO, "description": "Thích phở gà", "source": "telegram"},
        format="json",
    )
    assert updated.status_code == 200
    assert updated.json()["description"] == "Thích phở gà"
    [fact] = owner_client.get("/api/memory/user").json()["facts"]
    assert (fact["name"], fact["source"]) == ("pho", "telegram")
    index = (workspace / "users/owner/facts/INDEX.md").read_text(encoding="utf-8")
    assert index == "- [pho](pho.md) (preference) — Thích phở gà\n"


def test_a_job_proposes_a_fact_and_writes_nothing(master_client, owner_client, workspace):
    response = master_client.put(
        "/api/memory/user/facts/pho", {**PHO, "source": "job:nightly"}, format="json"
    )
    assert response.status_code == 202
    proposal = response.json()["proposal"]
    assert proposal["kind"] == "user_fact"
    assert proposal["status"] == "pending"
    assert proposal["agent"] is None
    assert proposal["target"] == "users/owner/facts/pho.md"
    assert {k: proposal["payload"][k] for k in ("name", "type", "written_by", "source")} == {
        "name": "pho",
        "type": "preference",
        "written_by": "master",
        "source": "job:nightly",
    }
    assert not (workspace / "users/owner/facts").exists()
    assert [row["source"] for row in proposals(owner_client)] == ["job:nightly"]


def test_a_job_proposes_to_forget_a_fact(owner_client, workspace):
    owner_client.put("/api/memory/user/facts/pho", PHO, format="json")
    response = owner_client.delete("/api/memory/user/facts/pho?source=job:hygiene")
    assert response.status_code == 202
    assert response.json()["proposal"]["kind"] == "user_fact_forget"
    assert response.json()["proposal"]["payload"]["name"] == "pho"
    assert (workspace / "users/owner/facts/pho.md").exists()
    assert owner_client.delete("/api/memory/user/facts/nope?source=job:x").status_code == 404
    assert len(proposals(owner_client)) == 1


def test_delete_forgets_a_fact_when_a_person_is_present(owner_client, workspace):
    owner_client.put("/api/memory/user/facts/pho", PHO, format="json")
    assert owner_client.delete("/api/memory/user/facts/pho?source=web").status_code == 204
    assert not (workspace / "users/owner/facts/pho.md").exists()
    assert owner_client.delete("/api/memory/user/facts/pho").status_code == 404
    assert owner_client.get("/api/memory/user").json()["index"] == ""


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("Pho", PHO),
        ("pho_bo", PHO),
        ("..", PHO),
        ("a%2Fb", PHO),
        ("pho", {**PHO, "type": "opinion"}),
        ("pho", {"type": "preference", "body": "x"}),
        ("pho", {**PHO, "description": "  "}),
        ("pho", {**PHO, "source": "job:"}),
    ],
)
@pytest.mark.parametrize("source", [None, "job:nightly"])
def test_bad_facts_are_422_and_nothing_is_written_or_proposed(
    owner_client, workspace, name, body, source
):
    if source and "source" not in body:
        body = {**body, "source": source}
    response = owner_client.put(f"/api/memory/user/facts/{name}", body, format="json")
    assert response.status_code == 422, response.content
    assert not (workspace / "users").exists()
    assert proposals(owner_client) == []


def test_a_job_may_not_rewrite_user_md(master_client, workspace):
    response = master_client.put(
        "/api/memory/user", {"body": "x", "source": "job:nightly"}, format="json"
    )
    assert response.status_code == 403
    assert not (workspace / "users/owner/USER.md").exists()


def test_an_agent_token_reads_the_user_scope_but_may_not_rewrite_user_md(
    helper_client, owner_client, workspace
):
    owner_client.put("/api/memory/user", {"body": "Tôi là Minh.\n"}, format="json")
    answer = helper_client.put("/api/memory/user", {"body": "hi\n"}, format="json")
    assert answer.status_code == 403
    assert answer.json()["detail"] == "USER.md is the owner's words: only the owner may rewrite it."
    assert (workspace / "users/owner/USER.md").read_text() == "Tôi là Minh.\n"
    assert helper_client.get("/api/memory/user").json()["body"] == "Tôi là Minh.\n"
    assert helper_client.get("/api/memory/user/facts/nope").status_code == 404


# The live server's listen backlog is small (socketserver's request_queue_size): more
# simultaneous connects than that are reset by the kernel, which would test the harness.
THREADS = 8


def test_it_keeps_index_md_whole_under_concurrent_fact_writes(
    live_server, live_owner_key, workspace
):
    headers = {"Authorization": f"Token {live_owner_key}"}
    base = live_server.url
    calls = [
        (
            lambda i: (
                lambda c: c.put(
                    f"{base}/api/memory/user/facts/fact-{i:02d}",
                    json={"description": f"d{i}", "type": "profile", "body": ""},
                    headers=headers,
                )
            )
        )(i)
        for i in range(THREADS)
    ]
    answers = all_at_once(calls)
    assert all(r.status_code in (200, 201) for r in answers), [r.status_code for r in answers]
    index = (workspace / "users/owner/facts/INDEX.md").read_text(encoding="utf-8")
    lines = [line for line in index.splitlines() if line.startswith("- ")]
    assert lines == [f"- [fact-{i:02d}](fact-{i:02d}.md) (profile) — d{i}" for i in range(THREADS)]


COFFEE = {"description": "likes black coffee", "type": "preference", "body": "No sugar."}


def _put_fact(client, name, **overrides):
    return client.put(f"/api/memory/user/facts/{name}", data={**COFFEE, **overrides}, format="json")


def test_it_writes_a_fact_with_the_full_frontmatter(owner_client, master, workspace, owner_today):
    assert _put_fact(owner_client, "coffee", source="web").status_code in (200, 201)
    text = (workspace / "users/owner/facts/coffee.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    front = text.split("---\n")[1]
    for key, value in [
        ("name", "coffee"),
        ("description", "likes black coffee"),
        ("type", "preference"),
        ("written_by", "owner"),
        ("source", "web"),
    ]:
        assert re.search(rf"^{key}: '?{re.escape(value)}'?$", front, re.M), key
    assert re.search(r"^updated: '?\d{4}-\d{2}-\d{2}'?$", front, re.M)
    assert "No sugar." in text.split("---\n", 2)[2]
    # The exact bytes: the fields in this order, the day quoted, a blank line, the body.
    assert text == (
        "---\nname: coffee\ndescription: likes black coffee\ntype: preference\n"
        f"written_by: owner\nsource: web\nupdated: '{owner_today.isoformat()}'\n---\n"
        "\nNo sugar.\n"
    )


def test_it_writes_the_index_line_in_the_exact_format_sorted_by_name(
    owner_client, master, workspace
):
    _put_fact(owner_client, "zebra", description="z fact", type="profile")
    _put_fact(owner_client, "apple", description="a fact", type="project")
    _put_fact(owner_client, "m-2", description="m fact", type="reference")
    index = (workspace / "users/owner/facts/INDEX.md").read_text(encoding="utf-8")
    lines = [line for line in index.splitlines() if line.startswith("- ")]
    assert lines == [
        "- [apple](apple.md) (project) — a fact",
        "- [m-2](m-2.md) (reference) — m fact",
        "- [zebra](zebra.md) (profile) — z fact",
    ]
    assert index == "".join(f"{line}\n" for line in lines)  # nothing but the lines


def test_it_regenerates_the_index_over_hand_edits_after_a_write_and_a_delete(
    owner_client, master, workspace
):
    _put_fact(owner_client, "coffee")
    index = workspace / "users/owner/facts/INDEX.md"
    index.write_text("hand edit\n", encoding="utf-8")
    _put_fact(owner_client, "tea", description="likes tea")
    assert index.read_text(encoding="utf-8") == (
        "- [coffee](coffee.md) (preference) — likes black coffee\n"
        "- [tea](tea.md) (preference) — likes tea\n"
    )
    index.write_text("hand edit again\n", encoding="utf-8")
    assert owner_client.delete("/api/memory/user/facts/tea").status_code == 204
    assert not (workspace / "users/owner/facts/tea.md").exists()
    assert index.read_text(encoding="utf-8") == (
        "- [coffee](coffee.md) (preference) — likes black coffee\n"
    )
    # Forgetting the last fact removes the index too.
    assert owner_client.delete("/api/memory/user/facts/coffee").status_code == 204
    assert not index.exists()
    assert owner_client.get("/api/memory/user").json()["facts"] == []


@pytest.mark.parametrize(
    "name",
    [
        "a" * 65,
        "Coffee",
        "a--b",
        "-a",
        "a-",
        "a_b",
        "a.b",
        "cà-phê",
        "a b",
        "ａ",
        "a%2Fb",
        "..",
        "1" * 65,
    ],
)
def test_it_refuses_a_fact_name_that_is_not_a_slug_and_writes_nothing(
    owner_client, master, workspace, name
):
    response = _put_fact(owner_client, name)
    assert response.status_code == 422, (name, response.status_code)
    assert not (workspace / "users").exists()  # not even the folder


def test_it_accepts_a_64_character_fact_name(owner_client, master, workspace):
    assert _put_fact(owner_client, "a" * 64).status_code in (200, 201)
    assert (workspace / "users/owner/facts" / ("a" * 64 + ".md")).exists()


@pytest.mark.parametrize("overrides", [{"type": "opinion"}, {"type": ""}, {"description": ""}])
def test_it_refuses_an_unknown_type_or_missing_description(
    owner_client, master, workspace, overrides
):
    assert _put_fact(owner_client, "coffee", **overrides).status_code == 422
    assert not (workspace / "users/owner/facts/coffee.md").exists()


def test_it_refuses_a_fact_without_a_description_key(owner_client, master, workspace):
    response = owner_client.put(
        "/api/memory/user/facts/coffee", data={"type": "profile", "body": "x"}, format="json"
    )
    assert response.status_code == 422
    assert not (workspace / "users/owner/facts/coffee.md").exists()


def test_it_labels_a_fact_older_than_90_days_stale(owner_client, master, workspace):
    facts = workspace / "users/owner/facts"
    facts.mkdir(parents=True, exist_ok=True)
    old = (dt.date.today() - dt.timedelta(days=91)).isoformat()
    edge = (dt.date.today() - dt.timedelta(days=89)).isoformat()
    for name, day in (("old", old), ("edge", edge)):
        (facts / f"{name}.md").write_text(
            f"---\nname: {name}\ndescription: d\ntype: profile\nwritten_by: owner\n"
            f"source: web\nupdated: '{day}'\n---\nbody\n",
            encoding="utf-8",
        )
    stale = {f["name"]: f["stale"] for f in owner_client.get("/api/memory/user").json()["facts"]}
    assert stale == {"old": True, "edge": False}


def test_it_stores_user_md_whole_past_the_cap(owner_client, master, workspace):
    body = "u" * 5000 + "\n"
    assert (
        owner_client.put("/api/memory/user", data={"body": body}, format="json").status_code == 200
    )
    assert (workspace / "users/owner/USER.md").read_text(encoding="utf-8") == body


def test_it_records_the_agent_as_written_by(master_client, master, workspace):
    master_client.put(
        "/api/memory/user/facts/tea",
        data={"description": "likes tea", "type": "preference", "body": "", "source": "chat"},
        format="json",
    )
    assert "written_by: master" in (workspace / "users/owner/facts/tea.md").read_text(
        encoding="utf-8"
    )
