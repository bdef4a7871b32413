"""SPEC §7: "History keeps everything; nothing is deleted" — neither over REST nor in the
admin can a proposal row be removed."""

from __future__ import annotations

from django.test import Client

from proposals.models import Proposal


def _proposal(owner_client):
    response = owner_client.put(
        "/api/memory/user/facts/tea",
        data={"description": "likes tea", "type": "preference", "body": "", "source": "job:n"},
        format="json",
    )
    assert response.status_code == 202
    return response.json()["proposal"]["id"]


def test_it_offers_no_delete_over_rest(owner_client, master, workspace):
    pid = _proposal(owner_client)
    assert owner_client.delete(f"/api/memory/proposals/{pid}").status_code in (403, 405)
    assert Proposal.objects.filter(pk=pid).exists()


def test_it_offers_no_delete_in_the_admin(owner_client, alice, master, workspace):
    pid = _proposal(owner_client)
    client = Client()
    client.force_login(alice)
    page = client.post(f"/admin/proposals/proposal/{pid}/delete/", {"post": "yes"})
    assert page.status_code in (302, 403, 404)
    bulk = client.post(
        "/admin/proposals/proposal/",
        {"action": "delete_selected", "_selected_action": [pid], "post": "yes"},
    )
    assert bulk.status_code in (200, 302, 403)
    assert Proposal.objects.filter(pk=pid).exists()
