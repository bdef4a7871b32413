"""memory.auth: the one token check (SPEC §14)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model

from memory import auth
from memory.models import ApiToken


@pytest.mark.django_db
def test_a_tokens_last_use_is_written_once_a_minute(monkeypatch):
    owner = get_user_model().objects.create_superuser("o", "", "pw-auth-1")
    token, key = ApiToken.issue(user=owner)
    assert token.last_used_at is None
    auth.token_for_key(key)
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    auth.token_for_key(key)  # a moment later: no write
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first
    earlier = first - auth.LAST_USED_EVERY - dt.timedelta(seconds=1)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=earlier)
    auth.token_for_key(key)
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first
    # Exactly LAST_USED_EVERY ago is old enough.
    exactly = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=exactly - auth.LAST_USED_EVERY)
    monkeypatch.setattr(auth.timezone, "now", lambda: exactly)
    auth.token_for_key(key)
    assert ApiToken.objects.get(pk=token.pk).last_used_at == exactly


@pytest.mark.django_db
def test_an_owner_token_is_its_owners_account_and_an_agent_token_its_agent(master):
    owner = get_user_model().objects.create_superuser("owner-a", "o@example.org", "pw-auth-2")
    _, owner_key = ApiToken.issue(user=owner)
    _, agent_key = ApiToken.issue(agent=master, job="nightly-digest")

    token = auth.token_for_key(owner_key)
    assert (token.user_id, token.agent_id, token.job) == (owner.pk, None, "")
    assert token.user == owner and token.user.username == "owner-a"
    assert (token.user.is_active, token.user.is_superuser, token.user.is_staff) == (
        True,
        True,
        True,
    )
    assert token.user.email == "o@example.org"  # a field not read up front still loads
    assert token.created_at is not None

    token = auth.token_for_key(agent_key)
    assert (token.user_id, token.agent_id, token.job) == (None, "master", "nightly-digest")
    assert token.user is None


@pytest.mark.django_db
def test_an_unknown_key_and_an_inactive_owners_token_are_refused():
    owner = get_user_model().objects.create_superuser("owner-b", "", "pw-auth-3")
    _, key = ApiToken.issue(user=owner)
    with pytest.raises(auth.BadCredential, match="Invalid token"):
        auth.token_for_key(key + "0")
    owner.is_active = False
    owner.save()
    with pytest.raises(auth.BadCredential, match="User inactive"):
        auth.token_for_key(key)
