"""Presence comes from the caller, never the model (SPEC §5, §16), over REST and the
`memory_token` command: job tokens, the X-Memory-Source header, and `source` refused among
tool arguments."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from memory.models import ApiToken, hash_token
from proposals.models import Proposal

FACT = {"description": "likes green tea", "type": "preference", "body": "Sencha."}


def client_for(key: str, **headers) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}", **headers)
    return client


@pytest.fixture
def job_client(master) -> APIClient:
    _, key = ApiToken.issue(agent=master, job="nightly")
    return client_for(key)


def test_memory_token_issues_a_job_token_and_prints_only_its_key(master, capsys):
    call_command("memory_token", "agent", "master", "--job", "nightly-42")
    key = capsys.readouterr().out.strip()
    token = ApiToken.objects.get(key_hash=hash_token(key))
    assert (token.agent_id, token.job) == ("master", "nightly-42")


@pytest.mark.parametrize("args", [["owner", "--job", "x"], ["agent", "master", "--job", "a b"]])
def test_memory_token_refuses_a_job_for_the_owner_or_a_bad_job_id(master, args):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("memory_token", *args)


@pytest.mark.parametrize("said", [{}, {"source": "chat"}, {"source": "telegram"}])
def test_a_job_tokens_tool_write_is_a_proposal_whatever_is_said(master, workspace, said):
    _, key = ApiToken.issue(agent=master, job="nightly")
    job = client_for(key, HTTP_X_MEMORY_SOURCE="chat")
    response = job.put("/api/memory/user/facts/tea", {**FACT, **said}, format="json")
    assert response.status_code == 202, response.content
    assert Proposal.objects.get().source == "job:nightly"
    assert not (workspace / "users/owner/facts/tea.md").exists()


def test_a_job_tokens_memory_md_rewrite_and_lines_are_proposals(job_client, workspace):
    (workspace / "MEMORY.md").write_text("- old\n")
    put = job_client.put("/api/agents/master/memory", {"body": "- new\n"}, format="json")
    lines = job_client.post("/api/agents/master/memory/lines", {"lines": ["x"]}, format="json")
    assert (put.status_code, lines.status_code) == (202, 202)
    assert (workspace / "MEMORY.md").read_text() == "- old\n"
    kinds = sorted(Proposal.objects.values_list("kind", flat=True))
    assert kinds == ["agent_memory", "memory_rewrite"]


def test_a_job_token_may_not_rewrite_user_md(job_client, workspace):
    response = job_client.put("/api/memory/user", {"body": "x", "source": "web"}, format="json")
    assert response.status_code == 403
    assert not (workspace / "users/owner/USER.md").exists()


def test_an_interactive_token_names_its_channel_in_a_header(master, workspace):
    _, key = ApiToken.issue(agent=master)
    client = client_for(key, HTTP_X_MEMORY_SOURCE="telegram")
    response = client.post(
        "/api/agents/master/tools/user_memory_save", {"name": "tea", **FACT}, format="json"
    )
    assert response.status_code == 200
    assert "source: telegram" in (workspace / "users/owner/facts/tea.md").read_text()


def test_a_job_statement_in_the_header_makes_an_interactive_write_a_proposal(master, workspace):
    _, key = ApiToken.issue(agent=master)
    client = client_for(key, HTTP_X_MEMORY_SOURCE="job:resumed")
    response = client.put("/api/memory/user/facts/tea", {**FACT, "source": "chat"}, format="json")
    assert response.status_code == 202
    assert Proposal.objects.get().source == "job:resumed"


@pytest.mark.parametrize("header", ["", "a person", "job:", "Chat"])
def test_a_bad_source_header_is_422_and_writes_nothing(master, workspace, header):
    _, key = ApiToken.issue(agent=master)
    client = client_for(key, HTTP_X_MEMORY_SOURCE=header)
    response = client.post("/api/agents/master/tools/memory_save", {"text": "x"}, format="json")
    assert response.status_code == 422
    assert not list((workspace / "memory").glob("*.md"))


def test_source_among_tool_arguments_is_refused_for_every_tool(master_client, workspace):
    tools = master_client.get("/api/agents/master/tools").json()
    for tool in tools:
        response = master_client.post(
            f"/api/agents/master/tools/{tool['name']}", {"source": "chat"}, format="json"
        )
        assert response.status_code == 422, tool["name"]
        assert "`source` is not a tool argument" in response.json()["detail"]
    assert not list((workspace / "memory").glob("*.md"))


def test_the_owner_keeps_stating_source_in_the_body(owner_client, workspace):
    response = owner_client.put(
        "/api/memory/user/facts/tea", {**FACT, "source": "web"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["source"] == "web"
