"""`/api/agents/{id}/memory/notes` (SPEC §3, §14.1, §17): listing, reading, writing, and
note names that try to leave the directory."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

import pytest

from memory.models import ApiToken
from memory.workspace import hash_text


def _files(root):
    return sorted(
        (p.relative_to(root).as_posix(), p.read_bytes())
        for p in root.rglob("*")
        if p.is_file() and ".memory-locks" not in p.parts
    )


def test_it_writes_reads_and_lists_notes(owner_client, master, workspace):
    url = "/api/agents/master/memory/notes"
    created = owner_client.put(f"{url}/2026-11-29", {"body": "# 2026-11-29\n"}, format="json")
    assert created.status_code == 201
    assert created.json() == {
        "day": "2026-11-29",
        "name": "2026-11-29.md",
        "body": "# 2026-11-29\n",
        "hash": hash_text("# 2026-11-29\n"),
        "invalid_utf8": False,
    }
    replaced = owner_client.put(f"{url}/2026-11-29.md", {"body": "- a\n"}, format="json")
    assert replaced.status_code == 200
    owner_client.put(f"{url}/2026-11-30-1030", {"body": "- b\n"}, format="json")
    (workspace / "memory/facebook-books.md").write_text("- Sapiens\n")

    assert owner_client.get(f"{url}/2026-11-29").json() == {
        "day": "2026-11-29",
        "name": "2026-11-29.md",
        "body": "- a\n",
        "hash": hash_text("- a\n"),
        "invalid_utf8": False,
    }
    listed = owner_client.get(url).json()["results"]
    assert [(n["day"], n["name"], n["size"]) for n in listed] == [
        ("2026-11-30", "2026-11-30-1030.md", 4),
        ("2026-11-29", "2026-11-29.md", 4),
    ]
    assert all(n["modified"] for n in listed)
    everything = owner_client.get(url, {"all": "1"}).json()["results"]
    assert [(n["day"], n["name"]) for n in everything][-1] == (None, "facebook-books.md")
    assert owner_client.get(f"{url}/2026-11-28").status_code == 404
    assert (workspace / "memory/2026-11-29.md").read_text() == "- a\n"


BAD_NAMES = [
    "..",
    "%2e%2e",
    "..%2F..%2Foutside",
    "%2E%2E%2Foutside",
    "2026-11-30%2F..%2F..%2Foutside",
    "2026-11-30%00",
    "%00",
    "%EF%BC%8E%EF%BC%8E",  # fullwidth dots
    "2026-02-30",
    "2026-11-30-UPPER",
    "2026-11-30%0A",
    "%2Fetc%2Fpasswd",
    "facebook-books",
    "2026-11-30.md.md",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_note_name_is_422_and_nothing_is_read_or_written(
    owner_client, master, workspace, tmp_path, name
):
    (tmp_path / "outside.md").write_text("secret\n")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory/facebook-books.md").write_text("- Sapiens\n")
    before = _files(tmp_path)
    url = f"/api/agents/master/memory/notes/{name}"
    put = owner_client.put(url, {"body": "pwned\n"}, format="json")
    get = owner_client.get(url)
    assert (put.status_code, get.status_code) == (422, 422), (put.content, get.content)
    assert "secret" not in get.content.decode()
    assert _files(tmp_path) == before


@pytest.mark.django_db(transaction=True)
def test_bad_names_are_refused_over_real_http(live_server, settings, tmp_path):
    """The same corpus sent byte for byte to a real server (no client-side normalising)."""
    from django.contrib.auth import get_user_model

    home = tmp_path / "home"
    (home / "memory").mkdir(parents=True)
    settings.MY_AGENT_HOME = str(home)
    (tmp_path / "outside.md").write_text("secret\n")
    user = get_user_model().objects.create_superuser("bob", "b@example.com", "pw-bob-1234")
    _, key = ApiToken.issue(user=user)
    before = _files(tmp_path)
    host = urlsplit(live_server.url)
    for name in [*BAD_NAMES, "../../../outside.md", "./../outside.md"]:
        for method, body in (("GET", None), ("PUT", b'{"body": "pwned"}')):
            conn = http.client.HTTPConnection(host.hostname, host.port, timeout=10)
            conn.request(
                method,
                f"/api/agents/master/memory/notes/{name}",
                body=body,
                headers={"Authorization": f"Token {key}", "Content-Type": "application/json"},
            )
            response = conn.getresponse()
            content = response.read()
            conn.close()
            # A `..` segment in the raw path may be answered by routing (404) before the
            # view; either way nothing is read or written.
            print("STATUS", name.encode(), method, response.status)
            assert response.status in (422, 404), (name, method, response.status)
            assert b"secret" not in content
    assert _files(tmp_path) == before


def test_a_put_without_a_body_is_422(owner_client, master, workspace):
    response = owner_client.put("/api/agents/master/memory/notes/2026-11-30", {}, format="json")
    assert response.status_code == 422
    assert not (workspace / "memory/2026-11-30.md").exists()
