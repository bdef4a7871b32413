"""Lint and reports (SPEC §10.6) on a vault made by hand, as a person would."""

import datetime as dt

from memory import clock, workspace
from wiki import pages


def hand_page(rel: str, text: str) -> None:
    workspace.write(f"memory/wiki/{rel}", text)


def days_ago(days: int) -> str:
    return (clock.today() - dt.timedelta(days=days)).isoformat()


def make_vault() -> None:
    hand_page(
        "entities/fine.md",
        f"---\ntitle: Fine\nkind: entity\nsources: [note:2026-11-01]\nstatus: ok\n"
        f"updated: {days_ago(90)}\n---\n\nLinks [[Concept A]].\n",
    )
    hand_page(
        "entities/unsourced.md",
        f"---\ntitle: Unsourced\nkind: entity\nstatus: ok\nupdated: {days_ago(1)}\n---\n\nx\n",
    )
    hand_page(
        "concepts/concept-a.md",
        f"---\ntitle: Concept A\nkind: concept\nsources: [conv:1]\nstatus: ok\n"
        f"updated: {days_ago(3)}\n---\n\nSee [[Nobody Wrote This]] and [[???]].\n",
    )
    hand_page(
        "syntheses/review-me.md",
        f"---\ntitle: Review me\nkind: synthesis\nsources: [conv:1]\nstatus: review\n"
        f"updated: {days_ago(3)}\nquestions:\n- Is it true?\n---\n\nbody\n",
    )
    hand_page(
        "syntheses/old.md",
        f"---\ntitle: Old\nkind: synthesis\nsources: [conv:1]\nstatus: ok\n"
        f"updated: {days_ago(91)}\n---\n\nold\n",
    )
    hand_page(
        "syntheses/undated.md",
        "---\ntitle: Undated\nkind: synthesis\nsources: [conv:1]\nstatus: ok\n---\n\nno date\n",
    )
    hand_page(
        "syntheses/bad-date.md",
        "---\ntitle: Bad date\nkind: synthesis\nsources: [conv:1]\nstatus: ok\n"
        "updated: last week\n---\n\nx\n",
    )
    hand_page("entities/no-frontmatter.md", "Just text, written by hand.\n")
    hand_page("notes-about-wiki.md", "not a page: outside the three folders\n")


def test_lint_reports_each_kind_of_issue_in_one_pass(master):
    make_vault()
    report = pages.report(master)
    found = {(issue["kind"], issue["slug"]) for issue in report["issues"]}
    assert found == {
        ("unsourced", "unsourced"),
        ("unsourced", "no-frontmatter"),
        ("dangling", "concept-a"),  # [[Nobody Wrote This]] and [[???]]
        ("review", "review-me"),
        ("review", "no-frontmatter"),
        ("stale", "old"),
        ("stale", "undated"),
        ("stale", "bad-date"),
        ("stale", "no-frontmatter"),
    }
    details = [i["detail"] for i in report["issues"] if i["kind"] == "dangling"]
    assert details == [
        "[[Nobody Wrote This]] → nobody-wrote-this: no such page",
        "[[???]] names no page",
    ]
    assert report["counts"] == {
        "unsourced": 2,
        "dangling": 2,
        "ambiguous": 0,
        "review": 2,
        "stale": 4,
    }
    assert report["pages"] == 8
    assert report["open_questions"] == [
        {
            "slug": "review-me",
            "key": "syntheses/review-me",
            "title": "Review me",
            "question": "Is it true?",
        }
    ]


def test_lint_deletes_nothing(master, workspace):
    make_vault()
    before = sorted(p.relative_to(workspace) for p in workspace.rglob("*.md"))
    pages.report(master)
    after = sorted(p.relative_to(workspace) for p in workspace.rglob("*.md"))
    assert set(before) <= set(after)


def test_the_reports_are_regenerated_whole(master):
    make_vault()
    pages.refresh(master)  # what every edit and compile does
    stale = workspace.read("memory/wiki/reports/stale.md")
    assert "- Old (syntheses/old.md): updated" in stale
    assert "- Undated (syntheses/undated.md): no updated date" in stale
    assert "- Bad date (syntheses/bad-date.md): updated is not a date: 'last week'" in stale
    questions = workspace.read("memory/wiki/reports/open-questions.md")
    assert "## Review me (syntheses/review-me.md)\n\n- Is it true?\n" in questions

    # A person's scribbles in a report do not survive, and a fixed page disappears.
    workspace.write("memory/wiki/reports/stale.md", stale + "\n- my own line\n")
    pages.save_page(master, title="Old", kind="synthesis", sources=["conv:1"], body="fresh")
    stale = workspace.read("memory/wiki/reports/stale.md")
    assert "syntheses/old.md" not in stale
    assert "my own line" not in stale
    assert "syntheses/undated.md" in stale
    pages.delete_page(master, "review-me")
    questions = workspace.read("memory/wiki/reports/open-questions.md")
    assert "Is it true?" not in questions
    assert questions.endswith("No open questions.\n")


def test_reports_are_not_pages_and_are_written_only_when_changed(master, workspace):
    make_vault()
    pages.refresh(master)  # what every edit and compile does
    assert "stale" not in [page.slug for page in pages.list_pages(master)]
    report_file = workspace / "memory/wiki/reports/stale.md"
    mtime = report_file.stat().st_mtime_ns
    assert pages.refresh(master).written == []
    assert report_file.stat().st_mtime_ns == mtime


def test_hand_made_pages_are_left_as_written_until_the_app_writes_them(master):
    # The app adds its machine block only to pages it writes (SPEC §10.1): a refresh never
    # touches a hand-made page; once the app writes it, the block comes with its links.
    make_vault()
    before = workspace.read("memory/wiki/concepts/concept-a.md")
    pages.refresh(master)  # what every edit and compile does
    assert workspace.read("memory/wiki/concepts/concept-a.md") == before
    pages.save_page(master, slug="concept-a", body="See [[Nobody Wrote This]].", partial=True)
    text = workspace.read("memory/wiki/concepts/concept-a.md")
    assert text.startswith("---\ntitle: Concept A\nkind: concept\nsources:\n- conv:1\n")
    assert "Linked from:\n- [[fine|Fine]]\n" in text
    assert "- [[nobody-wrote-this|Nobody Wrote This]] (no page yet)\n" in text
