"""The database belongs to its workspace (SPEC §1): the first start records it, and every
way in refuses another workspace with a message saying what to do."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.binding import bound_root, forget_checks
from proposals.models import Proposal


@pytest.fixture(autouse=True)
def _fresh_checks():
    forget_checks()
    yield
    forget_checks()


def test_the_first_start_records_its_workspace(master, workspace):
    call_command("memory_init", stdout=io.StringIO())
    assert bound_root() == str(workspace.resolve())


def test_a_demo_into_another_workspace_is_refused_and_writes_nothing(
    master, workspace, tmp_path, settings
):
    call_command("memory_init", stdout=io.StringIO())
    other = tmp_path / "other-home"
    other.mkdir()
    settings.MY_AGENT_HOME = str(other)
    with pytest.raises(CommandError) as refused:
        call_command("memory_demo", stdout=io.StringIO())
    message = str(refused.value)
    assert f"This database serves the workspace {workspace.resolve()}" in message
    assert f"MY_AGENT_HOME is {other.resolve()}" in message
    assert f"Use MY_AGENT_HOME={workspace.resolve()}" in message
    assert list(other.iterdir()) == []
    assert Proposal.objects.count() == 0


def test_the_pages_and_the_api_answer_503_for_another_workspace(
    pages, owner_client, master, workspace, tmp_path, settings
):
    assert pages.get("/manage/memory/").status_code == 200  # claims this workspace
    other = tmp_path / "elsewhere"
    other.mkdir()
    settings.MY_AGENT_HOME = str(other)
    page = pages.get("/manage/memory/")
    assert page.status_code == 503
    assert "This database belongs to another workspace" in page.content.decode()
    api = owner_client.get("/api/memory/user")
    assert api.status_code == 503 and api.json()["code"] == "wrong_workspace"
    assert not (other / "users").exists()


def test_rebind_after_a_move(master, workspace, tmp_path, settings):
    call_command("memory_init", stdout=io.StringIO())
    moved = tmp_path / "moved"
    moved.mkdir()
    settings.MY_AGENT_HOME = str(moved)
    out = io.StringIO()
    call_command("memory_workspace", rebind=True, stdout=out)
    assert f"now {moved.resolve()}" in out.getvalue()
    call_command("memory_init", stdout=io.StringIO())  # accepted now
    assert bound_root() == str(moved.resolve())


def test_generated_files_do_not_make_a_workspace_non_empty(master, workspace):
    reports = workspace / "memory/wiki/reports"
    reports.mkdir(parents=True)
    (reports / "open-questions.md").write_text("# Open questions\n\nNone.\n")
    (reports / "stale.md").write_text("# Stale pages\n\nNone.\n")
    (workspace / "users/owner/facts").mkdir(parents=True)
    (workspace / "users/owner/facts/INDEX.md").write_text("")
    out = io.StringIO()
    call_command("memory_demo", stdout=out)
    assert "Demo written to" in out.getvalue()


def test_the_demo_names_the_real_port_and_workspace(master, workspace, monkeypatch):
    monkeypatch.setenv("PORT", "8123")
    out = io.StringIO()
    call_command("memory_demo", stdout=out)
    text = out.getvalue()
    assert f"MY_AGENT_HOME={workspace.resolve()} make run" in text
    assert "http://127.0.0.1:8123/manage/memory/" in text
