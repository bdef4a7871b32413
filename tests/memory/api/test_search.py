"""memory.api.search: GET /api/memory/search shows each hit as the schema's HitSerializer
says, built straight from the hit."""

from memory import search
from memory.api.serializers import HitSerializer


def test_a_search_hit_is_what_the_schemas_hit_serializer_says(owner_client, master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory/2026-01-02.md").write_text(
        "## Sáng\n\n- đọc sách với Lan\n- uống cà phê\n", encoding="utf-8"
    )
    (workspace / "MEMORY.md").write_text("- thích đọc sách\n", encoding="utf-8")
    answer = owner_client.get("/api/memory/search", {"q": "doc sach"}).json()["results"]
    hits = search.search_window("doc sach").hits
    assert len(answer) == 2
    assert answer == HitSerializer(hits, many=True).data
    dated = [hit for hit in answer if hit["date"]]
    assert [(hit["date"], hit["heading"], hit["line"]) for hit in dated] == [
        ("2026-01-02", "## Sáng", 3)
    ]
