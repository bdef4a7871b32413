"""User scope (SPEC §2): USER.md, facts, INDEX.md, stale facts."""

from __future__ import annotations

import pytest

from memory import facts
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


def test_a_lone_surrogate_never_reaches_a_fact_file_from_inside(workspace, master):
    from memory import facts
    from memory.errors import InvalidInput

    with pytest.raises(InvalidInput):
        facts.save_fact(
            "bad", description="x\ud800", type="preference", body="", written_by="owner",
            source="web",
        )  # fmt: skip
    assert not (workspace / "users/owner/facts/bad.md").exists()
