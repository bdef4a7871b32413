"""memoryproject/error_views.py: an error no view answered itself is JSON with a message
under /api/, /mcp and the OAuth probes, a page elsewhere (SPEC §17). A 500 under /api/
used to answer the HTML page, and the tool-loop examples crashed on `.json()`."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.fixture
def failing_site(settings, db):
    settings.ROOT_URLCONF = "tests.memoryproject.failing_urls"
    return Client(raise_request_exception=False)


def test_a_500_under_the_api_is_json_with_a_message(failing_site):
    response = failing_site.get("/api/fails")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "detail": "The server failed to answer this request; nothing was saved by it. "
        "The server's log has the details.",
        "code": "server_error",
    }


def test_a_500_of_a_page_stays_a_page(failing_site):
    response = failing_site.get("/manage/fails")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")
