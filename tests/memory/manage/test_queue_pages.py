"""The triage queue (SPEC §7, §15; memory/manage/queue.py): one row per pending proposal,
the pager counting proposals, filters, a page selected at once, the card opened in place,
"approve & next", and at most 10 sibling links on a card."""

from __future__ import annotations

import datetime as dt
import re

from django.utils import timezone

from memory.writes import add_memory_lines_or_propose
from proposals import actions
from proposals.models import Proposal

URL = "/manage/memory/proposals/"


def _html(response) -> str:
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def _rows(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr id="row-(\d+)"', html)]


def _lines(agent, n: int, source: str = "job:nightly") -> list[Proposal]:
    return [add_memory_lines_or_propose(agent, [f"line {i}"], source=source)[1] for i in range(n)]


def test_one_row_per_proposal_and_the_pager_counts_proposals(pages, master, helper_agent):
    four = _lines(master, 4)
    two = _lines(helper_agent, 2, source="job:brief")

    html = _html(pages.get(URL))

    assert "Pending (6)" in html
    assert "1–6 of 6" in html
    assert _rows(html) == [p.pk for p in four + two]
    row = html[html.index(f'id="row-{four[0].pk}"') :]
    row = row[: row.index("</tr>")]
    assert "<strong>Add lines to MEMORY.md</strong>" in row
    assert "<code>master</code>" in row and "<code>job:nightly</code>" in row
    assert "<q>job:nightly asked to add 1 line(s) to master&#x27;s MEMORY.md.</q>" in row
    assert '<span class="diff-added-count">+1</span>' in row
    assert "3 more on this file" in row


def test_the_pager_pages_proposals_twenty_at_a_time(pages, master):
    made = _lines(master, 23)
    first = _html(pages.get(URL))
    assert "1–20 of 23" in first and _rows(first) == [p.pk for p in made[:20]]
    second = _html(pages.get(URL, {"page": 2}))
    assert "21–23 of 23" in second and _rows(second) == [p.pk for p in made[20:]]


def test_filters_by_agent_kind_age_stale_and_file(pages, master, helper_agent, workspace):
    old, new = _lines(master, 2)
    # A rewrite replaces what it was based on: it is stale once its file changes.
    other = actions.propose(
        "memory_rewrite",
        agent=helper_agent,
        target="agents/helper/MEMORY.md",
        payload={"memory": "- rewritten\n"},
        source="job:brief",
    )
    Proposal.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=9))
    (workspace / "agents/helper/MEMORY.md").write_text("- changed by hand\n")

    assert _rows(_html(pages.get(URL, {"agent": "helper"}))) == [other.pk]
    assert _rows(_html(pages.get(URL, {"kind": "wiki_compile"}))) == []
    assert _rows(_html(pages.get(URL, {"kind": "agent_memory"}))) == [old.pk, new.pk]
    assert _rows(_html(pages.get(URL, {"kind": "memory_rewrite"}))) == [other.pk]
    assert _rows(_html(pages.get(URL, {"age": "week"}))) == [old.pk]
    assert _rows(_html(pages.get(URL, {"age": "new"}))) == [new.pk, other.pk]
    stale = _html(pages.get(URL, {"stale": "yes"}))
    assert _rows(stale) == [other.pk] and "file changed since" in stale
    assert _rows(_html(pages.get(URL, {"stale": "no"}))) == [old.pk, new.pk]
    assert _rows(_html(pages.get(URL, {"target": "MEMORY.md"}))) == [old.pk, new.pk]
    filtered = _html(pages.get(URL, {"agent": "helper"}))
    assert "Pending (3)" in filtered and "1–1 of 1" in filtered
    assert "No pending proposal matches these filters." in _html(
        pages.get(URL, {"kind": "wiki_compile"})
    )
    # A value the form does not offer is ignored, never an error.
    assert _rows(_html(pages.get(URL, {"age": "century", "stale": "maybe"}))) == [
        old.pk,
        new.pk,
        other.pk,
    ]


def test_select_all_on_the_page_without_javascript(pages, master):
    made = _lines(master, 3)
    plain = _html(pages.get(URL))
    assert 'href="/manage/memory/proposals/?select=page"' in plain
    assert plain.count('form="bulk-form" checked') == 0
    selected = _html(pages.get(URL, {"select": "page"}))
    assert selected.count('form="bulk-form" checked') == 3
    response = pages.post(
        "/manage/memory/proposals/bulk/",
        {"decision": "reject", "ids": [p.pk for p in made]},
        follow=True,
    )
    assert "3 proposals rejected" in response.content.decode()


def test_the_card_opens_in_place_and_approve_and_next_opens_the_next(
    pages, master, helper_agent, workspace
):
    from memory.models import Agent

    third = Agent.objects.create(id="third", name="Third")
    # Three files, so approving one leaves the others as they were.
    (one,), (two,), (three,) = (_lines(agent, 1) for agent in (master, helper_agent, third))

    html = _html(pages.get(URL, {"open": one.pk}))
    assert f'<tr class="card-row" id="card-{one.pk}">' in html
    assert html.index(f'id="row-{one.pk}"') < html.index(f'id="proposal-{one.pk}"')
    assert html.index(f'id="proposal-{one.pk}"') < html.index(f'id="row-{two.pk}"')
    assert html.count('class="card-row"') == 1
    next_url = f"/manage/memory/proposals/?open={two.pk}#row-{two.pk}"
    assert f'<input type="hidden" name="next" value="{next_url}">' in html
    assert "Approve & next" in html

    response = pages.post(f"/manage/memory/proposals/{one.pk}/approve/", {"next": next_url})
    assert response.status_code == 302 and response["Location"] == next_url
    assert Proposal.objects.get(pk=one.pk).status == "approved"
    html = _html(pages.get(URL, {"open": two.pk}))
    assert f'id="card-{two.pk}"' in html and f'id="row-{one.pk}"' not in html
    # The last row's decide bar returns to the queue.
    last = _html(pages.get(URL, {"open": three.pk}))
    assert '<input type="hidden" name="next" value="/manage/memory/proposals/">' in last


def test_a_card_lists_at_most_ten_siblings_and_says_how_many_more(pages, master):
    made = _lines(master, 14)
    html = _html(pages.get(f"/manage/memory/proposals/{made[0].pk}/"))
    note = html[html.index('sibling-note"') :]
    note = note[: note.index("</p>")]
    assert re.findall(r">#(\d+)</a>", note) == [str(p.pk) for p in made[1:11]]
    assert "and 3 more" in note
    assert "?target=MEMORY.md" in note


def test_keys_are_announced_and_the_script_is_the_pages_own(pages, master):
    _lines(master, 1)
    html = _html(pages.get(URL))
    assert '<script src="/static/memory/queue.js" defer></script>' in html
    assert 'id="keys-hint" hidden' in html  # shown by the script, which makes the keys work
    assert 'aria-keyshortcuts="a"' in html and 'aria-keyshortcuts="r"' in html
    assert 'aria-keyshortcuts="e"' in html
    assert 'id="queue-announce" aria-live="polite"' in html
    assert "pending-banner" not in html  # the queue itself says how many wait
