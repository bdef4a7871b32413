"""The OpenAPI schema is served and names every endpoint docs/api.md lists, and docs/api.md
lists every endpoint the schema has."""

import re

import pytest

ENDPOINTS = [
    "/api/agents",
    "/api/agents/{agent_id}",
    "/api/memory/user",
    "/api/memory/user/facts/{name}",
    "/api/agents/{agent_id}/memory",
    "/api/agents/{agent_id}/memory/lines",
    "/api/agents/{agent_id}/memory/save",
    "/api/agents/{agent_id}/memory/notes",
    "/api/agents/{agent_id}/memory/notes/{name}",
    "/api/agents/{agent_id}/memory/context",
    "/api/memory/search",
    "/api/agents/{agent_id}/tools",
    "/api/agents/{agent_id}/tools/{tool}",
    "/api/memory/proposals",
    "/api/memory/proposals/{proposal_id}",
    "/api/memory/proposals/{proposal_id}/undo",
    "/api/agents/{agent_id}/memory/consolidate",
    "/api/runs",
    "/api/runs/{run_id}",
    "/api/agents/{agent_id}/memory/wiki",
    "/api/agents/{agent_id}/memory/wiki/pages/{slug}",
    "/api/agents/{agent_id}/memory/wiki/report",
    "/api/agents/{agent_id}/memory/wiki/compile",
    "/api/agents/{agent_id}/script-store",
    "/api/agents/{agent_id}/script-store/{scope}/{scope_id}/{key}",
    "/api/stats",
]


@pytest.mark.django_db
def test_it_serves_the_openapi_schema_with_every_endpoint(owner_client):
    response = owner_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    missing = [path for path in ENDPOINTS if path not in schema["paths"]]
    assert missing == []
    assert "tokenAuth" in schema["components"]["securitySchemes"]


@pytest.mark.django_db
def test_it_generates_the_schema_without_errors_or_warnings():
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator

    GENERATOR_STATS.reset()
    SchemaGenerator().get_schema(request=None, public=True)
    assert (GENERATOR_STATS._error_cache, GENERATOR_STATS._warn_cache) == ({}, {})


@pytest.mark.django_db
def test_it_lists_every_endpoint_in_the_api_page():
    from pathlib import Path

    from drf_spectacular.generators import SchemaGenerator

    page = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    for path in ENDPOINTS:
        short = path.removeprefix("/api").split("/{")[0]
        assert short in page, path
    # And the other way round: every path the schema serves is on the page.
    served = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    shapes = {re.sub(r"\{[^}]+\}", "{}", path) for path in served}
    documented = {
        re.sub(r"\{[^}]+\}", "{}", path.split("?")[0])
        for path in re.findall(r"`(?:[A-Z/]+ )?(/api/[^`\s]*)`", page)
    }
    assert sorted(shapes - documented) == []
