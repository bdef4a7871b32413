"""SPEC §6: memory_search (folding, word rules, all-words-first, ranking, format) and the
REST search across scopes."""

from __future__ import annotations

import re

import pytest

from tests.helpers import write_by_hand


def _search(client, query, agent="master"):
    response = client.post(
        f"/api/agents/{agent}/tools/memory_search",
        data={"query": query},
        format="json",
    )
    assert response.status_code == 200, response.content
    return [line for line in response.json()["result"].splitlines() if line.startswith("[")]


def _api(client, **params):
    response = client.get("/api/memory/search", params)
    assert response.status_code == 200, response.content
    data = response.json()
    return data["results"]


@pytest.mark.parametrize(
    "query,text",
    [
        ("sach dang doc", "- sách đang đọc: Nhà giả kim"),
        ("duc", "- gặp anh Đức ở quán"),
        ("nguyen", "- ông Nguyễn gọi điện"),
        ("benh vien", "- đi bệnh viện Chợ Rẫy"),
        ("ho chi minh", "- bay vào Hồ Chí Minh"),
        ("pho", "- ăn phở bò"),
        ("SÁCH", "- sách mới"),
    ],
)
def test_it_folds_marks_and_d_stroke(owner_client, master, workspace, query, text):
    write_by_hand(workspace / "memory/2026-01-01.md", f"# 2026-01-01\n{text}\n")
    assert _search(owner_client, query) == [f"[memory/2026-01-01.md:2] (2026-01-01 Thu) {text}"]


def test_it_matches_short_words_only_whole(owner_client, master, workspace):
    write_by_hand(
        workspace / "memory/2026-01-01.md", "- đọc sách\n- read the docs\n- một ô\n- hello doc\n"
    )
    assert _search(owner_client, "doc") == [
        "[memory/2026-01-01.md:1] (2026-01-01 Thu) - đọc sách",
        "[memory/2026-01-01.md:4] (2026-01-01 Thu) - hello doc",
    ]
    assert _search(owner_client, "o") == ["[memory/2026-01-01.md:3] (2026-01-01 Thu) - một ô"]


def test_it_matches_long_words_anywhere(owner_client, master, workspace):
    write_by_hand(workspace / "memory/2026-01-01.md", "- the sachs family\n- see docstring\n")
    assert _search(owner_client, "sach") == [
        "[memory/2026-01-01.md:1] (2026-01-01 Thu) - the sachs family"
    ]
    assert _search(owner_client, "docs") == [
        "[memory/2026-01-01.md:2] (2026-01-01 Thu) - see docstring"
    ]


def test_it_drops_partial_matches_when_an_entry_has_every_word(owner_client, master, workspace):
    write_by_hand(
        workspace / "memory/2026-01-01.md", "- alpha only\n- alpha and bravo\n- bravo only\n"
    )
    assert _search(owner_client, "alpha bravo") == [
        "[memory/2026-01-01.md:2] (2026-01-01 Thu) - alpha and bravo"
    ]


def test_it_shows_partial_matches_best_first_when_none_has_every_word(
    owner_client, master, workspace
):
    write_by_hand(workspace / "memory/2026-01-01.md", "- alpha x\n- alpha bravo y\n- charlie z\n")
    hits = _search(owner_client, "alpha bravo charlie")
    assert hits[0] == "[memory/2026-01-01.md:2] (2026-01-01 Thu) - alpha bravo y"
    # One entry each holds bravo and charlie, two hold alpha: the rarer word first.
    assert hits[1:] == [
        "[memory/2026-01-01.md:3] (2026-01-01 Thu) - charlie z",
        "[memory/2026-01-01.md:1] (2026-01-01 Thu) - alpha x",
    ]


def test_it_ranks_newer_files_first_then_path_descending_then_line_order(
    owner_client, master, workspace
):
    # A dated note is as new as its day, whatever its mtime; other files by mtime.
    write_by_hand(workspace / "memory/2026-01-01.md", "- zeta old\n", mtime=1_800_000_000)
    write_by_hand(
        workspace / "memory/2026-01-02.md", "- zeta new one\n- zeta new two\n", mtime=1_700_100_000
    )
    write_by_hand(workspace / "memory/a-same.md", "- zeta same a\n", mtime=1_690_000_000)
    write_by_hand(workspace / "memory/b-same.md", "- zeta same b\n", mtime=1_690_000_000)
    assert _search(owner_client, "zeta") == [
        "[memory/2026-01-02.md:1] (2026-01-02 Fri) - zeta new one",
        "[memory/2026-01-02.md:2] (2026-01-02 Fri) - zeta new two",
        "[memory/2026-01-01.md:1] (2026-01-01 Thu) - zeta old",
        "[memory/b-same.md:1] - zeta same b",
        "[memory/a-same.md:1] - zeta same a",
    ]


def test_it_returns_at_most_12_results(owner_client, master, workspace):
    write_by_hand(workspace / "memory/2026-01-01.md", "".join(f"- omega {i}\n" for i in range(40)))
    hits = _search(owner_client, "omega")
    assert len(hits) == 12
    assert hits[0] == "[memory/2026-01-01.md:1] (2026-01-01 Thu) - omega 0"


def test_it_cuts_result_text_at_700_characters_with_an_ellipsis(owner_client, master, workspace):
    line = "kappa " + "y" * 1000
    write_by_hand(workspace / "memory/kappa.md", line + "\n")
    (hit,) = _search(owner_client, "kappa")
    text = hit.split("] ", 1)[1]
    assert text.endswith("…")
    assert len(text) == 700
    assert line.startswith(text[:-1])


def test_it_does_not_cut_a_700_character_line(owner_client, master, workspace):
    line = "kappa " + "y" * 694
    write_by_hand(workspace / "memory/kappa.md", line + "\n")
    assert _search(owner_client, "kappa") == [f"[memory/kappa.md:1] {line}"]


def test_it_returns_a_fact_as_one_entry_with_description_and_body(owner_client, master, workspace):
    owner_client.put(
        "/api/memory/user/facts/coffee",
        data={"description": "likes black coffee", "type": "preference", "body": "Never sugar."},
        format="json",
    )
    # One word in the description, the other in the body: one entry holds both.
    hits = _search(owner_client, "black sugar")
    assert hits == ["[users/owner/facts/coffee.md] likes black coffee — Never sugar."]


def test_it_searches_memory_md_suffixed_hand_kept_and_wiki_files_but_not_other_agents(
    owner_client, master, helper_agent, workspace
):
    write_by_hand(workspace / "MEMORY.md", "lambda in memory\n")
    write_by_hand(workspace / "memory/2026-01-01-1030.md", "lambda suffixed\n")
    write_by_hand(workspace / "memory/facebook-books.md", "lambda books\n")
    write_by_hand(workspace / "memory/wiki/entities/x.md", "---\ntitle: X\n---\nlambda wiki\n")
    write_by_hand(workspace / "agents/helper/memory/2026-01-01.md", "lambda helper\n")
    write_by_hand(workspace / "users/owner/USER.md", "lambda user\n")
    text = "\n".join(_search(owner_client, "lambda"))
    for expected in ("lambda in memory", "lambda suffixed", "lambda books", "lambda wiki"):
        assert expected in text
    assert "lambda helper" not in text
    assert "[MEMORY.md:1] lambda in memory" in text


# --- §6.2 --------------------------------------------------------------------------------


def test_it_labels_every_api_result_with_scope_path_line_text_score(
    owner_client, master, helper_agent, workspace
):
    write_by_hand(workspace / "memory/2026-01-01.md", "sigma master\n")
    write_by_hand(workspace / "agents/helper/memory/2026-01-01.md", "sigma helper\n")
    owner_client.put(
        "/api/memory/user/facts/sig",
        data={"description": "sigma fact", "type": "profile", "body": ""},
        format="json",
    )
    results = _api(owner_client, q="sigma")
    for row in results:
        for key in ("scope", "agent", "path", "line", "text", "score"):
            assert key in row
    scopes = sorted(row["scope"] for row in results)
    assert scopes == ["agent:helper", "agent:master", "user"]
    only = _api(owner_client, q="sigma", agent_id="helper")
    assert sorted(row["scope"] for row in only) == ["agent:helper", "user"]


def test_it_interleaves_agents_by_rank(owner_client, master, helper_agent, workspace):
    write_by_hand(workspace / "memory/2026-01-01.md", "".join(f"tau m{i}\n" for i in range(5)))
    write_by_hand(
        workspace / "agents/helper/memory/2026-01-01.md", "".join(f"tau h{i}\n" for i in range(5))
    )
    results = _api(owner_client, q="tau")
    scopes = [row["scope"] for row in results[:2]]
    assert sorted(scopes) == ["agent:helper", "agent:master"]


def test_it_defaults_the_api_limit_to_12_and_caps_it_at_100(owner_client, master, workspace):
    write_by_hand(workspace / "memory/2026-01-01.md", "".join(f"- rho {i}\n" for i in range(150)))
    assert len(_api(owner_client, q="rho")) == 12
    assert len(_api(owner_client, q="rho", limit=100)) == 100
    response = owner_client.get("/api/memory/search", {"q": "rho", "limit": 101})
    assert response.status_code == 422 or len(response.json()["results"]) <= 100


def test_it_reflects_a_hand_edit_in_the_next_query(owner_client, master, workspace):
    path = workspace / "memory/2026-01-01.md"
    write_by_hand(path, "phi one\n", mtime=1_700_000_000)
    assert _search(owner_client, "phi") == ["[memory/2026-01-01.md:1] (2026-01-01 Thu) phi one"]
    write_by_hand(path, "phi two\n", mtime=1_700_000_000)  # same mtime, different size
    assert _search(owner_client, "phi") == ["[memory/2026-01-01.md:1] (2026-01-01 Thu) phi two"]
    write_by_hand(path, "phi six\n", mtime=1_700_000_000)  # same mtime, same size
    assert _search(owner_client, "phi") == ["[memory/2026-01-01.md:1] (2026-01-01 Thu) phi six"]


def test_it_gives_no_match_an_empty_result(owner_client, master, workspace):
    write_by_hand(workspace / "memory/2026-01-01.md", "nothing here\n")
    assert _search(owner_client, "zzzzqqq") == []
    assert re.search(
        r"\S",
        owner_client.post(
            "/api/agents/master/tools/memory_search",
            data={"query": "zzzzqqq"},
            format="json",
        ).json()["result"],
    )
