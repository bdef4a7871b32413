"""The diff is data (op, line) rows; the renderer escapes every piece."""

from __future__ import annotations

from proposals.diff import FileDiff, Row, diff_lines, file_diff, render_file_diffs


def test_it_computes_rows_with_context():
    rows = diff_lines("a\nb\nc\n", "a\nB\nc\nd\n")

    assert rows == [
        ("@", "@@ -1,3 +1,4 @@"),
        (" ", "a"),
        ("-", "b"),
        ("+", "B"),
        (" ", "c"),
        ("+", "d"),
    ]


def test_it_names_the_change_of_each_file():
    assert file_diff("x.md", None, "new\n").change == "create"
    assert file_diff("x.md", "old\n", None).change == "delete"
    assert file_diff("x.md", "same\n", "same\n").change == "unchanged"
    assert file_diff("x.md", "old\n", "new\n").change == "modify"
    assert [(r.op, r.text) for r in file_diff("x.md", "old\n", None).rows if r.op != "?"] == [
        ("@", "@@ -1,1 +1,0 @@"),
        ("-", "old"),
    ]


def test_it_escapes_paths_and_lines():
    html = render_file_diffs(
        [FileDiff("<p>.md", "modify", [Row("-", "<script>x</script>"), Row("+", "a & b")])]
    )

    assert "<code>&lt;p&gt;.md</code> (changed)" in html
    assert '<span class="diff-removed">-&lt;script&gt;x&lt;/script&gt;</span>' in html
    assert '<span class="diff-added">+a &amp; b</span>' in html
    assert "<script>" not in html
