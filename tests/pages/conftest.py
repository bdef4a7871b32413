import pytest
from django.test import Client


@pytest.fixture
def pages(alice, workspace) -> Client:
    """The owner, signed in to the management pages (session)."""
    client = Client()
    client.force_login(alice)
    return client
