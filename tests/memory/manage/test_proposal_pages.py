"""Proposals on the Memory tab: queue, diffs, approve / reject / undo, 409 messages,
consolidate now (SPEC §7, §8, §15)."""

from memory import facts, notes
from memory.models import Run
from memory.writes import (
    add_memory_lines_or_propose,
    save_fact_or_propose,
    write_memory_or_propose,
)
from proposals.models import Proposal


def text_of(response) -> str:
    return response.content.decode()


def badge(html: str) -> str:
    start = html.index('id="pending-badge">') + len('id="pending-badge">')
    return html[start : html.index("<", start)]


def job_fact(name="coffee", description="Cà phê đen, không đường"):
    _, proposal = save_fact_or_propose(
        name,
        description=description,
        type="preference",
        body="Sáng nào cũng uống.",
        source="job:nightly",
        written_by="master",
    )
    return proposal


def test_it_lists_pending_proposals_first_with_reasons_and_diffs(pages, master, workspace):
    facts.save_fact(
        "coffee", description="Trà", type="preference", body="", written_by="owner", source="web"
    )
    proposal = job_fact()
    notes.write_memory(master, "- Lan đọc sách (2026-11-01)\n")
    _, lines = add_memory_lines_or_propose(master, ["Lan chạy bộ mỗi sáng"], source="job:nightly")

    html = text_of(pages.get("/manage/memory/proposals/"))
    assert badge(html) == "2"
    assert "master asked to update the fact &#x27;coffee&#x27; from job:nightly." in html
    assert html.index(f"row-{proposal.pk}") < html.index(f"row-{lines.pk}")
    # The full card opens in place, under its row.
    html = text_of(pages.get(f"/manage/memory/proposals/?open={proposal.pk}"))
    # A fact reads as field changes, not as frontmatter lines.
    assert (
        "<dt>description</dt><dd><del>Trà</del> → <ins>Cà phê đen, không đường</ins></dd>" in html
    )
    assert '<span class="diff-removed">-description: Trà</span>' not in html
    html = text_of(pages.get(f"/manage/memory/proposals/?open={lines.pk}"))
    assert "Lines it would add to MEMORY.md" in html
    assert '<span class="diff-added">+ Lan chạy bộ mỗi sáng</span>' in html
    detail = text_of(pages.get(f"/manage/memory/proposals/{proposal.pk}/"))
    assert "Approve" in detail and "Reject" in detail


def test_it_approves_then_undoes_a_proposal_and_the_badge_follows(pages, master, workspace):
    proposal = job_fact()
    assert badge(text_of(pages.get("/manage/memory/"))) == "1"

    response = pages.post(f"/manage/memory/proposals/{proposal.pk}/approve/", follow=True)
    html = text_of(response)
    assert f"Proposal {proposal.pk} approved." in html
    assert badge(html) == "0"
    assert "Cà phê đen, không đường" in (workspace / "users/owner/facts/coffee.md").read_text()
    proposal.refresh_from_db()
    assert (proposal.status, proposal.decided_by) == ("approved", "alice")

    response = pages.post(f"/manage/memory/proposals/{proposal.pk}/undo/", follow=True)
    assert f"Proposal {proposal.pk} undone." in text_of(response)
    assert not (workspace / "users/owner/facts/coffee.md").exists()
    proposal.refresh_from_db()
    assert proposal.undone_at is not None and proposal.undone_by == "alice"


def test_it_shows_409_messages_for_a_second_decision_or_undo(pages, master, workspace):
    proposal = job_fact()
    pages.post(f"/manage/memory/proposals/{proposal.pk}/approve/")
    again = text_of(pages.post(f"/manage/memory/proposals/{proposal.pk}/approve/", follow=True))
    assert f"Conflict: Proposal {proposal.pk} was already decided (approved)." in again
    rejected = text_of(pages.post(f"/manage/memory/proposals/{proposal.pk}/reject/", follow=True))
    assert f"Conflict: Proposal {proposal.pk} was already decided (approved)." in rejected
    pages.post(f"/manage/memory/proposals/{proposal.pk}/undo/")
    twice = text_of(pages.post(f"/manage/memory/proposals/{proposal.pk}/undo/", follow=True))
    assert f"Conflict: Proposal {proposal.pk} was already undone." in twice


def test_it_marks_a_stale_proposal_superseded_and_says_so(pages, master, workspace):
    notes.write_memory(master, "- a\n")
    proposal = write_memory_or_propose(master, "- a\nb\n", source="job:nightly")
    notes.write_memory(master, "- a hand edit\n")
    html = text_of(pages.post(f"/manage/memory/proposals/{proposal.pk}/approve/", follow=True))
    assert (
        f"Conflict: Proposal {proposal.pk} is superseded: MEMORY.md changed since it was proposed."
        in html
    )
    assert (workspace / "MEMORY.md").read_text() == "- a hand edit\n"
    proposal.refresh_from_db()
    assert proposal.status == "superseded"


def test_it_refuses_an_undo_after_a_later_change(pages, master, workspace):
    notes.write_memory(master, "- a\n")
    proposal = write_memory_or_propose(master, "- a\nb\n", source="job:nightly")
    pages.post(f"/manage/memory/proposals/{proposal.pk}/approve/")
    assert (workspace / "MEMORY.md").read_text() == "- a\nb\n"
    notes.write_memory(master, "- a\nb\n- later\n")
    html = text_of(pages.post(f"/manage/memory/proposals/{proposal.pk}/undo/", follow=True))
    assert (
        f"Conflict: Cannot undo proposal {proposal.pk}: MEMORY.md changed since it was applied."
        in html
    )
    # What to do instead: restore a version from the file's history, linked.
    assert "restore an earlier version from the history" in html
    assert '<a href="/manage/memory/history/?path=MEMORY.md">MEMORY.md</a>' in html
    assert (workspace / "MEMORY.md").read_text() == "- a\nb\n- later\n"


def test_undoing_lines_after_a_later_change_takes_out_only_those_lines(pages, master, workspace):
    notes.write_memory(master, "- a\n")
    _, proposal = add_memory_lines_or_propose(master, ["b"], source="job:nightly")
    pages.post(f"/manage/memory/proposals/{proposal.pk}/approve/")
    notes.write_memory(master, "- a\nb\n- later\n")
    html = text_of(pages.post(f"/manage/memory/proposals/{proposal.pk}/undo/", follow=True))
    assert f"Proposal {proposal.pk} undone." in html
    assert (workspace / "MEMORY.md").read_text() == "- a\n- later\n"


def test_it_rejects_a_proposal_and_writes_nothing(pages, master, workspace):
    proposal = job_fact()
    html = text_of(pages.post(f"/manage/memory/proposals/{proposal.pk}/reject/", follow=True))
    assert f"Proposal {proposal.pk} rejected." in html
    assert not (workspace / "users/owner/facts/coffee.md").exists()
    assert Proposal.objects.get(pk=proposal.pk).status == "rejected"
    history = text_of(pages.get("/manage/memory/proposals/"))
    assert f"#{proposal.pk}" in history and "Nothing waits for you." in history


def test_it_only_decides_on_post(pages, master):
    proposal = job_fact()
    assert pages.get(f"/manage/memory/proposals/{proposal.pk}/approve/").status_code == 405
    assert Proposal.objects.get(pk=proposal.pk).status == "pending"


def test_it_starts_a_consolidation_now(pages, master, workspace):
    html = text_of(pages.post("/manage/memory/agents/master/consolidate/", follow=True))
    run = Run.objects.get(agent=master, kind="consolidate")
    # No model is configured here: the page says so instead of "started".
    assert f"run #{run.pk} is recorded as skipped and nothing changed" in html
    assert "Consolidation started" not in html
    activity = text_of(pages.get("/manage/memory/activity/"))
    assert f'<td data-label="#">{run.pk}</td>' in activity


def test_it_says_409_when_a_consolidation_already_runs(pages, master, workspace):
    from memory.jobs.runs import start_run

    running = start_run(master, "compile", trigger="test")
    html = text_of(pages.post("/manage/memory/agents/master/consolidate/", follow=True))
    assert html.count('class="message error"') == 1
    assert "Conflict: a consolidation or compile is already running for master" in html
    assert list(Run.objects.filter(agent=master)) == [running]


def test_activity_lists_runs_newest_first_with_tokens_and_cost(pages, master, helper_agent):
    from decimal import Decimal

    old = Run.objects.create(
        agent=master,
        kind="consolidate",
        status="succeeded",
        tokens_in=1200,
        tokens_out=340,
        cost=Decimal("0.0123"),
        summary="rewrote MEMORY.md",
        model="gpt-4o-mini",
    )
    new = Run.objects.create(
        agent=helper_agent, kind="compile", status="skipped", summary="no model configured"
    )
    html = text_of(pages.get("/manage/memory/activity/"))
    assert html.index(f'<td data-label="#">{new.pk}</td>') < html.index(
        f'<td data-label="#">{old.pk}</td>'
    )
    assert "1200 / 340" in html and "$0.0123" in html and "gpt-4o-mini" in html
    assert "rewrote MEMORY.md" in html and "no model configured" in html
    only = text_of(pages.get("/manage/memory/activity/?agent=helper"))
    assert "no model configured" in only and "rewrote MEMORY.md" not in only


def test_a_wiki_batch_shows_one_diff_per_page_and_approves_as_one(pages, master, workspace):
    from proposals.actions import propose
    from wiki import pages as wiki_pages

    wiki_pages.save_page(
        master, title="Minh", kind="entity", sources=["note:2026-11-28"], body="Quản lý."
    )
    batch = propose(
        "wiki_compile",
        agent=master,
        target="memory/wiki",
        payload={
            "pages": [
                {
                    "title": "Minh",
                    "kind": "entity",
                    "sources": ["note:2026-11-29"],
                    "body": "Quản lý của Lan; nhận báo cáo thứ Năm.",
                },
                {
                    "title": "Eco Retreat",
                    "kind": "entity",
                    "sources": ["note:2026-11-29"],
                    "body": "Hạn nộp 15/12. [[Minh]] duyệt ngân sách.",
                },
            ]
        },
        reasons=["compile run"],
        source="job:compile",
    )
    html = pages.get(f"/manage/memory/proposals/{batch.pk}/").content.decode()
    assert "<code>memory/wiki/entities/minh.md</code> (changed)" in html
    assert "<code>memory/wiki/entities/eco-retreat.md</code> (new file)" in html
    assert '<span class="diff-removed">-Quản lý.</span>' in html
    assert (
        '<span class="diff-added">+Quản lý<mark> của Lan; nhận báo cáo thứ Năm</mark>.</span>'
        in html
    )
    pages.post(f"/manage/memory/proposals/{batch.pk}/approve/")
    assert (workspace / "memory/wiki/entities/eco-retreat.md").exists()
    assert "thứ Năm" in (workspace / "memory/wiki/entities/minh.md").read_text()


def test_a_stale_rewrite_is_reapplied_from_its_page_with_the_conflict_shown(
    pages, master, workspace
):
    notes.write_memory(master, "- a\n- keep\n- Báo cáo thứ Sáu.\n")
    proposal = write_memory_or_propose(
        master, "- a (2026-01-05)\n- keep\n- Báo cáo thứ Bảy.\n", source="job:nightly"
    )
    notes.write_memory(master, "- a\n- keep\n- Báo cáo thứ Năm.\n")

    card = text_of(pages.get(f"/manage/memory/proposals/{proposal.pk}/"))
    shown = text_of(pages.get(f"/manage/memory/proposals/{proposal.pk}/reapply/"))
    form = {"path-0": "MEMORY.md", "seen-0": "stale", "merged-0": "", "text-0": ""}
    moved = pages.post(f"/manage/memory/proposals/{proposal.pk}/reapply/", form, follow=True)

    assert "Re-apply on the current text…" in card
    assert "1 change merged" in shown
    assert "1 change conflicts with what changed since (left out)" in shown
    assert '<span class="diff-added">+- Báo cáo thứ Bảy.\n</span>' in shown
    assert '<span class="diff-same"> - Báo cáo thứ Năm.\n</span>' in shown
    assert "changed again since you looked" in text_of(moved)
    from memory import history

    merged = "- a (2026-01-05)\n- keep\n- Báo cáo thứ Năm.\n"
    form = {
        "path-0": "MEMORY.md",
        "seen-0": history.current_hash("MEMORY.md"),
        "merged-0": merged,
        "text-0": merged,
    }
    done = text_of(
        pages.post(f"/manage/memory/proposals/{proposal.pk}/reapply/", form, follow=True)
    )
    assert f"Proposal {proposal.pk} approved, re-applied on the current text." in done
    assert (workspace / "MEMORY.md").read_text() == merged
    proposal.refresh_from_db()
    assert proposal.status == "approved"
