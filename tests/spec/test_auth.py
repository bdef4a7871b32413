"""Who may reach what (SPEC §14): the owner everything, an agent token only its own agent
(403 elsewhere), nobody anonymous; and `memory_token`, which prints only the key."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from memory.models import ApiToken

# Every route of the memory core under /api/agents/{id}/, with a body that would succeed
# for the right caller.
AGENT_ROUTES = [
    ("get", "/api/agents/master", None),
    ("patch", "/api/agents/master", {"name": "pwned"}),
    ("get", "/api/agents/master/memory", None),
    ("put", "/api/agents/master/memory", {"body": "pwned\n"}),
    ("post", "/api/agents/master/memory/lines", {"lines": ["pwned"], "source": "web"}),
    ("post", "/api/agents/master/memory/save", {"text": "pwned", "source": "web"}),
    ("get", "/api/agents/master/memory/notes", None),
    ("get", "/api/agents/master/memory/notes/2026-11-30", None),
    ("put", "/api/agents/master/memory/notes/2026-11-30", {"body": "pwned\n"}),
    ("get", "/api/agents/master/memory/context?conversation=c", None),
]


def _files(root):
    return sorted(
        (p.relative_to(root).as_posix(), p.read_bytes())
        for p in root.rglob("*")
        if p.is_file() and ".memory-locks" not in p.parts
    )


@pytest.fixture
def seeded(master, workspace):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "MEMORY.md").write_text("- private\n")
    (workspace / "memory/2026-11-30.md").write_text("- private note\n")
    return workspace


@pytest.mark.parametrize(("method", "url", "body"), AGENT_ROUTES)
def test_another_agents_token_is_403(helper_client, seeded, method, url, body):
    before = _files(seeded)
    response = getattr(helper_client, method)(url, body, format="json")
    assert response.status_code == 403, response.content
    assert b"private" not in response.content
    assert _files(seeded) == before


@pytest.mark.parametrize(("method", "url", "body"), AGENT_ROUTES)
def test_anonymous_is_refused(anon_client, seeded, method, url, body):
    before = _files(seeded)
    response = getattr(anon_client, method)(url, body, format="json")
    assert response.status_code in (401, 403)
    assert _files(seeded) == before


@pytest.mark.parametrize(("method", "url", "body"), AGENT_ROUTES)
def test_the_agents_own_token_and_the_owner_get_through(
    master_client, owner_client, seeded, method, url, body
):
    if method == "patch":
        # Editing an agent is the owner's alone, even for its own token.
        assert getattr(master_client, method)(url, body, format="json").status_code == 403
    else:
        assert getattr(master_client, method)(url, body, format="json").status_code < 300
    assert getattr(owner_client, method)(url, body, format="json").status_code < 300


def _agent_routes(resolver: URLResolver, prefix: str = "") -> list[str]:
    """Every URL pattern (as a regex string) that takes an agent id, from all apps."""
    found = []
    for entry in resolver.url_patterns:
        pattern = prefix + str(entry.pattern.regex.pattern).lstrip("^")
        if isinstance(entry, URLResolver):
            found += _agent_routes(entry, pattern)
        elif isinstance(entry, URLPattern) and "agent_id" in entry.pattern.regex.groupindex:
            found.append(pattern)
    return found


def _example_path(pattern: str) -> str:
    """A concrete path for a route regex: agent_id=master, other parameters filled in."""
    values = {"agent_id": "master", "name": "2026-11-30", "scope": "schedule", "tool": "x"}

    def fill(match: re.Match) -> str:
        return values.get(match.group(1), "x")

    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", fill, pattern)
    return "/" + path.replace("\\Z", "").replace("$", "").replace("\\", "")


def test_every_agent_route_of_every_app_is_403_for_another_agent(helper_client, seeded):
    """Sweep the whole URL conf, not only this app's list: a route added later that
    forgets require_agent_access fails here."""
    paths = sorted({_example_path(p) for p in _agent_routes(get_resolver())})
    assert "/api/agents/master/memory/notes/2026-11-30" in paths
    before = _files(seeded)
    for path in paths:
        for method in ("get", "post", "put", "patch", "delete"):
            response = getattr(helper_client, method)(path, {}, format="json")
            # 405: the route has no such method. Pages (not /api/) send a token-only
            # caller to the login page instead. Never a success, never a leak.
            allowed = (403, 405) if path.startswith("/api/") else (302, 403, 405)
            assert response.status_code in allowed, (method, path, response.status_code)
            if response.status_code == 302:
                assert "login" in response["Location"], response["Location"]
    assert _files(seeded) == before


def test_an_unknown_token_is_401_or_403(seeded):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-key")
    assert client.get("/api/agents/master/memory").status_code in (401, 403)


def test_tokens_are_stored_hashed(master):
    _, key = ApiToken.issue(agent=master)
    assert not ApiToken.objects.filter(key_hash=key).exists()
    assert key not in str(list(ApiToken.objects.values_list("key_hash", flat=True)))


# --- memory_token -----------------------------------------------------------------------


def _token(*args) -> str:
    out = io.StringIO()
    call_command("memory_token", *args, stdout=out)
    return out.getvalue()


def test_memory_token_owner_prints_only_a_working_key(master, workspace):
    output = _token("owner")
    assert re.fullmatch(r"[0-9a-f]{48}\n", output)
    owner = get_user_model().objects.get(username="owner")
    assert owner.is_superuser and not owner.has_usable_password()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {output.strip()}")
    assert client.post("/api/agents", {"id": "x", "name": "X"}).status_code == 201


def test_memory_token_owner_uses_the_existing_superuser(alice, master):
    _token("owner")
    assert ApiToken.objects.get().user == alice
    assert not get_user_model().objects.filter(username="owner").exists()


def test_memory_token_agent_prints_a_key_for_that_agent_only(master, helper_agent, workspace):
    output = _token("agent", "helper")
    assert re.fullmatch(r"[0-9a-f]{48}\n", output)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {output.strip()}")
    assert client.get("/api/agents/helper/memory").status_code == 200
    assert client.get("/api/agents/master/memory").status_code == 403


def test_memory_token_agent_needs_a_known_agent(master):
    with pytest.raises(CommandError):
        _token("agent", "nobody")
    with pytest.raises(CommandError):
        _token("agent")
