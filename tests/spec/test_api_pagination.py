"""Every list of the API is a page (SPEC §14): `{"count", "next", "previous", "offset",
"limit", "results"}` chosen with `?limit=&offset=`; a limit that is not a number is 422."""

import pytest

from memory.models import Run
from memory.writes import add_memory_lines_or_propose


def test_it_pages_the_notes_of_an_agent_with_counts(owner_client, master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    for day in range(1, 31):
        (workspace / f"memory/2026-01-{day:02d}.md").write_text(f"- {day}\n", encoding="utf-8")

    first = owner_client.get("/api/agents/master/memory/notes", {"limit": 20}).json()
    assert (first["count"], first["offset"], first["limit"]) == (30, 0, 20)
    assert first["previous"] is None
    assert [row["name"] for row in first["results"]][:2] == ["2026-01-30.md", "2026-01-29.md"]
    assert len(first["results"]) == 20

    second = owner_client.get(first["next"]).json()
    assert second["offset"] == 20 and second["next"] is None
    assert [row["name"] for row in second["results"]] == [
        f"2026-01-{day:02d}.md" for day in range(10, 0, -1)
    ]
    assert "offset" not in (second["previous"] or "offset")  # back to the first page


def test_it_pages_runs_proposals_and_agents(owner_client, master, helper_agent, workspace):
    for n in range(7):
        Run.objects.create(agent=master, kind="consolidate", status="skipped", summary=str(n))
        add_memory_lines_or_propose(master, [f"line {n}"], source="job:nightly")

    runs = owner_client.get("/api/runs", {"limit": 3, "offset": 3}).json()
    assert runs["count"] == 7 and len(runs["results"]) == 3
    assert [row["summary"] for row in runs["results"]] == ["3", "2", "1"]

    proposals = owner_client.get("/api/memory/proposals", {"limit": 5}).json()
    assert proposals["count"] == 7 and len(proposals["results"]) == 5 and proposals["next"]

    agents = owner_client.get("/api/agents", {"limit": 1, "offset": 1}).json()
    assert agents["count"] == 2 and [a["id"] for a in agents["results"]] == ["helper"]


@pytest.mark.parametrize(
    "query", [{"limit": "ten"}, {"limit": 0}, {"limit": 501}, {"offset": -1}, {"offset": "x"}]
)
def test_it_refuses_a_window_that_is_not_a_whole_number_in_range(owner_client, master, query):
    response = owner_client.get("/api/runs", query)
    assert response.status_code == 422
    assert response.json()["code"] == "invalid"


def test_it_pages_search_results_and_counts_them(owner_client, master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    lines = "".join(f"- {n:02d} đọc sách\n" for n in range(30))
    (workspace / "memory/2026-01-01.md").write_text(lines, encoding="utf-8")

    first = owner_client.get("/api/memory/search", {"q": "doc sach", "limit": 12}).json()
    assert first["count"] == 30 and first["count_capped"] is False
    assert [hit["line"] for hit in first["results"]] == list(range(1, 13))
    last = owner_client.get("/api/memory/search", {"q": "doc sach", "offset": 24}).json()
    assert [hit["line"] for hit in last["results"]] == list(range(25, 31))
    assert last["next"] is None and "offset=12" in last["previous"]


def test_the_schema_documents_the_pages(owner_client, master):
    schema = owner_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    runs = schema["paths"]["/api/runs"]["get"]
    assert {"limit", "offset"} <= {p["name"] for p in runs["parameters"]}
    body = runs["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    page = schema["components"]["schemas"][body.rsplit("/", 1)[-1]]
    assert {"count", "next", "previous", "results"} <= set(page["properties"])
