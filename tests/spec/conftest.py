"""tests/spec is the black-box acceptance suite, one file per § of the SPEC
(`test_sNN_<topic>.py`): it drives the app only through HTTP (the API, the pages, the
admin), MCP, the tools and the management commands, and checks files on disk, status codes
and exact text. Its test files import no app module (tests/test_where_tests_go.py checks);
this conftest is the harness and may: it creates what a test starts from the way the app's
own start-up or an operator would. White-box tests (caches, locks, races, parsers, the
incremental graph) live in tests/<app>/."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in Path(item.fspath).parents:
            item.add_marker(pytest.mark.spec)


@pytest.fixture
def runs_inline(monkeypatch):
    """Runs started over the API (consolidate, compile) are done inside the request, as a
    django-q2 worker would do them (django-q2's sync mode): the 202 comes back finished."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)


@pytest.fixture
def token_client(db):
    """`token_client("helper", job="nightly")`: a client holding a key that
    `manage.py memory_token agent <id> [--job <job>]` printed (`token_client()`: the
    owner's, `memory_token owner`)."""

    def make(agent_id: str | None = None, *, job: str | None = None) -> APIClient:
        args = ["owner"] if agent_id is None else ["agent", agent_id]
        if job:
            args += ["--job", job]
        out = io.StringIO()
        call_command("memory_token", *args, stdout=out)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {out.getvalue().strip()}")
        return client

    return make


@pytest.fixture
def record_run(db):
    """`record_run("master", "compile", "failed", minutes=2)`: a finished run in Activity
    started `minutes` after now, as a worker would have left it; returns its id. (No
    request makes a run of a chosen kind and outcome: this is the harness's.)"""
    from django.utils import timezone

    from memory.models import Run

    now = timezone.now()

    def make(agent_id: str, kind: str, status: str, *, minutes: int = 0, summary: str = "") -> int:
        run = Run.objects.create(agent_id=agent_id, kind=kind, status=status, summary=summary)
        Run.objects.filter(pk=run.pk).update(started_at=now + dt.timedelta(minutes=minutes))
        return run.pk

    return make
