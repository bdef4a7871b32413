"""The admin approval queue (SPEC §15): pending first, escaped diffs, decisions through
proposals.actions with refusals shown as messages, never a 500."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from memory import workspace
from memory.writes import add_memory_lines_or_propose
from proposals import actions
from proposals.actions import BaseKind, register_kind
from tests.proposals.helpers import MEMORY, fact_proposal, rewrite_proposal


@pytest.fixture
def admin_client(alice, workspace) -> Client:
    client = Client()
    client.force_login(alice)
    return client


def _lines(agent, lines=("new line",)):
    _, proposal = add_memory_lines_or_propose(agent, list(lines), source="job:1")
    return proposal


def _messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_it_lists_pending_proposals_first(admin_client, helper_agent):
    old_pending = _lines(helper_agent, ["one"])
    rejected = _lines(helper_agent, ["two"])
    new_pending = _lines(helper_agent, ["three"])
    newest_rejected = _lines(helper_agent, ["four"])
    actions.reject(rejected, by="alice")
    actions.reject(newest_rejected, by="alice")

    response = admin_client.get(reverse("admin:proposals_proposal_changelist"))

    assert response.status_code == 200
    order = [p.pk for p in response.context["cl"].result_list]
    assert order == [new_pending.pk, old_pending.pk, newest_rejected.pk, rejected.pk]


def test_it_filters_and_searches_the_queue(admin_client, helper_agent, master):
    helper = _lines(helper_agent)
    _lines(master)
    url = reverse("admin:proposals_proposal_changelist")

    by_agent = admin_client.get(url, {"agent__id__exact": "helper"})
    by_search = admin_client.get(url, {"q": "agents/helper"})
    by_status = admin_client.get(url, {"status__exact": "approved"})

    assert [p.pk for p in by_agent.context["cl"].result_list] == [helper.pk]
    assert [p.pk for p in by_search.context["cl"].result_list] == [helper.pk]
    assert list(by_status.context["cl"].result_list) == []


def test_it_escapes_memory_text_in_the_diff(admin_client, helper_agent):
    workspace.write(MEMORY, "<script>alert('old')</script>\n")
    proposal = _lines(helper_agent, ["<script>alert('new')</script> & <b>bold</b>"])

    response = admin_client.get(reverse("admin:proposals_proposal_change", args=[proposal.pk]))

    html = response.content.decode()
    assert response.status_code == 200
    assert "<script>alert(" not in html
    assert "&lt;script&gt;alert(&#x27;old&#x27;)&lt;/script&gt;" in html
    assert (
        '<span class="diff-added">+ &lt;script&gt;alert(&#x27;new&#x27;)&lt;/script&gt; '
        "&amp; &lt;b&gt;bold&lt;/b&gt;</span>"
    ) in html
    assert "Lines it would add" in html
    assert "job:1" in html  # the source
    assert "asked to add 1 line(s)" in html  # the reasons


def test_it_marks_removed_and_added_lines_of_a_fact_update(admin_client, helper_agent):
    actions.approve(fact_proposal(), by="alice")
    update = fact_proposal("Likes tea now")

    html = admin_client.get(
        reverse("admin:proposals_proposal_change", args=[update.pk])
    ).content.decode()

    # A fact's fields read as changes; the words that changed are marked.
    assert (
        "<dt>description</dt><dd><del>Likes black coffee</del> → <ins>Likes tea now</ins>" in html
    )
    assert "users/owner/facts/coffee.md" in html


class PagesKind(BaseKind):
    name = "test_admin_pages"
    batch = True

    def changes(self, *, agent, payload):
        return {f"memory/wiki/{slug}.md": text for slug, text in payload["pages"].items()}


def test_it_shows_a_diff_per_page_of_a_batch(admin_client, master):
    register_kind(PagesKind())
    try:
        workspace.write("memory/wiki/a.md", "A old\n")
        proposal = actions.propose(
            "test_admin_pages",
            agent=master,
            target="memory/wiki",
            payload={"pages": {"a": "A new\n", "b": "B <i>new</i>\n"}},
            source="job:compile",
        )

        html = admin_client.get(
            reverse("admin:proposals_proposal_change", args=[proposal.pk])
        ).content.decode()
    finally:
        actions._KINDS.pop("test_admin_pages", None)

    assert "<code>memory/wiki/a.md</code> (changed)" in html
    assert "<code>memory/wiki/b.md</code> (new file)" in html
    assert '<span class="diff-removed">-A <mark>old</mark></span>' in html
    assert '<span class="diff-added">+B &lt;i&gt;new&lt;/i&gt;</span>' in html


def test_it_approves_with_the_button(admin_client, helper_agent):
    workspace.write(MEMORY, "old\n")
    proposal = _lines(helper_agent)
    page = admin_client.get(reverse("admin:proposals_proposal_change", args=[proposal.pk]))
    approve_url = reverse("admin:proposals_proposal_approve", args=[proposal.pk])
    assert f'action="{approve_url}"' in page.content.decode()

    response = admin_client.post(approve_url)

    assert response.status_code == 302
    assert response["Location"] == reverse("admin:proposals_proposal_change", args=[proposal.pk])
    assert workspace.read(MEMORY) == "old\nnew line\n"
    proposal.refresh_from_db()
    assert proposal.status == "approved"
    assert proposal.decided_by == "alice"
    assert _messages(response) == [f"Proposal #{proposal.pk} approved."]


def test_it_shows_an_error_when_approving_a_decided_proposal(admin_client, helper_agent):
    proposal = _lines(helper_agent)
    actions.reject(proposal, by="bob")

    response = admin_client.post(
        reverse("admin:proposals_proposal_approve", args=[proposal.pk]), follow=True
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert f'<li class="error">Proposal #{proposal.pk} not approved' in html
    assert "already decided (rejected)" in html
    assert workspace.read(MEMORY) == ""  # as the agent was created: empty
    proposal.refresh_from_db()
    assert proposal.status == "rejected"


def test_it_shows_an_error_and_supersedes_on_a_stale_base(admin_client, helper_agent):
    workspace.write(MEMORY, "old\n")
    proposal = rewrite_proposal(helper_agent, "old\nnew line\n")
    workspace.write(MEMORY, "hand edit\n")

    response = admin_client.post(reverse("admin:proposals_proposal_approve", args=[proposal.pk]))

    assert response.status_code == 302
    assert "superseded" in _messages(response)[0]
    assert workspace.read(MEMORY) == "hand edit\n"
    proposal.refresh_from_db()
    assert proposal.status == "superseded"


def test_it_decides_with_list_actions_and_reports_each_refusal(admin_client, helper_agent):
    workspace.write(MEMORY, "old\n")
    pending = _lines(helper_agent)
    decided = _lines(helper_agent, ["other"])
    actions.reject(decided, by="bob")

    response = admin_client.post(
        reverse("admin:proposals_proposal_changelist"),
        {"action": "approve_selected", "_selected_action": [pending.pk, decided.pk], "index": 0},
    )

    assert response.status_code == 302
    messages = _messages(response)
    assert f"Proposal #{pending.pk} approved." in messages
    assert any(m.startswith(f"Proposal #{decided.pk} not approved") for m in messages)
    assert workspace.read(MEMORY) == "old\nnew line\n"


def test_it_rejects_with_a_list_action(admin_client, helper_agent):
    proposal = _lines(helper_agent)

    admin_client.post(
        reverse("admin:proposals_proposal_changelist"),
        {"action": "reject_selected", "_selected_action": [proposal.pk], "index": 0},
    )

    proposal.refresh_from_db()
    assert proposal.status == "rejected"
    assert workspace.read(MEMORY) == ""  # as the agent was created: empty


def test_it_undoes_from_history_once(admin_client, helper_agent):
    workspace.write(MEMORY, "old\n")
    proposal = _lines(helper_agent)
    actions.approve(proposal, by="alice")
    page = admin_client.get(reverse("admin:proposals_proposal_change", args=[proposal.pk]))
    undo_url = reverse("admin:proposals_proposal_undo", args=[proposal.pk])
    assert f'action="{undo_url}"' in page.content.decode()

    first = admin_client.post(undo_url)
    second = admin_client.post(undo_url)

    assert workspace.read(MEMORY) == "old\n"
    assert _messages(first) == [f"Proposal #{proposal.pk} undone."]
    assert "already undone" in _messages(second)[-1]
    proposal.refresh_from_db()
    assert proposal.undone_by == "alice"


def test_it_refuses_a_get_on_a_decision_url(admin_client, helper_agent):
    proposal = _lines(helper_agent)

    response = admin_client.get(reverse("admin:proposals_proposal_approve", args=[proposal.pk]))

    assert response.status_code == 405
    proposal.refresh_from_db()
    assert proposal.status == "pending"


def test_it_shows_the_pending_badge_on_the_admin_index(admin_client, helper_agent):
    _lines(helper_agent)
    _lines(helper_agent, ["two"])
    actions.reject(_lines(helper_agent, ["three"]), by="alice")

    html = admin_client.get(reverse("admin:index")).content.decode()

    assert '<strong class="pending-badge">2</strong>' in html
    assert "pending proposals waiting for review" in html


def test_it_links_the_run_that_made_the_proposal(admin_client, helper_agent):
    from memory.models import Run

    run = Run.objects.create(agent=helper_agent, kind="consolidate", status="succeeded")
    proposal = actions.propose(
        "agent_memory",
        agent=helper_agent,
        target=MEMORY,
        payload={"lines": ["from a run"]},
        source="job:consolidate",
        run=run,
    )

    html = admin_client.get(
        reverse("admin:proposals_proposal_change", args=[proposal.pk])
    ).content.decode()

    run_url = reverse("admin:memory_run_change", args=[run.pk])
    assert f'<a href="{run_url}">#{run.pk} consolidate (succeeded)</a>' in html
    assert admin_client.get(run_url).status_code == 200
