"""memory.auth: the one token check (SPEC §14)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model

from memory import auth
from memory.models import ApiToken


@pytest.mark.django_db
def test_a_tokens_last_use_is_written_once_a_minute():
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
