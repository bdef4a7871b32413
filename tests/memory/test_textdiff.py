"""memory.textdiff's three-way merge (SPEC §7, re-apply on the current text): each change of
base → proposed applied where its lines now stand, exactly; one that touches a line
changed since is a conflict, left out; lines both add at one place are all kept."""

from __future__ import annotations

from diff_match_patch import diff_match_patch

from memory.textdiff import find_run, merge3

BASE = "# M\n- a\n- Báo cáo thứ Sáu.\n- b\n"


def test_changes_apply_where_their_lines_now_stand():
    proposed = "# M\n- a (2026-01-05)\n- Báo cáo thứ Sáu.\n- b\n- c\n"
    current = "# intro\n# M\n- a\n- Báo cáo thứ Năm.\n- b\n- chat\n"

    merged = merge3(BASE, proposed, current)

    assert merged.text == "# intro\n# M\n- a (2026-01-05)\n- Báo cáo thứ Năm.\n- b\n- chat\n- c\n"
    assert merged.conflicts == []
    assert [hunk.applied for hunk in merged.hunks] == [True, True]


def test_a_change_to_a_line_changed_since_is_a_conflict_and_left_out():
    proposed = "# M\n- a\n- Báo cáo thứ Bảy.\n- b\n"
    current = "# M\n- a\n- Báo cáo thứ Năm.\n- b\n"

    merged = merge3(BASE, proposed, current)

    assert merged.text == current
    (conflict,) = merged.conflicts
    assert conflict.removed == ["- Báo cáo thứ Sáu.\n"]
    assert conflict.added == ["- Báo cáo thứ Bảy.\n"]
    assert conflict.current == ["- Báo cáo thứ Năm.\n"]


def test_dropping_a_line_changed_since_is_a_conflict():
    merged = merge3(BASE, "# M\n- a\n- b\n", "# M\n- a\n- Báo cáo thứ Năm.\n- b\n")
    assert merged.text == "# M\n- a\n- Báo cáo thứ Năm.\n- b\n"
    assert len(merged.conflicts) == 1


def test_patch_apply_would_have_clobbered_what_merge3_keeps():
    """Why not diff-match-patch's patch_apply: it matches fuzzily and applies a change over
    a line that says something else now."""
    proposed = "# M\n- a\n- Báo cáo thứ Bảy.\n- b\n"
    current = "# M\n- a\n- Báo cáo thứ Năm.\n- b\n"
    engine = diff_match_patch()
    fuzzy, applied = engine.patch_apply(engine.patch_make(BASE, proposed), current)
    assert all(applied) and "thứ Năm" not in fuzzy  # the owner's change silently lost
    assert "thứ Năm" in merge3(BASE, proposed, current).text


def test_a_new_file_merges_with_one_created_since_by_keeping_both():
    assert merge3(None, "x\n", "y\n").text == "y\nx\n"
    assert merge3(None, "x\n", None).text == "x\n"


def test_find_run_finds_the_run_nearest_where_it_was_put():
    lines = ["a\n", "x\n", "y\n", "b\n", "x\n", "y\n"]
    assert find_run(lines, ["x\n", "y\n"], near=4) == 4
    assert find_run(lines, ["x\n", "y\n"], near=0) == 1
    assert find_run(lines, ["x\n", "z\n"]) is None
