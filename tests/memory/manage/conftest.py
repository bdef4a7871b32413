import pytest
from django.test import Client

# The local SMTP sink and webhook receiver of the notices' tests, for Settings → Notifications.
from tests.jobs.test_notify import hook, smtp  # noqa: F401 - fixtures


@pytest.fixture
def pages(alice, workspace) -> Client:
    """The owner, signed in to the management pages (session)."""
    client = Client()
    client.force_login(alice)
    return client
