"""More SPEC edges: appends after a file without a final newline (§5), agent_memory stale
base (§7), runs listing (§14.1), wiki title refusal over REST (§10.2), script-store values
(§11/§14.1)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from tests.spec.shapes import RUN_KEYS


def _today(settings):
    return dt.datetime.now(ZoneInfo(settings.MEMORY_TIME_ZONE)).date()


def test_it_appends_memory_save_on_a_new_line_after_a_hand_written_note(
    owner_client, master, workspace, settings
):
    today = _today(settings)
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / f"memory/{today}.md").write_text(f"# {today}\n\nhand text", encoding="utf-8")
    response = owner_client.post(
        "/api/agents/master/tools/memory_save",
        data={"text": "saved"},
        format="json",
    )
    assert response.status_code == 200
    lines = (workspace / f"memory/{today}.md").read_text(encoding="utf-8").splitlines()
    assert lines[:3] == [f"# {today}", "", "hand text"]
    assert lines[3].endswith(" saved") and lines[3].startswith("- ")
    assert sum(1 for line in lines if line.startswith("# ")) == 1


def test_it_appends_present_memory_lines_on_a_new_line(owner_client, master, workspace):
    (workspace / "MEMORY.md").write_bytes(b"# Memory\n- last line without newline")
    response = owner_client.post(
        "/api/agents/master/memory/lines",
        data={"lines": ["- added"], "source": "web"},
        format="json",
    )
    assert response.status_code == 200
    text = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert text.startswith("# Memory\n- last line without newline\n")
    assert "- added" in text.splitlines()


def test_it_supersedes_an_agent_memory_proposal_when_memory_md_changed(
    owner_client, master, workspace
):
    (workspace / "MEMORY.md").write_text("- base\n", encoding="utf-8")
    proposal = owner_client.post(
        "/api/agents/master/memory/lines",
        data={"lines": ["- from the job"], "source": "job:nightly"},
        format="json",
    ).json()["proposal"]
    owner_client.put(
        "/api/agents/master/memory", data={"body": "- owner rewrote it\n"}, format="json"
    )
    answer = owner_client.post(
        f"/api/memory/proposals/{proposal['id']}", data={"approve": True}, format="json"
    )
    assert answer.status_code == 409
    assert (
        owner_client.get(f"/api/memory/proposals/{proposal['id']}").json()["status"] == "superseded"
    )
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == "- owner rewrote it\n"


def test_it_lists_runs_newest_first_and_filters(owner_client, master, helper_agent, workspace):
    from django.utils import timezone

    from memory.models import Run

    now = timezone.now()
    made = []
    for i, (agent, kind, status) in enumerate(
        [
            (master, "consolidate", "succeeded"),
            (helper_agent, "compile", "failed"),
            (master, "fact_review", "skipped"),
        ]
    ):
        run = Run.objects.create(agent=agent, kind=kind, status=status)
        Run.objects.filter(pk=run.pk).update(started_at=now + dt.timedelta(minutes=i))
        made.append(run.pk)

    def ids(**params):
        data = owner_client.get("/api/runs", params).json()
        rows = data["results"] if isinstance(data, dict) else data
        return [row["id"] for row in rows]

    assert ids() == list(reversed(made))
    assert ids(agent="master") == [made[2], made[0]]
    assert ids(kind="compile") == [made[1]]
    assert ids(status="skipped") == [made[2]]
    row = owner_client.get(f"/api/runs/{made[1]}").json()
    assert RUN_KEYS <= set(row)


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


@pytest.mark.parametrize(
    "value", [None, 0, "text", [1, "a", None], {"deep": {"er": [True, 1.5]}}, "đọc 東京"]
)
def test_it_stores_any_json_value_in_the_script_store(owner_client, master, workspace, value):
    url = "/api/agents/master/script-store/conversation/c-1/k"
    assert owner_client.put(url, data={"value": value}, format="json").status_code in (200, 201)
    assert owner_client.get(url).json()["value"] == value
    rows = owner_client.get("/api/agents/master/script-store", {"conversation": "c-1"}).json()
    rows = rows["results"] if isinstance(rows, dict) else rows
    assert [(r["scope"], r["scope_id"], r["key"], r["value"]) for r in rows] == [
        ("conversation", "c-1", "k", value)
    ]


@pytest.mark.parametrize("scope", ["global", "Schedule", "x"])
def test_it_refuses_an_unknown_script_store_scope(owner_client, master, workspace, scope):
    response = owner_client.put(
        f"/api/agents/master/script-store/{scope}/s/k", data={"value": 1}, format="json"
    )
    assert response.status_code in (404, 422)


def test_it_refuses_a_script_store_put_without_value(owner_client, master, workspace):
    response = owner_client.put(
        "/api/agents/master/script-store/schedule/s/k", data={}, format="json"
    )
    assert response.status_code == 422
    assert owner_client.get("/api/agents/master/script-store/schedule/s/k").status_code == 404
