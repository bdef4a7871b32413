"""The caller rule (SPEC §5, §16) as one function: what a credential, a stated channel
and a stated source make of a write's `source`. Its outcomes over REST are in
tests/spec/test_presence_api.py."""

from __future__ import annotations

import pytest

from memory.presence import Caller


def test_the_caller_rule_in_one_place():
    assert Caller(agent_id="a", job="n").source("chat") == "job:n"
    assert Caller(agent_id="a", channel="telegram").source() == "telegram"
    assert Caller(agent_id="a", channel="telegram").source("web") == "web"
    assert Caller(agent_id="a", channel="job:x").source("chat") == "job:x"
    assert Caller(agent_id="a").source("job:y") == "job:y"
    assert Caller().source() == "http"
    assert Caller().source(default="mcp") == "mcp"


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
