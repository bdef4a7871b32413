"""SPEC §1–§3 and §5 (writes): files on disk, names, INDEX.md, notes, memory_save, memory_get."""

from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo

import pytest

from memory import clock
from tests.helpers import call_tool

FACT = {"description": "likes black coffee", "type": "preference", "body": "No sugar."}


def _put_fact(client, name, **overrides):
    return client.put(f"/api/memory/user/facts/{name}", data={**FACT, **overrides}, format="json")


# --- §1 ---------------------------------------------------------------------------------


def test_it_treats_missing_files_as_absent_not_errors(owner_client, master, workspace):
    for path in ("USER.md", "MEMORY.md"):
        assert not (workspace / path).exists()
    user = owner_client.get("/api/memory/user")
    assert user.status_code == 200
    assert user.json()["facts"] == []
    context = owner_client.get("/api/agents/master/memory/context", {"conversation": "c1"})
    assert context.status_code == 200
    assert context.json() == {"system": "", "pre_turn": ""} or (
        "## MEMORY.md" not in context.json()["system"]
        and "## USER.md" not in context.json()["system"]
    )


def test_it_creates_an_agent_dir_with_memory_md_and_memory_when_an_agent_is_created(
    owner_client, master, workspace
):
    response = owner_client.post(
        "/api/agents", data={"id": "scout", "name": "Scout"}, format="json"
    )
    assert response.status_code == 201
    assert (workspace / "agents/scout/memory").is_dir()
    # SPEC §1: "holds MEMORY.md and memory/; both are created when the agent is created".
    assert (workspace / "agents/scout/MEMORY.md").is_file()


# --- §2 ---------------------------------------------------------------------------------


def test_it_writes_a_fact_with_the_full_frontmatter(owner_client, master, workspace):
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
        f"written_by: owner\nsource: web\nupdated: '{clock.today().isoformat()}'\n---\n"
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


# --- §3 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "2026-09-19%0A",
        "2026-02-30",
        "2026-13-01",
        "2026-09-19-",
        "2026-09-19-ABC",
        "2026-09-19-a_b",
        "2026-09-19-a.b",
        "２026-09-19",
        "2026-09-19-١",
        "..",
        "2026-09-19%2F..",
        "2026-09-19%00",
        "26-09-19",
        "2026-9-19",
        "2026-09-19_x",
        "٢٠٢٦-09-19",
        "notes",
        "..%2F2026-09-19",
        "2026-09-19%2F..%2F..%2Fx",
    ],
)
def test_it_refuses_a_bad_note_name_with_422_and_writes_nothing(
    owner_client, master, workspace, name
):
    response = owner_client.put(
        f"/api/agents/master/memory/notes/{name}", data={"body": "x\n"}, format="json"
    )
    assert response.status_code == 422, (name, response.status_code)
    assert not list((workspace / "memory").glob("*.md"))
    assert owner_client.get(f"/api/agents/master/memory/notes/{name}").status_code == 422


@pytest.mark.parametrize(
    "name", ["2026-09-19", "2026-09-19-1030", "2024-02-29-a-b", "2026-09-19-x9"]
)
def test_it_accepts_a_note_name_with_an_optional_suffix(owner_client, master, workspace, name):
    response = owner_client.put(
        f"/api/agents/master/memory/notes/{name}", data={"body": "hello\n"}, format="json"
    )
    assert response.status_code in (200, 201)
    assert response.json()["body"] == "hello\n"
    assert (workspace / f"memory/{name}.md").read_text(encoding="utf-8") == "hello\n"


def test_it_lists_notes_newest_first_with_day_name_size_modified(owner_client, master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory/2026-01-01.md").write_text("a\n", encoding="utf-8")
    (workspace / "memory/2026-01-03.md").write_text("abc\n", encoding="utf-8")
    (workspace / "memory/2026-01-02-x.md").write_text("ab\n", encoding="utf-8")
    rows = owner_client.get("/api/agents/master/memory/notes").json()
    rows = rows["results"] if isinstance(rows, dict) else rows
    assert [r["name"] for r in rows][:3] == ["2026-01-03.md", "2026-01-02-x.md", "2026-01-01.md"]
    assert rows[0]["day"] == "2026-01-03" and rows[0]["size"] == 4 and rows[0]["modified"]


# --- §5 memory_save -----------------------------------------------------------------------


def test_it_appends_memory_save_lines_under_a_heading_created_once(
    owner_client, master, workspace, settings
):
    today = dt.datetime.now(ZoneInfo(settings.MEMORY_TIME_ZONE)).date().isoformat()
    assert call_tool(owner_client, "memory_save", text="first").status_code == 200
    assert call_tool(owner_client, "memory_save", text="second\nline\r\nthree").status_code == 200
    text = (workspace / f"memory/{today}.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == f"# {today}"
    assert text.count(f"# {today}") == 1
    body = [line for line in lines if line.startswith("- ")]
    assert len(body) == 2
    assert re.fullmatch(r"- \d\d:\d\d first", body[0])
    assert re.fullmatch(r"- \d\d:\d\d second line three", body[1])
    assert text.endswith("\n")


@pytest.mark.parametrize("text", ["", "   ", "\n\n", " \r\n\t "])
def test_it_refuses_empty_memory_save_text(owner_client, master, workspace, text):
    response = call_tool(owner_client, "memory_save", text=text)
    assert response.status_code == 422
    assert not list((workspace / "memory").glob("*.md"))


def test_it_writes_memory_save_in_the_owner_time_zone(owner_client, master, workspace, settings):
    # Pick a zone whose calendar day differs from UTC's right now, so "today" is testable.
    now = dt.datetime.now(dt.UTC)
    zone = next(
        z
        for z in (
            "Pacific/Pago_Pago",
            "Pacific/Kiritimati",
            "Asia/Ho_Chi_Minh",
            "America/Los_Angeles",
        )
        if now.astimezone(ZoneInfo(z)).date() != now.date()
    )
    settings.MEMORY_TIME_ZONE = zone
    local = dt.datetime.now(ZoneInfo(zone))
    assert call_tool(owner_client, "memory_save", text="tz probe").status_code == 200
    note = workspace / f"memory/{local.date().isoformat()}.md"
    assert note.exists(), sorted(p.name for p in (workspace / "memory").iterdir())
    line = [x for x in note.read_text(encoding="utf-8").splitlines() if x.endswith("tz probe")][0]
    hour = int(line[2:4])
    assert hour in (local.hour, (local.hour + 1) % 24)


# --- §5 memory_get ------------------------------------------------------------------------


def test_it_reads_at_most_120_lines_and_hints_the_next_from_line(owner_client, master, workspace):
    (workspace / "MEMORY.md").write_text(
        "".join(f"line {i}\n" for i in range(1, 301)), encoding="utf-8"
    )
    result = call_tool(owner_client, "memory_get", path="MEMORY.md").json()["result"]
    assert "line 120\n" in result
    assert "line 121\n" not in result and not result.rstrip().endswith("line 121")
    assert "from_line" in result and "121" in result.split("line 120", 1)[1]


def test_it_reads_at_most_12000_characters_and_hints_the_next_from_line(
    owner_client, master, workspace
):
    (workspace / "MEMORY.md").write_text(
        "".join(f"{i:04d}" + "x" * 995 + "\n" for i in range(1, 31)), encoding="utf-8"
    )
    result = call_tool(owner_client, "memory_get", path="MEMORY.md").json()["result"]
    shown = [line for line in result.splitlines() if re.match(r"\d{4}x", line)]
    assert sum(len(line) + 1 for line in shown) <= 12000
    assert 0 < len(shown) < 30
    nxt = len(shown) + 1
    assert "from_line" in result and str(nxt) in result.split(shown[-1], 1)[1]
    # Exactly: 23 lines of 501 characters are 11,523; a 24th would pass 12,000.
    lines = [f"{n:03d}" + "x" * 497 + "\n" for n in range(1, 51)]
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory/wide.md").write_text("".join(lines), encoding="utf-8")
    assert call_tool(owner_client, "memory_get", path="memory/wide.md").json()["result"] == (
        "".join(lines[:23]) + "[… more: call memory_get with from_line=24]"
    )


def test_it_reads_everything_asked_with_lines(owner_client, master, workspace):
    (workspace / "MEMORY.md").write_text(
        "".join(f"line {i}\n" for i in range(1, 301)), encoding="utf-8"
    )
    result = call_tool(
        owner_client, "memory_get", path="MEMORY.md", from_line=150, lines=100
    ).json()["result"]
    assert "line 150\n" in result and "line 249" in result and "line 250" not in result
    assert "line 149\n" not in result


@pytest.mark.parametrize(
    "path",
    [
        "../outside.md",
        "/etc/passwd",
        "USER.md",
        "users/owner/USER.md",
        "users/owner/facts/INDEX.md.txt",
        "memory/notes.txt",
        "agents/helper/MEMORY.md",
        "memory/../../outside.md",
        "memory/link.md",
    ],
)
def test_it_refuses_memory_get_outside_memory_files(
    owner_client, master, helper_agent, workspace, tmp_path, path
):
    (tmp_path / "outside.md").write_text("secret outside\n", encoding="utf-8")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory/link.md").symlink_to(tmp_path / "outside.md")
    (workspace / "memory/notes.txt").write_text("txt secret\n", encoding="utf-8")
    (workspace / "agents/helper/MEMORY.md").write_text("helper secret\n", encoding="utf-8")
    response = call_tool(owner_client, "memory_get", path=path)
    text = response.content.decode()
    assert "secret" not in text and "root:" not in text
    assert response.status_code in (200, 403, 404, 422)


def test_it_reads_a_shared_fact_by_the_path_search_shows(owner_client, master, workspace):
    _put_fact(owner_client, "coffee")
    result = call_tool(owner_client, "memory_get", path="users/owner/facts/coffee.md").json()[
        "result"
    ]
    assert "No sugar." in result
