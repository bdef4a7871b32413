"""SPEC §2/§4.2/§10.4: "today" is the owner's day (MEMORY_TIME_ZONE) everywhere a date is
stamped — a fact's `updated`, a wiki page's `updated`, memory_save's note."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest


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
