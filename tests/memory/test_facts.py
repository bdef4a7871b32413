"""User scope (SPEC §2): USER.md, facts, INDEX.md, stale facts."""

from __future__ import annotations

import datetime as dt

import pytest

from memory import clock, facts
from memory.errors import InvalidInput, NotFound


def _save(name="coffee", **overrides):
    fields = {
        "description": "Drinks coffee black, no sugar",
        "type": "preference",
        "body": "Said so on 2026-11-02.\n",
        "written_by": "master",
        "source": "telegram",
    }
    fields.update(overrides)
    return facts.save_fact(name, **fields)


def test_it_reads_and_writes_user_md(workspace):
    assert facts.read_user() == ""
    facts.write_user("# Minh\r\nKỹ sư phần mềm ở Hà Nội.\r\n")
    assert (workspace / "users/owner/USER.md").read_text(encoding="utf-8") == (
        "# Minh\nKỹ sư phần mềm ở Hà Nội.\n"
    )
    assert facts.read_user() == "# Minh\nKỹ sư phần mềm ở Hà Nội.\n"


def test_it_writes_a_fact_with_the_full_frontmatter(workspace):
    fact = _save()
    today = clock.today().isoformat()
    assert (workspace / "users/owner/facts/coffee.md").read_text(encoding="utf-8") == (
        "---\n"
        "name: coffee\n"
        "description: Drinks coffee black, no sugar\n"
        "type: preference\n"
        "written_by: master\n"
        "source: telegram\n"
        f"updated: '{today}'\n"
        "---\n"
        "\n"
        "Said so on 2026-11-02.\n"
    )
    assert fact == facts.Fact(
        name="coffee",
        description="Drinks coffee black, no sugar",
        type="preference",
        written_by="master",
        source="telegram",
        updated=today,
        body="Said so on 2026-11-02.",
        stale=False,
    )
    assert facts.get_fact("coffee") == fact


def test_it_regenerates_the_index_after_every_write_and_delete(workspace):
    _save("zalo-group", description="Family chat is on Zalo", type="reference")
    _save("coffee")
    _save("bp-target", description="Blood pressure target 130/80", type="profile")
    index = workspace / "users/owner/facts/INDEX.md"
    assert index.read_text(encoding="utf-8") == (
        "- [bp-target](bp-target.md) (profile) — Blood pressure target 130/80\n"
        "- [coffee](coffee.md) (preference) — Drinks coffee black, no sugar\n"
        "- [zalo-group](zalo-group.md) (reference) — Family chat is on Zalo\n"
    )

    facts.forget_fact("coffee")
    assert not (workspace / "users/owner/facts/coffee.md").exists()
    assert index.read_text(encoding="utf-8") == (
        "- [bp-target](bp-target.md) (profile) — Blood pressure target 130/80\n"
        "- [zalo-group](zalo-group.md) (reference) — Family chat is on Zalo\n"
    )


def test_it_overwrites_hand_edits_of_the_index(workspace):
    _save()
    (workspace / "users/owner/facts/INDEX.md").write_text("hand edit\n")
    _save("tea", description="Likes green tea")
    assert (workspace / "users/owner/facts/INDEX.md").read_text(encoding="utf-8") == (
        "- [coffee](coffee.md) (preference) — Drinks coffee black, no sugar\n"
        "- [tea](tea.md) (preference) — Likes green tea\n"
    )


def test_it_removes_the_index_when_the_last_fact_is_forgotten(workspace):
    _save()
    facts.forget_fact("coffee")
    assert not (workspace / "users/owner/facts/INDEX.md").exists()
    assert facts.list_facts() == []


@pytest.mark.parametrize(
    "name",
    ["Coffee", "coffee_black", "-coffee", "coffee-", "cof--fee", "", "a" * 65, "../x", "cà-phê"],
)
def test_it_refuses_a_name_that_is_not_a_slug(workspace, name):
    with pytest.raises(InvalidInput):
        _save(name)
    assert not (workspace / "users").exists()


@pytest.mark.parametrize(
    "overrides",
    [
        {"type": "opinion"},
        {"type": ""},
        {"description": ""},
        {"description": "   \n "},
        {"description": None},
        {"description": "x" * 301},
        {"written_by": ""},
        {"source": ""},
    ],
)
def test_it_refuses_a_bad_field_and_writes_nothing(workspace, overrides):
    with pytest.raises(InvalidInput):
        _save(**overrides)
    assert not (workspace / "users").exists()


def test_it_keeps_the_description_on_one_line(workspace):
    _save(description="Drinks coffee\nblack")
    assert facts.read_index() == "- [coffee](coffee.md) (preference) — Drinks coffee black\n"


def test_it_marks_a_fact_stale_after_90_days(workspace):
    today = clock.today()
    for name, age in (("fresh", 90), ("old", 91)):
        text = facts.render_fact(
            name,
            description=f"{age} days",
            type="profile",
            body="",
            written_by="owner",
            source="web",
            updated=(today - dt.timedelta(days=age)).isoformat(),
        )
        (workspace / "users/owner/facts").mkdir(parents=True, exist_ok=True)
        (workspace / f"users/owner/facts/{name}.md").write_text(text)
    assert [(fact.name, fact.stale) for fact in facts.list_facts()] == [
        ("fresh", False),
        ("old", True),
    ]


def test_it_reads_a_hand_made_fact_and_skips_files_that_are_not_facts(workspace):
    folder = workspace / "users/owner/facts"
    folder.mkdir(parents=True)
    (folder / "pho.md").write_text("Thích phở bò.\n", encoding="utf-8")
    (folder / "Not A Fact.md").write_text("ignored\n")
    (folder / "INDEX.md").write_text("- old index\n")
    assert facts.list_facts() == [
        facts.Fact("pho", "", "", "", "", "", "Thích phở bò.", stale=True)
    ]
    assert facts.count_facts() == 1


def test_it_raises_not_found_for_an_unknown_fact(workspace):
    assert facts.get_fact("nope") is None
    with pytest.raises(NotFound):
        facts.get_fact_or_404("nope")
    with pytest.raises(NotFound):
        facts.forget_fact("nope")
