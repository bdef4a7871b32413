"""memory.lookups (one row by a unique column through a fixed statement) and what reads
through it: the page's session (memory.sessions) and signed-in account (AccountBackend)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.forms.models import model_to_dict
from django.utils import timezone

from memory import lookups
from memory.auth import AccountBackend
from memory.models import ApiToken
from memory.sessions import SessionStore

pytestmark = pytest.mark.django_db


def _fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_a_row_comes_back_as_the_orm_reads_it_aware_datetimes_and_booleans_included(master):
    owner = get_user_model().objects.create_superuser("lookup-owner", "o@example.org", "pw-l-1")
    owner.last_login = timezone.now()
    owner.save()
    token, _key = ApiToken.issue(agent=master, job="digest")
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())

    for model, field, value in [
        (get_user_model(), "id", owner.pk),
        (get_user_model(), "pk", owner.pk),
        (get_user_model(), "username", "lookup-owner"),
        (ApiToken, "key_hash", token.key_hash),
    ]:
        found = lookups.get_by(model, field, value)
        expected = model.objects.get(**{field: value})
        assert _fields(found) == _fields(expected)
        assert found._state.adding is False
    user = lookups.get_by(get_user_model(), "id", owner.pk)
    assert user.is_superuser is True and user.is_staff is True
    assert user.last_login.tzinfo is not None and user.date_joined.tzinfo is not None
    assert model_to_dict(user)["email"] == "o@example.org"
    assert lookups.get_by(ApiToken, "key_hash", "0" * 64) is None


def test_a_session_loads_until_it_expires_and_then_is_no_session():
    store = SessionStore()
    store["seen"] = "yes"
    store.create()
    key = store.session_key
    assert SessionStore(key).load() == {"seen": "yes"}
    Session.objects.filter(session_key=key).update(
        expire_date=timezone.now() - dt.timedelta(seconds=1)
    )
    expired = SessionStore(key)
    assert expired.load() == {}
    assert expired.session_key is None
    assert SessionStore("no-such-key-0123456789abcdefghijklmn").load() == {}


def test_the_signed_in_account_is_read_as_django_reads_it_and_refused_once_inactive():
    owner = get_user_model().objects.create_superuser("lookup-b", "", "pw-l-2")
    backend = AccountBackend()
    assert backend.get_user(owner.pk) == owner
    assert backend.get_user(owner.pk + 1000) is None
    owner.is_active = False
    owner.save()
    assert backend.get_user(owner.pk) is None
