"""The review and history screens (SPEC §7, §15): bounded diffs on huge files,
decisions in part, edited and in bulk from the pages, the banner, history, restore, blame
and provenance on the agent screen."""

from __future__ import annotations

from memory import notes
from memory.models import FileVersion
from memory.writes import add_memory_lines_or_propose
from proposals import actions, diff
from proposals.models import Proposal


def html_of(response) -> str:
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_25000_identical_lines_and_one_new_line_render(pages, master, workspace):
    (workspace / "MEMORY.md").write_text("- the same line\n" * 25_000)
    _, proposal = add_memory_lines_or_propose(master, ["the one new line"], source="job:j")

    # The queue opens the card in place under its row.
    html = html_of(pages.get(f"/manage/memory/proposals/?open={proposal.pk}"))

    assert '<span class="diff-added">+the one new line</span>' in html
    assert html.count('<span class="diff-same"> - the same line</span>') == 3  # context only
    html = html_of(pages.get(f"/manage/memory/proposals/{proposal.pk}/"))
    assert "+the one new line" in html


def test_a_diff_past_the_cap_says_how_many_lines_changed(master, workspace):
    before = "".join(f"- old {i}\n" for i in range(3000))
    after = "".join(f"- new {i}\n" for i in range(3000))
    item = diff.file_diff("MEMORY.md", before, after)
    html = diff.render_file_diffs([item])
    assert item.too_large and item.rows == []
    assert "Diff too large — 6000 lines changed (−3000 +3000)." in html


def test_a_consolidation_reason_stands_beside_its_line(pages, master, workspace):
    notes.write_memory(master, "- Lan likes tea\n- old line\n")
    proposal = actions.propose(
        "memory_rewrite",
        agent=master,
        target="MEMORY.md",
        payload={
            "memory": "- Lan likes tea\n",
            "reason_items": [{"line": "- old line", "action": "drop", "why": "no longer true"}],
        },
        reasons=["drop: - old line — no longer true"],
        source="job:consolidate-1",
    )
    html = html_of(pages.get(f"/manage/memory/proposals/{proposal.pk}/"))
    assert (
        '<span class="diff-removed">-- old line<span class="diff-reason">drop: no longer true'
        "</span></span>" in html
    )
    assert "Rewrite of MEMORY.md (consolidation)" in html  # the kind in words


def test_hunks_chosen_on_the_page_apply_only_those(pages, master, workspace):
    old = "".join(f"- fact {i}\n" for i in range(12))
    new = old.replace("- fact 1\n", "- fact one\n").replace("- fact 9\n", "- fact nine\n")
    notes.write_memory(master, old)
    proposal = actions.propose(
        "memory_rewrite", agent=master, target="MEMORY.md", payload={"memory": new}, source="job:c"
    )
    html = html_of(pages.get(f"/manage/memory/proposals/{proposal.pk}/"))
    hunks = diff.hunks_of(proposal)["MEMORY.md"]
    value = "MEMORY.md|" + ":".join(str(n) for n in hunks[0])
    assert f'name="hunk" value="{value}" checked' in html

    pages.post(
        f"/manage/memory/proposals/{proposal.pk}/approve-part/", {"mode": "hunks", "hunk": [value]}
    )

    assert (workspace / "MEMORY.md").read_text() == old.replace("- fact 1\n", "- fact one\n")
    assert Proposal.objects.get(pk=proposal.pk).status == "approved"


def test_edit_before_approve_from_the_page(pages, helper_agent, workspace):
    _, proposal = add_memory_lines_or_propose(helper_agent, ["Lan runs"], source="job:b")
    html = html_of(pages.get(f"/manage/memory/proposals/{proposal.pk}/"))
    assert "Edit before approving" in html

    pages.post(
        f"/manage/memory/proposals/{proposal.pk}/approve-edited/",
        {"lines": "Lan runs at six\nand swims on Sundays\n"},
    )

    text = (workspace / "agents/helper/MEMORY.md").read_text()
    assert text == "Lan runs at six\nand swims on Sundays\n"
    proposal.refresh_from_db()
    assert proposal.decision["edited"] == ["agents/helper/MEMORY.md"]


def test_bulk_from_the_queue_reports_each_refusal(pages, helper_agent, master, workspace):
    _, one = add_memory_lines_or_propose(helper_agent, ["one"], source="job:b")
    _, two = add_memory_lines_or_propose(master, ["two"], source="job:b")
    actions.reject(two, by="alice")

    html = html_of(
        pages.post(
            "/manage/memory/proposals/bulk/",
            {"decision": "approve", "ids": [one.pk, two.pk]},
            follow=True,
        )
    )
    assert f"1 proposal approved: #{one.pk}." in html
    assert f"#{two.pk} not decided: Proposal {two.pk} was already decided (rejected)." in html


def test_the_banner_shows_on_every_page_and_cards_show_their_age(pages, helper_agent, workspace):
    add_memory_lines_or_propose(helper_agent, ["one"], source="job:b")
    add_memory_lines_or_propose(helper_agent, ["two"], source="job:c")
    for url in ("/manage/memory/", "/manage/memory/search/", "/manage/memory/activity/"):
        assert "2 proposals wait for you." in html_of(pages.get(url))
    html = html_of(pages.get("/manage/memory/proposals/"))
    assert '<td data-label="Waiting" class="nowrap">0 minutes</td>' in html
    # Each row says how many others wait on the same file, linked to them.
    assert html.count("1 more on this file</a>") == 2
    assert "?target=agents/helper/MEMORY.md" in html


def test_history_version_restore_and_blame_pages(pages, master, workspace):
    notes.write_memory(master, "- first\n")
    notes.write_memory(master, "- second\n")
    html = html_of(pages.get("/manage/memory/history/", {"path": "MEMORY.md"}))
    assert "2 versions, newest first." in html
    first = FileVersion.objects.get(path="MEMORY.md", seq=1)
    version = html_of(pages.get(f"/manage/memory/history/{first.pk}/"))
    assert "- first" in version

    from memory import workspace as ws

    pages.post(
        f"/manage/memory/history/{first.pk}/restore/", {"base_hash": "stale", "confirm": "1"}
    )
    assert (workspace / "MEMORY.md").read_text() == "- second\n"
    pages.post(
        f"/manage/memory/history/{first.pk}/restore/",
        {"base_hash": ws.bytes_hash("MEMORY.md"), "confirm": "1"},
    )
    assert (workspace / "MEMORY.md").read_text() == "- first\n"
    blame = html_of(pages.get("/manage/memory/blame/", {"path": "MEMORY.md"}))
    assert "v3" in blame and "- first" in blame
    assert pages.get("/manage/memory/history/", {"path": "../x"}).status_code == 404


def test_the_agent_screen_names_the_file_and_version_of_each_section(pages, master, workspace):
    notes.write_memory(master, "- Lan likes tea\n")
    (workspace / "users/owner").mkdir(parents=True, exist_ok=True)
    (workspace / "users/owner/USER.md").write_text("I am Lan.\n")  # by hand: no version

    html = html_of(pages.get(f"/manage/memory/agents/{master.pk}/"))

    assert 'id="provenance"' in html
    assert "<code>MEMORY.md</code></a></td>" in html
    version = FileVersion.objects.get(path="MEMORY.md", seq=1)
    assert f'href="/manage/memory/history/{version.pk}/">v1</a>' in html
    assert "no version recorded yet" in html  # USER.md, written by hand
    assert "MEMORY.md line by line" in html


def test_restore_asks_first_and_is_never_offered_for_the_current_text(pages, master, workspace):
    notes.write_memory(master, "- first\n")
    notes.write_memory(master, "- second\n")
    first = FileVersion.objects.get(path="MEMORY.md", seq=1)
    second = FileVersion.objects.get(path="MEMORY.md", seq=2)

    listing = html_of(pages.get("/manage/memory/history/", {"path": "MEMORY.md"}))
    asked = html_of(pages.get(f"/manage/memory/history/{first.pk}/restore/"))
    unconfirmed = pages.post(f"/manage/memory/history/{first.pk}/restore/", {"base_hash": "x"})
    current = html_of(pages.get(f"/manage/memory/history/{second.pk}/"))
    refused = html_of(pages.get(f"/manage/memory/history/{second.pk}/restore/", follow=True))

    assert f'href="/manage/memory/history/{first.pk}/restore/"' in listing
    assert f'href="/manage/memory/history/{second.pk}/restore/"' not in listing
    assert "Restore version 1?" in asked
    assert '<span class="diff-added">+- <mark>first</mark></span>' in asked
    assert unconfirmed.status_code == 200  # the question again, nothing written
    assert (workspace / "MEMORY.md").read_text() == "- second\n"
    assert "The file holds this version's text now." in current
    assert "Restore this version" not in current
    assert "nothing to restore" in refused


def test_any_two_versions_compare_and_blame_says_who_and_from_where(
    pages, master, workspace, owner_client
):
    notes.write_memory(master, "- one\n")
    owner_client.post("/api/agents/master/memory/lines", {"lines": ["- two"], "source": "chat"})
    answer = owner_client.post(
        "/api/agents/master/memory/lines", {"lines": ["- three"], "source": "job:nightly"}
    )
    owner_client.post(f"/api/memory/proposals/{answer.json()['proposal']['id']}", {"approve": True})
    first, last = (FileVersion.objects.get(path="MEMORY.md", seq=n) for n in (1, 3))

    page = html_of(pages.get("/manage/memory/history/compare/", {"from": first.pk, "to": last.pk}))
    api = owner_client.get("/api/memory/history/compare", {"from": first.pk, "to": "current"})
    blame = html_of(pages.get("/manage/memory/blame/", {"path": "MEMORY.md"}))

    assert '<span class="diff-added">+- two</span>' in page
    assert '<span class="diff-added">+- three</span>' in page
    assert api.status_code == 200
    assert api.json()["diff"] == [
        {"op": "@", "text": "@@ -1,1 +1,3 @@"},
        {"op": " ", "text": "- one"},
        {"op": "+", "text": "- two"},
        {"op": "+", "text": "- three"},
    ]
    assert '<td data-label="Who" class="who">owner alice</td>' in blame
    assert '<td data-label="Who" class="who">job job:nightly</td>' in blame
    assert "<code>chat</code>" in blame
    rows = owner_client.get("/api/memory/blame", {"path": "MEMORY.md"}).json()["lines"]
    assert [(row["who"], row["who_name"]) for row in rows] == [
        ("app", ""),
        ("owner", "alice"),
        ("job", "job:nightly"),
    ]
