"""SPEC §6.1/§6.2: all-words-first holds across notes and facts together; the REST search
interleaves every agent's and the user scope's results by rank."""

from __future__ import annotations

from tests.helpers import write_by_hand


def test_it_drops_partial_lines_when_a_fact_has_every_word(owner_client, master, workspace):
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
    assert hits == ["[users/owner/facts/coffee.md] black coffee — no sugar"]


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
