"""First run for a newcomer: `memory_init` creates the owner once and says how to sign in."""

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from memory.models import ApiToken


def run_init(port="8123") -> str:
    out = io.StringIO()
    call_command("memory_init", port=port, stdout=out)
    return out.getvalue()


def test_it_creates_the_owner_once_and_prints_how_to_sign_in(workspace, db):
    text = run_init()
    assert "Sign in at:  http://127.0.0.1:8123/manage/memory/" in text
    assert "Username:    owner" in text
    assert "python manage.py changepassword owner" in text
    password = re.search(r"Password:    (\S+)", text).group(1)
    key = re.search(r"Owner API token \(Authorization: Token <key>\): (\S+)", text).group(1)

    client = Client()
    response = client.post(
        "/manage/memory/login/",
        {"username": "owner", "password": password, "next": "/manage/memory/"},
    )
    assert response.status_code == 302 and response["Location"] == "/manage/memory/"
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/memory/user").status_code == 200
    assert ApiToken.objects.count() == 1

    assert run_init() == ""  # never again
    assert get_user_model().objects.count() == 1
    # Nothing of the owner's is made before a write needs it (SPEC §1).
    assert not (workspace / "memory").exists() and not (workspace / "users").exists()
    assert not (workspace / "MEMORY.md").exists()


def test_it_leaves_an_existing_owner_alone(alice, workspace):
    assert run_init() == ""
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["alice"]


def test_a_search_index_inside_the_workspace_is_refused_at_start_up(workspace, db, settings):
    settings.MEMORY_SEARCH_DIR = str(workspace / "search-index")
    with pytest.raises(CommandError) as refused:
        call_command("memory_init", stdout=io.StringIO())
    assert f"MEMORY_SEARCH_DIR ({workspace / 'search-index'}) is inside MY_AGENT_HOME" in str(
        refused.value
    )
    assert not (workspace / "search-index").exists()
    assert not get_user_model().objects.exists()  # nothing made before the refusal
