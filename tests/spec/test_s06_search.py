"""SPEC §6: memory_search (folding, word rules, every word first, ranking by weight and
length, dates, neighbours, format) and the REST search across scopes."""

from __future__ import annotations

import os
import re
from pathlib import Path

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


def test_entries_with_every_word_come_first_and_partial_ones_after(owner_client, master, workspace):
    write_by_hand(
        workspace / "memory/2026-01-01.md", "- alpha only\n- alpha and bravo\n- bravo only\n"
    )
    # Missing a word ranks an entry lower; it is never dropped while there is room. The
    # line after the full match scores 0.9 of it (it follows it: a neighbour), so it
    # comes before the line above it.
    assert _search(owner_client, "alpha bravo") == [
        "[memory/2026-01-01.md:2] (2026-01-01 Thu) - alpha and bravo",
        "[memory/2026-01-01.md:3] (2026-01-01 Thu) - bravo only",
        "[memory/2026-01-01.md:1] (2026-01-01 Thu) - alpha only",
    ]


def test_a_line_is_lifted_by_the_line_after_it_that_says_what_it_is(
    owner_client, master, workspace
):
    write_by_hand(
        workspace / "memory/2026-01-01.md",
        "- the code is 4471\n- that is the gate code of Lan's building\n",
    )
    write_by_hand(workspace / "memory/2026-01-02.md", "- code review\n")
    # The first line holds only `code`, as the newer, shorter line does; it scores at
    # least 0.7 of the line after it, which holds every word.
    assert _search(owner_client, "Lan gate code") == [
        "[memory/2026-01-01.md:2] (2026-01-01 Thu) - that is the gate code of Lan's building",
        "[memory/2026-01-01.md:1] (2026-01-01 Thu) - the code is 4471",
        "[memory/2026-01-02.md:1] (2026-01-02 Fri) - code review",
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
    # Lines of one length score the same: only the ties decide.
    write_by_hand(workspace / "memory/2026-01-01.md", "- zeta old\n", mtime=1_800_000_000)
    write_by_hand(
        workspace / "memory/2026-01-02.md", "- zeta one\n- zeta two\n", mtime=1_700_100_000
    )
    write_by_hand(workspace / "memory/a-same.md", "- zeta a\n", mtime=1_690_000_000)
    write_by_hand(workspace / "memory/b-same.md", "- zeta b\n", mtime=1_690_000_000)
    assert _search(owner_client, "zeta") == [
        "[memory/2026-01-02.md:1] (2026-01-02 Fri) - zeta one",
        "[memory/2026-01-02.md:2] (2026-01-02 Fri) - zeta two",
        "[memory/2026-01-01.md:1] (2026-01-01 Thu) - zeta old",
        "[memory/b-same.md:1] - zeta b",
        "[memory/a-same.md:1] - zeta a",
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


# --- test_search_api.py --------------------
# GET /api/memory/search (SPEC §6.2): scopes, interleaving across agents, who may search
# what, and bad input.


URL = "/api/memory/search"


OLD = 1_600_000_000


def put(home: Path, rel: str, body: str, *, mtime: int) -> None:
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    os.utime(path, (mtime, mtime))


def fact(client, name: str, description: str, body: str) -> None:
    response = client.put(
        f"/api/memory/user/facts/{name}",
        {"description": description, "type": "reference", "body": body, "source": "chat"},
        format="json",
    )
    assert response.status_code in (200, 201), response.content


@pytest.fixture
def memories(master, helper_agent, workspace, owner_client):
    """Three `melon` entries for master, three for helper, two facts; master's files are
    the newest, so a plain ranking by recency would list all of master's first."""
    put(workspace, "memory/2026-01-03.md", "- melon m1\n- melon m2\n- melon m3\n", mtime=OLD + 300)
    put(
        workspace,
        "agents/helper/memory/2026-01-02.md",
        "- melon h1\n- melon h2\n- melon h3\n",
        mtime=OLD + 200,
    )
    fact(owner_client, "melon-a", "melon fact a", "body a")
    fact(owner_client, "melon-b", "melon fact b", "body b")
    for name in ("melon-a", "melon-b"):
        path = workspace / f"users/owner/facts/{name}.md"
        os.utime(path, (OLD + 100, OLD + 100))
    return workspace


def results(response) -> list[tuple[str, str, int | None]]:
    assert response.status_code == 200, response.content
    return [(item["scope"], item["text"], item["line"]) for item in response.json()["results"]]


def test_it_interleaves_every_agent_and_the_user_scope_by_rank(owner_client, memories):
    response = owner_client.get(URL, {"q": "melon"})

    assert results(response) == [
        ("agent:master", "- melon m1", 1),
        ("agent:helper", "- melon h1", 1),
        ("user", "melon fact b — body b", None),
        ("agent:master", "- melon m2", 2),
        ("agent:helper", "- melon h2", 2),
        ("user", "melon fact a — body a", None),
        ("agent:master", "- melon m3", 3),
        ("agent:helper", "- melon h3", 3),
    ]


def test_each_result_carries_scope_agent_path_lines_text_score_date_and_weight(
    owner_client, memories
):
    items = owner_client.get(URL, {"q": "melon", "limit": 3}).json()["results"]

    # melon stands in all 8 entries of the workspace: its idf is ln(1 + 0.5/8.5) = 0.057.
    # A line holds it once in 2 words, a fact twice in 7 (name, description and body), the
    # mean entry being 26/8 words: BM25 (k1 1.2, b 0.5) makes both 0.064.
    same = {"score": 1, "heading": None, "weight": 0.064, "matched": ["melon"]}
    assert items == [
        {
            "scope": "agent:master",
            "agent": "master",
            "path": "memory/2026-01-03.md",
            "line": 1,
            "end_line": 1,
            "date": "2026-01-03",
            "text": "- melon m1",
            **same,
        },
        {
            "scope": "agent:helper",
            "agent": "helper",
            "path": "memory/2026-01-02.md",
            "line": 1,
            "end_line": 1,
            "date": "2026-01-02",
            "text": "- melon h1",
            **same,
        },
        {
            "scope": "user",
            "agent": None,
            "path": "users/owner/facts/melon-b.md",
            "line": None,
            "end_line": None,
            "date": None,
            "text": "melon fact b — body b",
            **same,
        },
    ]


def test_the_count_and_every_page_agree_with_the_whole_list(owner_client, memories, workspace):
    whole = results(owner_client.get(URL, {"q": "melon", "limit": 20}))
    assert owner_client.get(URL, {"q": "melon", "limit": 20}).json()["count"] == len(whole) == 8
    for agent_id, expected in ((None, 8), ("master", 5), ("helper", 5)):
        query = {"q": "melon", "limit": 3} | ({"agent_id": agent_id} if agent_id else {})
        pages, offset = [], 0
        while True:
            body = owner_client.get(URL, {**query, "offset": offset}).json()
            assert (body["count"], body["count_capped"]) == (expected, False)
            if not body["results"]:
                break
            pages += [(item["scope"], item["text"], item["line"]) for item in body["results"]]
            offset += 3
        assert len(pages) == expected
        if agent_id is None:
            assert pages == whole
    # No entry holds both words: the entries holding either are ranked, and counted.
    written = owner_client.put(
        "/api/agents/helper/memory/notes/2026-01-05", {"body": "- kiwi k1\n"}, format="json"
    )
    assert written.status_code == 201, written.content
    body = owner_client.get(URL, {"q": "melon kiwi", "limit": 20}).json()
    assert body["count"] == len(body["results"]) == 9


def test_explain_says_how_each_word_counted(owner_client, memories, workspace):
    put(workspace, "memory/2026-01-04.md", "# Quả\n\n- melon seeds, dưa lưới\n", mtime=OLD)

    body = owner_client.get(URL, {"q": "melon seeds o", "explain": "true"}).json()

    assert body["results"][0]["text"] == "- melon seeds, dưa lưới"
    assert body["results"][0]["heading"] == "# Quả"
    assert body["explain"] == {
        "entries": 10,
        "words": [
            {"word": "melon", "rule": "inside", "entries": 9, "weight": 0.147, "forms": ["melon"]},
            {"word": "seeds", "rule": "inside", "entries": 1, "weight": 1.992, "forms": ["seeds"]},
            {"word": "o", "rule": "whole", "entries": 0, "weight": 3.091, "forms": []},
        ],
    }
    assert "explain" not in owner_client.get(URL, {"q": "melon"}).json()


def test_entries_with_every_word_come_first_across_scopes(owner_client, memories, workspace):
    put(workspace, "agents/helper/memory/2026-01-01.md", "- melon seeds\n", mtime=OLD)

    found = results(owner_client.get(URL, {"q": "melon seeds"}))
    assert found[0] == ("agent:helper", "- melon seeds", 1)
    assert len(found) == 9  # and every entry holding one of the words after it


def test_with_agent_id_it_searches_that_agent_and_the_user_scope(owner_client, memories):
    scopes = {
        scope
        for scope, _, _ in results(owner_client.get(URL, {"q": "melon", "agent_id": "helper"}))
    }

    assert scopes == {"agent:helper", "user"}


def test_an_agent_token_without_agent_id_searches_its_own_agent(helper_client, memories):
    found = results(helper_client.get(URL, {"q": "melon"}))

    assert {scope for scope, _, _ in found} == {"agent:helper", "user"}
    assert ("agent:helper", "- melon h1", 1) in found


def test_an_agent_token_may_name_its_own_agent(helper_client, memories):
    assert results(helper_client.get(URL, {"q": "melon", "agent_id": "helper"}))


def test_an_agent_token_gets_403_for_another_agent(helper_client, memories):
    response = helper_client.get(URL, {"q": "melon", "agent_id": "master"})

    assert response.status_code == 403
    assert "melon" not in response.content.decode()


def test_another_agents_token_gets_403_even_for_an_unknown_agent(helper_client, memories):
    assert helper_client.get(URL, {"q": "melon", "agent_id": "nobody"}).status_code == 403


def test_the_owner_gets_404_for_an_unknown_agent(owner_client, memories):
    assert owner_client.get(URL, {"q": "melon", "agent_id": "nobody"}).status_code == 404


def test_anonymous_callers_are_refused(anon_client, memories):
    assert anon_client.get(URL, {"q": "melon"}).status_code in (401, 403)


def test_limit_defaults_to_12_and_goes_up_to_100(owner_client, master, workspace):
    put(workspace, "memory/2026-01-05.md", "".join(f"- plum {n}\n" for n in range(150)), mtime=OLD)

    assert len(results(owner_client.get(URL, {"q": "plum"}))) == 12
    assert len(results(owner_client.get(URL, {"q": "plum", "limit": 100}))) == 100
    assert len(results(owner_client.get(URL, {"q": "plum", "limit": 1}))) == 1


@pytest.mark.parametrize("limit", ["0", "101", "-3", "ten", "1.5", "1e2"])
def test_a_bad_limit_is_422(owner_client, master, limit):
    assert owner_client.get(URL, {"q": "plum", "limit": limit}).status_code == 422


@pytest.mark.parametrize("params", [{}, {"q": ""}, {"q": "   "}, {"q": "?!…"}])
def test_an_empty_query_is_422(owner_client, master, params):
    response = owner_client.get(URL, params)

    assert response.status_code == 422
    assert response.json()  # says what is wrong


def test_a_weaker_agent_still_gets_its_best_entry_before_anyones_second(
    owner_client, master, helper_agent, workspace
):
    put(workspace, "memory/2026-01-03.md", "- lime tart\n- lime tart again\n", mtime=OLD + 300)
    put(workspace, "agents/helper/memory/2026-01-02.md", "- lime\n- lime too\n", mtime=OLD + 200)

    found = owner_client.get(URL, {"q": "lime tart zzzz"}).json()["results"]

    assert [(item["scope"], item["text"], item["score"]) for item in found] == [
        ("agent:master", "- lime tart", 2),
        ("agent:helper", "- lime", 1),
        ("agent:master", "- lime tart again", 2),
        ("agent:helper", "- lime too", 1),
    ]


# --- test_search_folding_more.py --------------------
# SPEC §6.1 folding details: case-folding (not just lowercasing), đ/Đ, marks on any letter,
# and the three-character whole-word rule applied to the folded text.


def _write(workspace, text):
    write_by_hand(workspace / "memory/2026-01-01.md", text)


@pytest.mark.parametrize(
    "query,line",
    [
        ("strasse", "Wohnung in der Straße"),  # casefold: ß → ss
        ("STRASSE", "Wohnung in der Straße"),
        ("dang", "ĐANG làm"),
        ("Đang", "dang lam"),
        ("cafe", "Café Giảng"),
        ("giang", "Café Giảng"),
        ("nao", "São Paulo não"),
        ("2026", "hạn chót 2026-03-01"),
    ],
)
def test_it_folds_before_comparing(owner_client, master, workspace, query, line):
    _write(workspace, f"{line}\n")
    assert _search(owner_client, query) == [f"[memory/2026-01-01.md:1] (2026-01-01 Thu) {line}"]


@pytest.mark.parametrize(
    "query,line,found",
    [
        ("an", "ăn cơm", True),
        ("an", "bạn bè", False),
        ("com", "ăn cơm", True),
        ("com", "computer", False),
        ("ho", "Hồ Tây", True),
        ("ho", "hội họp", False),
        ("doc", "doc_string", True),  # underscore is not a letter or digit: a word boundary
        ("doc", "doc2", False),
    ],
)
def test_it_matches_short_words_whole_after_folding(
    owner_client, master, workspace, query, line, found
):
    _write(workspace, f"{line}\n")
    assert (
        _search(owner_client, query) == [f"[memory/2026-01-01.md:1] (2026-01-01 Thu) {line}"]
    ) is found


# --- test_search_scopes.py --------------------
# SPEC §6.1/§6.2: entries with every word first, across notes and facts together; the REST search
# interleaves every agent's and the user scope's results by rank.


def test_a_fact_with_every_word_comes_before_a_line_with_one(owner_client, master, workspace):
    write_by_hand(workspace / "memory/2026-01-01.md", "coffee only here\n")
    owner_client.put(
        "/api/memory/user/facts/coffee",
        data={"description": "black coffee", "type": "preference", "body": "no sugar"},
        format="json",
    )
    response = owner_client.post(
        "/api/agents/master/tools/memory_search",
        data={"query": "black coffee"},
        format="json",
    )
    hits = [line for line in response.json()["result"].splitlines() if line.startswith("[")]
    assert hits == [
        "[users/owner/facts/coffee.md] black coffee — no sugar",
        "[memory/2026-01-01.md:1] (2026-01-01 Thu) coffee only here",
    ]


def test_it_puts_the_best_entry_of_each_scope_before_any_second_entry(
    owner_client, master, helper_agent, workspace
):
    owner_client.post("/api/agents", data={"id": "third", "name": "Third"}, format="json")
    for rel, tag in (("memory", "m"), ("agents/helper/memory", "h"), ("agents/third/memory", "t")):
        write_by_hand(
            workspace / rel / "2026-01-01.md", "".join(f"- upsilon {tag}{i}\n" for i in range(4))
        )
    for i in range(3):
        owner_client.put(
            f"/api/memory/user/facts/ups-{i}",
            data={"description": f"upsilon u{i}", "type": "profile", "body": ""},
            format="json",
        )
    results = owner_client.get("/api/memory/search", {"q": "upsilon", "limit": 100}).json()[
        "results"
    ]
    scopes = [row["scope"] for row in results]
    assert sorted(scopes[:4]) == ["agent:helper", "agent:master", "agent:third", "user"]
    assert len(results) == 15


# --- weight and length, word starts, frontmatter, dates (SPEC §6.1) ----------------------


def test_rent_is_not_found_inside_current_when_an_entry_holds_it_whole(
    owner_client, master, workspace
):
    write_by_hand(workspace / "MEMORY.md", "- Altmark flat: rent 900 a month\n")
    write_by_hand(
        workspace / "memory/2026-01-05.md", "- Altmark current account: delinquency letter\n"
    )
    response = owner_client.get(URL, {"q": "Altmark rent delinquency", "agent_id": "master"})
    assert {item["path"]: item["matched"] for item in response.json()["results"]} == {
        "MEMORY.md": ["altmark", "rent"],
        "memory/2026-01-05.md": ["altmark", "delinquency"],  # not rent inside "current"
    }


def test_frontmatter_lines_are_not_hits(owner_client, master, workspace):
    write_by_hand(
        workspace / "memory/wiki/entities/dentist.md",
        "---\ntitle: Dentist\nstatus: ok\n---\n\nDr Lan, Tuesdays 9:00\n",
    )
    assert _search(owner_client, "status ok") == []
    assert _search(owner_client, "dentist tuesdays") == [
        "[memory/wiki/entities/dentist.md:6] (Dentist) Dr Lan, Tuesdays 9:00"
    ]


def test_a_date_in_the_query_finds_the_notes_of_that_day(owner_client, master, workspace):
    owner_client.post(
        "/api/agents/master/tools/memory_save", data={"text": "gọi điện cho mẹ"}, format="json"
    )
    write_by_hand(workspace / "memory/2023-01-17.md", "- gọi điện cho anh Nam\n")
    write_by_hand(workspace / "memory/2024-05-02.md", "- gọi điện cho chị Hà\n")

    assert _search(owner_client, "gọi điện tháng 1 năm 2023")[0].startswith(
        "[memory/2023-01-17.md:1]"
    )
    assert _search(owner_client, "goi dien thang 1 nam 2023")[0].startswith(
        "[memory/2023-01-17.md:1]"
    )
    today = _search(owner_client, "hôm nay")
    assert len(today) == 1 and today[0].endswith("gọi điện cho mẹ")


# --- scopes hold in every answer, and one agent's file cannot make search slow for others


def test_explain_counts_and_forms_come_only_from_what_the_caller_may_read(
    master_client, helper_client, owner_client, master, helper_agent
):
    """Beta saved "xylophonepin4417"; alpha's token asked `?q=xylo&explain=1` and got
    `"forms": ["xylophonepin4417"]` with 0 hits: any agent could list every private word."""
    saved = helper_client.post(
        "/api/agents/helper/tools/memory_save", {"text": "xylophonepin4417"}, format="json"
    )
    assert saved.status_code == 200
    alpha = master_client.get(URL, {"q": "xylo", "explain": "1"}).json()
    assert alpha["count"] == 0 and alpha["results"] == []
    assert alpha["explain"]["words"] == [
        {"word": "xylo", "rule": "inside", "entries": 0, "weight": alpha["explain"]["words"][0][
            "weight"], "forms": []}
    ]  # fmt: skip
    tool = master_client.post(
        "/api/agents/master/tools/memory_search", {"query": "xylo"}, format="json"
    )
    assert tool.json()["result"] == 'No memory matches "xylo".'
    # Beta, and the owner, see the word where it is.
    beta = helper_client.get(URL, {"q": "xylo", "explain": "1"}).json()
    assert beta["explain"]["words"][0]["forms"] == ["xylophonepin4417"]
    owner = owner_client.get(URL, {"q": "xylo", "explain": "1"}).json()
    assert owner["count"] == 1 and owner["explain"]["words"][0]["forms"] == ["xylophonepin4417"]


PLANTED = 30_000


def test_a_file_of_words_sharing_a_substring_leaves_other_agents_search_whole(
    master_client, helper_client, owner_client, master, helper_agent, workspace
):
    """One agent planted 30,000 words sharing a substring in its own file: every search
    expanded to all of them. Alpha's answer is the same as without the file, beta's is
    still right (each hit holds the word), and every answer is bounded."""
    put(workspace, "memory/2026-01-05.md", "- xylophone lesson on Friday\n", mtime=OLD)
    planted = "".join(f"- xylo{n:05d}q\n" for n in range(PLANTED)) + "- xylophone tuner\n"
    put(workspace, "agents/helper/memory/2026-01-06.md", planted, mtime=OLD)
    alpha = master_client.get(URL, {"q": "xylophone", "explain": "1"}).json()
    assert [hit["text"] for hit in alpha["results"]] == ["- xylophone lesson on Friday"]
    assert alpha["explain"]["words"][0]["forms"] == ["xylophone"]
    beta = helper_client.get(URL, {"q": "xylo", "limit": 100}).json()
    # A query word reaches at most 200 words of the text, the closest first (the shortest
    # of those it starts): "xylophone" and the first 199 planted words, one entry each.
    assert beta["count"] == 200 and not beta["count_capped"]
    # The entry holding both words first; those holding one follow, never dropped (§6.1).
    tuner = helper_client.get(URL, {"q": "xylo tuner"}).json()
    assert tuner["results"][0]["text"] == "- xylophone tuner"
    assert all(hit["matched"] == ["xylo"] for hit in tuner["results"][1:])
    assert all(re.fullmatch(r"- xylo(\d{5}q|phone tuner)", hit["text"]) for hit in beta["results"])
    owner = owner_client.get(URL, {"q": "xylophone tuner"}).json()
    assert [hit["text"] for hit in owner["results"]] == [
        "- xylophone tuner",
        "- xylophone lesson on Friday",
    ]


# --- USER.md in the owner's search window (SPEC §6.2; never in memory_search, §6.1) ------


def _user_md(client, body: str) -> None:
    response = client.put("/api/memory/user", {"body": body}, format="json")
    assert response.status_code == 200, response.content


def test_the_owners_search_finds_lines_of_user_md(owner_client, pages, master, workspace):
    _user_md(owner_client, "# About me\n\n- Name: Minh\n- I live in Huế, zone Asia/Ho_Chi_Minh\n")
    write_by_hand(workspace / "memory/2026-01-01.md", "- flew to Hue for Tet\n")

    items = owner_client.get(URL, {"q": "hue"}).json()["results"]
    found = {
        (item["scope"], item["agent"], item["path"], item["line"], item["text"]) for item in items
    }
    assert found == {
        ("user", None, "users/owner/USER.md", 4, "- I live in Huế, zone Asia/Ho_Chi_Minh"),
        ("agent:master", "master", "memory/2026-01-01.md", 1, "- flew to Hue for Tet"),
    }
    user_item = next(item for item in items if item["scope"] == "user")
    assert user_item["end_line"] == 4 and user_item["heading"] == "# About me"
    assert user_item["date"] is None and user_item["score"] == 1

    html = pages.get("/manage/memory/search/", {"q": "hue"}).content.decode()
    assert '<a href="/manage/memory/#user-body"><code>users/owner/USER.md:4</code></a>' in html

    # The agents' memory_search leaves USER.md out (it is whole in every prompt).
    assert _search(owner_client, "hue") == [
        "[memory/2026-01-01.md:1] (2026-01-01 Thu) - flew to Hue for Tet"
    ]
    assert _search(owner_client, "minh") == []
    # So does the API for an agent, or named agent: what that agent's memory_search reads.
    assert [item["path"] for item in _api(owner_client, q="hue", agent_id="master")] == [
        "memory/2026-01-01.md"
    ]


def test_an_agent_token_never_finds_user_md(helper_client, owner_client, helper_agent, workspace):
    _user_md(owner_client, "- my dentist is Dr Quang\n")
    assert _api(helper_client, q="dentist") == []
    assert _search(helper_client, "dentist", agent="helper") == []
    assert [item["path"] for item in _api(owner_client, q="dentist")] == ["users/owner/USER.md"]


def test_a_hand_edit_of_user_md_is_found_by_the_next_search(owner_client, master, workspace):
    path = write_by_hand(workspace / "users/owner/USER.md", "- likes tea\n", mtime=OLD)
    assert [item["text"] for item in _api(owner_client, q="tea")] == ["- likes tea"]
    write_by_hand(path, "- likes cocoa\n", mtime=OLD)  # same mtime and size
    assert _api(owner_client, q="tea") == []
    assert [(item["path"], item["text"]) for item in _api(owner_client, q="cocoa")] == [
        ("users/owner/USER.md", "- likes cocoa")
    ]


def test_the_root_user_md_is_searched_while_it_is_the_one_in_use(
    owner_client, master, workspace, settings
):
    write_by_hand(workspace / "USER.md", "- OpenClaw profile: kayak\n")
    assert [item["path"] for item in _api(owner_client, q="kayak")] == ["USER.md"]
    # users/owner/USER.md now exists: it is USER.md (SPEC §1), the root one is not. A file
    # made by hand is seen within the bound the host states (here: at once).
    settings.MEMORY_SEARCH_RECONCILE_SECONDS = 0
    write_by_hand(workspace / "users/owner/USER.md", "- kayak on weekends\n")
    assert [(item["path"], item["text"]) for item in _api(owner_client, q="kayak")] == [
        ("users/owner/USER.md", "- kayak on weekends")
    ]
