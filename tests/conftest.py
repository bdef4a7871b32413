"""Shared fixtures. Every test that touches memory gets a fresh workspace on tmp_path;
nothing ever reads or writes a real home."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import translation
from rest_framework.test import APIClient

from memory import clock
from memory.models import Agent, ApiToken
from tests.fakellm import FakeLLM

TESTS = Path(__file__).resolve().parent
# Suites of their own, left out of `make test` (the default suite a developer runs before
# every commit): each is collected only when a command names its folder (or a file in it).
SEPARATE_SUITES = {
    TESTS / "ops": "make test-slow",  # real server and worker processes, killed and restarted
    TESTS / "browser": "make test-browser",  # a real Chromium
    TESTS / "model": "make test-model",  # a real model server
}


def _named(folder: Path, config) -> bool:
    for arg in config.args:
        path = (Path(config.invocation_params.dir) / arg.split("::")[0]).resolve()
        if path == folder or folder in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path, config):
    """tests/ops, tests/browser and tests/model take minutes: `pytest` (and `make test`)
    collects none of them; `pytest tests/ops` (`make test-slow`), `pytest tests/browser`
    and `pytest tests/model` do."""
    for folder in SEPARATE_SUITES:
        inside = collection_path == folder or folder in collection_path.parents
        if inside and not _named(folder, config):
            return True
    return None


@pytest.fixture(autouse=True, scope="session")
def _live_server_backlog():
    """Django's test server listens with a backlog of 10; the concurrency tests open 16+
    connections at once, which could be reset by the kernel before they are accepted."""
    from django.core.servers.basehttp import WSGIServer

    WSGIServer.request_queue_size = 128


@pytest.fixture(autouse=True, scope="session")
def _connections_closed_after_each_request():
    """Threads a test starts make requests and end without closing their database
    connection: kept (DATABASE_CONN_MAX_AGE), it outlived the run and PostgreSQL refused to
    drop the test database. Closed after each request here, as with DATABASE_CONN_MAX_AGE=0;
    processes a test starts keep the real setting."""
    from django.conf import settings as django_settings

    django_settings.DATABASES["default"]["CONN_MAX_AGE"] = 0


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hasher():
    """Django's PBKDF2 takes about half a second per password on a small machine, and most
    tests create the owner: the session hashes with MD5 (Django's advice for test suites).
    Processes a test starts keep the real hashers."""
    from django.conf import settings as django_settings

    django_settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True, scope="session")
def _no_real_home(tmp_path_factory):
    """Even a test without the workspace fixture never writes to a real home: the
    session's default MY_AGENT_HOME is a temporary directory."""
    from django.conf import settings as django_settings

    home = tmp_path_factory.mktemp("session-home")
    django_settings.MY_AGENT_HOME = str(home)
    os.environ["MY_AGENT_HOME"] = str(home)
    index = tmp_path_factory.mktemp("session-search-index")
    django_settings.MEMORY_SEARCH_DIR = str(index)
    os.environ["MEMORY_SEARCH_DIR"] = str(index)
    # No index keeper thread in the test process (each test has its own workspace): a
    # missing index is built by the query that needs it. Processes a test starts keep the
    # default (tests/ops, the keeper's own tests turn it on where they test it).
    django_settings.MEMORY_SEARCH_KEEPER = "off"
    return home


@pytest.fixture(autouse=True, scope="session")
def _one_secret_key():
    """Every process a test starts signs with this session's key (a django-q2 worker must
    verify what the test enqueued), given as SECRET_KEY; so start-up (memory_init) writes no
    var/secret_key into the checkout, and no run depends on one a previous run left."""
    from django.conf import settings as django_settings

    os.environ["SECRET_KEY"] = django_settings.SECRET_KEY
    django_settings.SECRET_KEY_FILE = None  # what the settings say when SECRET_KEY is set


@pytest.fixture(autouse=True)
def _the_default_language():
    """Each test starts in the default language: a test (or a task it runs inline) that
    activated another for the owner would otherwise leave it to the next test of this
    process."""
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _search_reconciles_end_with_the_test():
    """A query may start a reconcile of the search index in the background: let it end
    before the next test points MY_AGENT_HOME elsewhere."""
    yield
    from memory import search_index

    search_index.wait_for_background()


@pytest.fixture
def workspace(tmp_path, settings):
    """MY_AGENT_HOME pointed at an empty directory (also for processes a test starts), with
    its own search index directory beside it."""
    home = tmp_path / "home"
    home.mkdir()
    index = tmp_path / "search-index"
    settings.MY_AGENT_HOME = str(home)
    settings.MEMORY_SEARCH_DIR = str(index)
    old = {name: os.environ.get(name) for name in ("MY_AGENT_HOME", "MEMORY_SEARCH_DIR")}
    os.environ["MY_AGENT_HOME"] = str(home)
    os.environ["MEMORY_SEARCH_DIR"] = str(index)
    yield home
    for name, value in old.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture
def owner_today() -> dt.date:
    """Today in the owner's time zone (MEMORY_TIME_ZONE, SPEC §4.2): the day a note, a
    fact's `updated` or a page's `updated` is stamped with."""
    return clock.today()


@pytest.fixture
def master(db, workspace) -> Agent:
    """The default agent, created by the migration; its dir is the workspace root.

    Transactional tests flush the database afterwards (the migration's row with it), so
    it is re-created here when a previous test removed it."""
    from memory.agents import default_agent

    return default_agent()


@pytest.fixture
def helper_agent(db, workspace) -> Agent:
    """A second agent, living under agents/helper/, with its MEMORY.md (empty) and memory/
    already there — as an agent that has written before has them (the app itself makes
    them only with a first write, SPEC §1)."""
    agent = Agent.objects.create(id="helper", name="Helper")
    (workspace / "agents/helper/memory").mkdir(parents=True)
    (workspace / "agents/helper/MEMORY.md").touch()
    return agent


@pytest.fixture
def alice(db):
    """The owner."""
    return get_user_model().objects.create_superuser("alice", "alice@example.com", "pw-alice-123")


@pytest.fixture
def live_owner_key(transactional_db, workspace) -> str:
    """The owner's token key, for tests that talk to a live server over real HTTP (their
    database must be committed, so transactional)."""
    from memory.agents import default_agent

    default_agent()
    user = get_user_model().objects.create_superuser("alice", "a@example.com", "pw-alice-123")
    _, key = ApiToken.issue(user=user)
    return key


@pytest.fixture
def owner_client(alice, workspace) -> APIClient:
    """The owner, by token."""
    _, key = ApiToken.issue(user=alice)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.fixture
def pages(alice, workspace) -> Client:
    """The owner, signed in to the management pages (session)."""
    client = Client()
    client.force_login(alice)
    return client


def _agent_client(agent: Agent) -> APIClient:
    _, key = ApiToken.issue(agent=agent)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.fixture
def master_client(master) -> APIClient:
    """The master agent's token."""
    return _agent_client(master)


@pytest.fixture
def helper_client(helper_agent) -> APIClient:
    """The helper agent's token (the "other agent" persona)."""
    return _agent_client(helper_agent)


@pytest.fixture
def anon_client(workspace) -> APIClient:
    return APIClient()


@pytest.fixture
def fake_llm(settings):
    """An OpenAI-compatible fake at MEMORY_LLM_BASE_URL, model gpt-4o-mini (priced in
    memory/jobs/prices.toml), fast retries, a 2-second timeout."""
    from memory.jobs.llm import forget_endpoints

    forget_endpoints()
    server = FakeLLM().start()
    settings.MEMORY_LLM_PROVIDER = "openai"
    settings.MEMORY_LLM_BASE_URL = server.base_url
    settings.MEMORY_LLM_API_KEY = "sk-test"
    settings.MEMORY_LLM_MODEL = "gpt-4o-mini"
    settings.MEMORY_LLM_TIMEOUT = 2
    settings.MEMORY_LLM_RETRY_DELAY = 0.01
    yield server
    server.stop()


@pytest.fixture
def no_model(settings):
    """No model configured: runs are `skipped` ("no model configured")."""
    settings.MEMORY_LLM_MODEL = ""
    settings.MEMORY_LLM_BASE_URL = ""
