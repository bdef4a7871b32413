"""SPEC §4: the system-prompt sections, the pre-turn notes block, group chats."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from tests.helpers import write_by_hand


def _context(client, conversation=None, chat=None, agent="master"):
    params = {}
    if conversation is not None:
        params["conversation"] = conversation
    if chat is not None:
        params["chat"] = chat
    response = client.get(f"/api/agents/{agent}/memory/context", params)
    assert response.status_code == 200, response.content
    return response.json()


def _today(settings) -> dt.date:
    return dt.datetime.now(ZoneInfo(settings.MEMORY_TIME_ZONE)).date()


def _save(client, text):
    response = client.post(
        "/api/agents/master/tools/memory_save", data={"text": text}, format="json"
    )
    assert response.status_code == 200


# --- §4.1 --------------------------------------------------------------------------------


def test_it_renders_the_three_sections_in_order_with_their_text(owner_client, master, workspace):
    write_by_hand(workspace / "users/owner/USER.md", "I am Lan.\n")
    write_by_hand(workspace / "MEMORY.md", "Durable truth.\n")
    owner_client.put(
        "/api/memory/user/facts/coffee",
        data={"description": "likes coffee", "type": "preference", "body": "b"},
        format="json",
    )
    system = _context(owner_client, "c1")["system"]
    assert "## USER.md\nI am Lan." in system
    assert (
        "## INDEX.md\n" in system and "- [coffee](coffee.md) (preference) — likes coffee" in system
    )
    assert "## MEMORY.md\nDurable truth." in system
    assert system.index("## USER.md") < system.index("## INDEX.md") < system.index("## MEMORY.md")


def test_it_skips_a_missing_file_section(owner_client, master, workspace):
    write_by_hand(workspace / "MEMORY.md", "Only memory.\n")
    system = _context(owner_client, "c1")["system"]
    assert "## USER.md" not in system and "## INDEX.md" not in system
    assert system.startswith("## MEMORY.md\nOnly memory.")


@pytest.mark.parametrize(
    "rel,title,cap",
    [("users/owner/USER.md", "USER.md", 4000), ("MEMORY.md", "MEMORY.md", 24000)],
)
def test_it_caps_a_section_and_ends_it_with_an_ellipsis(
    owner_client, master, workspace, rel, title, cap
):
    text = "".join(f"{i:06d} abcdefghij\n" for i in range(cap // 10))
    write_by_hand(workspace / rel, text)
    system = _context(owner_client, "c1")["system"]
    start = system.index(f"## {title}\n") + len(f"## {title}\n")
    rest = system[start:]
    section = rest.split("\n\n## ", 1)[0]
    assert section.endswith("…")
    assert len(section) <= cap
    assert len(section) >= cap - 1
    assert text.startswith(section[:-1])
    # The file itself is stored whole.
    assert (workspace / rel).read_text(encoding="utf-8") == text


def test_it_does_not_cut_a_section_at_exactly_the_cap(owner_client, master, workspace):
    text = "x" * 4000
    write_by_hand(workspace / "users/owner/USER.md", text)
    system = _context(owner_client, "c1")["system"]
    assert f"## USER.md\n{text}" in system
    assert "…" not in system


def test_it_caps_index_md_at_4000(owner_client, master, workspace):
    for i in range(80):
        owner_client.put(
            f"/api/memory/user/facts/fact-{i:03d}",
            data={"description": "d" * 60, "type": "profile", "body": ""},
            format="json",
        )
    assert len((workspace / "users/owner/facts/INDEX.md").read_text(encoding="utf-8")) > 4000
    system = _context(owner_client, "c1")["system"]
    section = system.split("## INDEX.md\n", 1)[1].split("\n\n## ", 1)[0]
    assert len(section) <= 4000 and section.endswith("…")


# --- §4.2 --------------------------------------------------------------------------------


def test_it_follows_the_cursor_sequence_across_two_conversations(
    owner_client, master, workspace, settings
):
    today = _today(settings)
    yesterday = today - dt.timedelta(days=1)
    write_by_hand(
        workspace / f"memory/{yesterday}.md", f"# {yesterday}\n\n- 09:00 yesterday line\n"
    )
    _save(owner_client, "first today")

    first = _context(owner_client, "conv-a")["pre_turn"]
    assert "yesterday line" in first and "first today" in first
    assert first.index("first today") < first.index("yesterday line")  # newest first
    assert f"# {today}" in first  # whole, heading included

    assert _context(owner_client, "conv-a")["pre_turn"] == ""  # nothing new

    _save(owner_client, "second today")
    later = _context(owner_client, "conv-a")["pre_turn"]
    assert "second today" in later
    assert "first today" not in later and "yesterday line" not in later

    # Another conversation starts from scratch: both notes whole.
    other = _context(owner_client, "conv-b")["pre_turn"]
    assert "yesterday line" in other and "first today" in other and "second today" in other

    # A rewrite (what was shown is no longer a prefix) shows the whole new version.
    write_by_hand(workspace / f"memory/{today}.md", f"# {today}\n\n- 10:00 rewritten\n")
    rewritten = _context(owner_client, "conv-a")["pre_turn"]
    assert "rewritten" in rewritten and f"# {today}" in rewritten
    assert _context(owner_client, "conv-a")["pre_turn"] == ""


def test_it_reads_every_note_of_today_and_yesterday_newest_first(
    owner_client, master, workspace, settings
):
    """What OpenClaw would load: session and slugged notes too, as OpenClaw writes them."""
    today = _today(settings)
    yesterday = today - dt.timedelta(days=1)
    write_by_hand(workspace / f"memory/{yesterday}-0821.md", "yesterday's session\n")
    write_by_hand(workspace / f"memory/{yesterday}-evening.md", "yesterday evening\n")
    write_by_hand(workspace / f"memory/{yesterday}.md", "yesterday plain\n")
    write_by_hand(workspace / f"memory/{today}-0930.md", "today's session\n")
    write_by_hand(workspace / f"memory/{today}.md", "today plain\n")
    write_by_hand(workspace / f"memory/{today - dt.timedelta(days=2)}.md", "two days ago\n")
    write_by_hand(workspace / "memory/facebook-books.md", "hand kept\n")
    block = _context(owner_client, "c1")["pre_turn"]
    titles = [line[3:] for line in block.split("\n") if line.startswith("## ")]
    assert titles == [
        f"memory/{today}.md",
        f"memory/{today}-0930.md",
        f"memory/{yesterday}.md",
        f"memory/{yesterday}-evening.md",
        f"memory/{yesterday}-0821.md",
    ]
    assert "two days ago" not in block and "hand kept" not in block
    # The morning after: yesterday's session notes are there although today has none.
    write_by_hand(workspace / f"memory/{yesterday}-2210.md", "late session\n")
    later = _context(owner_client, "c1")["pre_turn"]
    assert later == f"## memory/{yesterday}-2210.md\n```markdown\nlate session\n```"


def test_a_runtime_that_injects_user_and_memory_md_gets_neither(
    owner_client, master, workspace, settings
):
    write_by_hand(workspace / "users/owner/USER.md", "I am Lan.\n")
    write_by_hand(workspace / "MEMORY.md", "Durable truth.\n")
    _save(owner_client, "a note")
    response = owner_client.get(
        "/api/agents/master/memory/context", {"conversation": "oc", "runtime": "openclaw"}
    )
    assert response.status_code == 200, response.content
    assert response.json()["system"] == ""  # OpenClaw puts both in the prompt itself
    assert "a note" in response.json()["pre_turn"]
    bad = owner_client.get("/api/agents/master/memory/context", {"runtime": "hermes"})
    assert bad.status_code == 422


def test_it_keeps_daily_notes_out_of_the_system_prompt(owner_client, master, workspace, settings):
    _save(owner_client, "note text here")
    context = _context(owner_client, "c1")
    assert "note text here" not in context["system"]
    assert "note text here" in context["pre_turn"]


def test_it_takes_today_in_memory_time_zone(owner_client, master, workspace, settings):
    now = dt.datetime.now(dt.UTC)
    zone = next(
        z
        for z in ("Asia/Ho_Chi_Minh", "Pacific/Kiritimati", "Pacific/Pago_Pago")
        if now.astimezone(ZoneInfo(z)).date() != now.date()
    )
    settings.MEMORY_TIME_ZONE = zone
    local_today = now.astimezone(ZoneInfo(zone)).date()
    # The note two local days ago is neither today nor yesterday there, whatever UTC says.
    for day in (
        local_today,
        local_today - dt.timedelta(days=1),
        local_today - dt.timedelta(days=2),
        local_today + dt.timedelta(days=1),
    ):
        write_by_hand(workspace / f"memory/{day}.md", f"note of {day}\n")
    block = _context(owner_client, "tz")["pre_turn"]
    assert f"note of {local_today}" in block
    assert f"note of {local_today - dt.timedelta(days=1)}" in block
    assert f"note of {local_today - dt.timedelta(days=2)}" not in block
    assert f"note of {local_today + dt.timedelta(days=1)}" not in block


def test_it_keeps_the_cursor_in_the_database(owner_client, master, workspace, settings):
    from django.apps import apps

    _save(owner_client, "cursor probe")
    _context(owner_client, "conv-db")
    models = [m for m in apps.get_models() if "cursor" in m.__name__.lower()]
    assert models
    assert any(m.objects.count() > 0 for m in models)


# --- §4.3 --------------------------------------------------------------------------------


def test_it_gives_a_group_chat_no_private_memory(owner_client, master, workspace, settings):
    write_by_hand(workspace / "users/owner/USER.md", "private user\n")
    write_by_hand(workspace / "MEMORY.md", "private memory\n")
    _save(owner_client, "private note")
    context = _context(owner_client, "g1", chat="group")
    for secret in ("private user", "private memory", "private note", "INDEX.md"):
        assert secret not in context["system"] and secret not in context["pre_turn"]
    # A group turn must not advance the private cursor either.
    assert "private note" in _context(owner_client, "g1")["pre_turn"]


def test_it_treats_a_conversation_without_chat_as_private(owner_client, master, workspace):
    write_by_hand(workspace / "MEMORY.md", "private memory\n")
    assert "private memory" in _context(owner_client, "d1")["system"]


# --- test_owner_today.py --------------------
# SPEC §2/§4.2/§10.4: "today" is the owner's day (MEMORY_TIME_ZONE) everywhere a date is
# stamped — a fact's `updated`, a wiki page's `updated`, memory_save's note.


@pytest.fixture
def far_zone(settings) -> dt.date:
    """A zone whose calendar day differs from UTC's right now; returns its today."""
    now = dt.datetime.now(dt.UTC)
    for zone in (
        "Pacific/Kiritimati",
        "Pacific/Pago_Pago",
        "Asia/Ho_Chi_Minh",
        "America/Los_Angeles",
    ):
        if now.astimezone(ZoneInfo(zone)).date() != now.date():
            settings.MEMORY_TIME_ZONE = zone
            return dt.datetime.now(ZoneInfo(zone)).date()
    pytest.skip("no candidate zone differs from UTC at this minute")


def test_it_stamps_a_fact_with_the_owners_day(owner_client, master, workspace, far_zone):
    response = owner_client.put(
        "/api/memory/user/facts/tea",
        data={"description": "likes tea", "type": "preference", "body": ""},
        format="json",
    )
    assert response.status_code in (200, 201)
    assert response.json()["updated"] == far_zone.isoformat()


def test_it_stamps_a_wiki_page_with_the_owners_day(owner_client, master, workspace, far_zone):
    response = owner_client.put(
        "/api/agents/master/memory/wiki/pages/tea-house",
        data={"title": "Tea House", "kind": "entity", "sources": ["conv:1"], "body": "b"},
        format="json",
    )
    assert response.status_code in (200, 201)
    assert response.json()["updated"] == far_zone.isoformat()


def test_it_judges_staleness_by_the_owners_day(owner_client, master, workspace, far_zone):
    facts = workspace / "users/owner/facts"
    facts.mkdir(parents=True, exist_ok=True)
    edge = (far_zone - dt.timedelta(days=90)).isoformat()  # exactly 90 days: not stale yet
    (facts / "edge.md").write_text(
        f"---\nname: edge\ndescription: d\ntype: profile\nwritten_by: owner\nsource: web\n"
        f"updated: '{edge}'\n---\nb\n",
        encoding="utf-8",
    )
    (facts / "over.md").write_text(
        f"---\nname: over\ndescription: d\ntype: profile\nwritten_by: owner\nsource: web\n"
        f"updated: '{(far_zone - dt.timedelta(days=91)).isoformat()}'\n---\nb\n",
        encoding="utf-8",
    )
    stale = {f["name"]: f["stale"] for f in owner_client.get("/api/memory/user").json()["facts"]}
    assert stale == {"edge": False, "over": True}


def test_one_symlinked_daily_note_never_fails_the_prompt_context(
    owner_client, master, workspace, tmp_path, owner_today
):
    day = owner_today.isoformat()
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# secret\n")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / f"{day}.md").symlink_to(outside)
    (workspace / "MEMORY.md").write_text("- durable\n")
    response = owner_client.get("/api/agents/master/memory/context?conversation=c1")
    assert response.status_code == 200, response.content
    assert "- durable" in response.json()["system"]
    assert "secret" not in response.json()["pre_turn"]
    preview = owner_client.get("/api/agents/master/memory/context")
    assert preview.status_code == 200


def test_it_serves_the_prompt_context_and_moves_the_cursor(
    owner_client, master, workspace, owner_today
):
    day = owner_today.isoformat()
    (workspace / "MEMORY.md").write_text("- Owner: Minh\n")
    _save(owner_client, "sáng")
    url = "/api/agents/master/memory/context"
    first = owner_client.get(url, {"conversation": "tg-42"}).json()
    assert first["system"] == "## MEMORY.md\n- Owner: Minh"
    assert first["pre_turn"].startswith(f"## memory/{day}.md\n```markdown\n# {day}\n\n- ")
    assert owner_client.get(url, {"conversation": "tg-42"}).json()["pre_turn"] == ""
    # Without a conversation: the preview, nothing recorded.
    assert owner_client.get(url).json()["pre_turn"] == first["pre_turn"]
    group = owner_client.get(url, {"conversation": "g", "chat": "group"}).json()
    assert group == {"system": "", "pre_turn": ""}
    assert owner_client.get(url, {"chat": "public"}).status_code == 422
    # Nothing was recorded for the group turn, nor for the preview: conversation g and a
    # new one still get the whole block, and tg-42 still nothing new.
    assert owner_client.get(url, {"conversation": "g"}).json()["pre_turn"] == first["pre_turn"]
    assert owner_client.get(url, {"conversation": "new"}).json()["pre_turn"] == first["pre_turn"]
    assert owner_client.get(url, {"conversation": "tg-42"}).json()["pre_turn"] == ""
