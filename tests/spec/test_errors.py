"""Bad input (SPEC §17): a clear 4xx, the same error shape everywhere, nothing changed."""

from __future__ import annotations

import json

import pytest


def _files(root):
    return sorted(
        (p.relative_to(root).as_posix(), p.read_bytes())
        for p in root.rglob("*")
        if p.is_file() and ".memory-locks" not in p.parts
    )


@pytest.mark.parametrize(
    ("method", "url", "field"),
    [
        ("put", "/api/agents/master/memory", "body"),
        ("put", "/api/agents/master/memory/notes/2026-11-30", "body"),
        ("put", "/api/memory/user", "body"),
        ("post", "/api/agents/master/memory/save", "text"),
    ],
)
def test_a_body_over_the_limit_is_413_and_nothing_is_written(
    owner_client, master, workspace, settings, method, url, field
):
    settings.MEMORY_MAX_BODY_BYTES = 1000
    before = _files(workspace)
    response = getattr(owner_client, method)(url, {field: "x" * 1000}, format="json")
    assert response.status_code == 413
    assert response.json()["code"] == "too_large"
    assert _files(workspace) == before
    # Just under the limit goes through.
    assert getattr(owner_client, method)(url, {field: "x" * 900}, format="json").status_code < 300


def test_errors_have_one_shape(owner_client, master, workspace):
    response = owner_client.put(
        "/api/memory/user/facts/Bad_Name", {"description": "d", "type": "profile"}, format="json"
    )
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid"
    assert "Bad_Name" in body["detail"]

    missing = owner_client.get("/api/agents/master/memory/notes/2026-11-01")
    assert missing.status_code == 404
    assert missing.json()["code"] == "not_found"


@pytest.mark.parametrize(
    "raw",
    [b"{not json", b"[1, 2]", b'"just a string"', b'{"body": null}', b'{"body": ["x"]}'],
)
def test_malformed_json_is_a_4xx_not_a_500(owner_client, master, workspace, raw):
    response = owner_client.generic(
        "PUT", "/api/agents/master/memory", raw, content_type="application/json"
    )
    assert 400 <= response.status_code < 500
    assert not (workspace / "MEMORY.md").exists()


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/api/agents/master/memory/lines", {"lines": [{"x": 1}], "source": "web"}),
        ("/api/agents/master/memory/lines", {"lines": ["ok"], "source": "web\n"}),
        ("/api/agents/master/memory/save", {"text": ["list"], "source": "web"}),
        ("/api/agents/master/memory/save", {"text": "ok", "source": "job: x"}),
    ],
)
def test_wrong_types_are_422(owner_client, master, workspace, url, body):
    before = _files(workspace)
    response = owner_client.post(url, json.dumps(body), content_type="application/json")
    assert response.status_code == 422
    assert _files(workspace) == before


@pytest.mark.parametrize(
    "source", ["chat", "telegram", "web", "http", "conv:tg-42", "job:nightly-consolidate"]
)
def test_it_accepts_the_known_sources(source):
    from memory.presence import is_job_source, validate_source

    assert validate_source(source) == source
    assert is_job_source(source) is source.startswith("job:")


@pytest.mark.parametrize(
    "source", ["", " ", "job:", "job: x", "Job:x", "web\n", "chat\x00", None, 3, "x" * 300]
)
def test_it_refuses_nonsense_sources(source):
    from memory.errors import InvalidInput
    from memory.presence import validate_source

    with pytest.raises(InvalidInput):
        validate_source(source)
