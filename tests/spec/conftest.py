"""tests/spec is the black-box acceptance suite: written from the SPEC's § numbers, it
drives the app only through HTTP (the API, the pages), the tools and the management
commands, and checks files on disk, status codes and exact text. White-box tests (caches,
locks, races, parsers, the incremental graph) live in tests/<app>/."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in Path(item.fspath).parents:
            item.add_marker(pytest.mark.spec)
