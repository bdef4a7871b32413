"""memory/admin.py: agents, runs (read-only), script store and tokens (hash never editable)."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from memory.models import ApiToken, Run, ScriptEntry


def test_it_shows_the_memory_rows_in_the_admin(alice, helper_agent):
    client = Client()
    client.force_login(alice)
    run = Run.objects.create(agent=helper_agent, kind="compile", status="failed")
    entry = ScriptEntry.objects.create(
        agent=helper_agent, scope="schedule", scope_id="daily", key="k", value={"a": 1}
    )
    token, _ = ApiToken.issue(agent=helper_agent)

    for name, obj in (
        ("agent", helper_agent),
        ("run", run),
        ("scriptentry", entry),
        ("apitoken", token),
    ):
        assert client.get(reverse(f"admin:memory_{name}_changelist")).status_code == 200
        page = client.get(reverse(f"admin:memory_{name}_change", args=[obj.pk]))
        assert page.status_code == 200

    token_page = client.get(reverse("admin:memory_apitoken_change", args=[token.pk]))
    assert 'name="key_hash"' not in token_page.content.decode()
    assert token.key_hash in token_page.content.decode()
    run_page = client.get(reverse("admin:memory_run_change", args=[run.pk])).content.decode()
    assert 'name="status"' not in run_page
    assert client.get(reverse("admin:memory_apitoken_add")).status_code == 403
    assert client.get(reverse("admin:memory_run_add")).status_code == 403
