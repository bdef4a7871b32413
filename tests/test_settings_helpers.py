"""The typed settings helpers: a typo in the environment fails at start-up, it never
silently means "off"."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from memoryproject.settings import env_bool, env_float, env_int


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), ("true", True), ("Yes", True), ("ON", True), ("0", False), ("false", False),
     ("no", False), ("off", False), ("", False)],
)  # fmt: skip
def test_it_reads_yes_and_no(monkeypatch, value, expected):
    monkeypatch.setenv("SOME_FLAG", value)
    assert env_bool("SOME_FLAG", not expected) is expected


def test_it_falls_back_to_the_default_when_unset(monkeypatch):
    monkeypatch.delenv("SOME_FLAG", raising=False)
    assert env_bool("SOME_FLAG", True) is True
    assert env_int("SOME_NUMBER", 7) == 7
    assert env_float("SOME_NUMBER", 0.5) == 0.5


@pytest.mark.parametrize("value", ["ture", "2", "enabled", "y e s"])
def test_it_refuses_a_flag_it_cannot_read(monkeypatch, value):
    monkeypatch.setenv("SOME_FLAG", value)
    with pytest.raises(ImproperlyConfigured, match=f"SOME_FLAG={value!r}: use true or false"):
        env_bool("SOME_FLAG", False)


def test_it_refuses_numbers_it_cannot_read(monkeypatch):
    monkeypatch.setenv("SOME_NUMBER", "ten")
    with pytest.raises(ImproperlyConfigured, match="SOME_NUMBER='ten': not a whole number"):
        env_int("SOME_NUMBER", 1)
    with pytest.raises(ImproperlyConfigured, match="SOME_NUMBER='ten': not a number"):
        env_float("SOME_NUMBER", 1.0)
