"""memory/scripts.py: the script store's Python API, a helper bound to one schedule or one
conversation (over REST: tests/spec/test_s11_script_store.py)."""

from __future__ import annotations

import pytest

from memory import scripts
from memory.errors import InvalidInput
from memory.models import ScriptEntry


def test_it_stores_and_loads_through_the_bound_helper(master):
    kv = scripts.ScriptStore(master, schedule="morning")
    assert kv.load("last") is None
    kv.store("last", {"day": "2026-11-30", "count": 3})
    assert kv.load("last") == {"day": "2026-11-30", "count": 3}
    kv.store("last", [1, 2])
    assert ScriptEntry.objects.get(agent=master, scope="schedule", scope_id="morning").value == [
        1,
        2,
    ]
    other = scripts.ScriptStore(master, conversation="morning")
    assert other.load("last", "nothing") == "nothing"


def test_it_refuses_a_helper_bound_to_both_or_neither(master):
    with pytest.raises(InvalidInput):
        scripts.ScriptStore(master)
    with pytest.raises(InvalidInput):
        scripts.ScriptStore(master, schedule="a", conversation="b")
