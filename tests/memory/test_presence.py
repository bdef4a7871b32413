"""The caller rule (SPEC §5, §16) as one function: what a credential, a stated channel
and a stated source make of a write's `source`. Its outcomes over REST are in
tests/spec/test_presence_api.py."""

from __future__ import annotations

from memory.presence import Caller


def test_the_caller_rule_in_one_place():
    assert Caller(agent_id="a", job="n").source("chat") == "job:n"
    assert Caller(agent_id="a", channel="telegram").source() == "telegram"
    assert Caller(agent_id="a", channel="telegram").source("web") == "web"
    assert Caller(agent_id="a", channel="job:x").source("chat") == "job:x"
    assert Caller(agent_id="a").source("job:y") == "job:y"
    assert Caller().source() == "http"
    assert Caller().source(default="mcp") == "mcp"
