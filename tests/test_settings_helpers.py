"""The typed settings helpers: a typo in the environment fails at start-up, it never
silently means "off"."""

import os
import stat

import pytest
from django.core.exceptions import ImproperlyConfigured

from memoryproject import settings as project_settings
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


def test_the_secret_key_file_and_a_loose_file_are_made_0600(tmp_path):
    """Files that hold secrets are readable by this OS user only (the SQLite database too:
    tests/spec/test_s18_running.py)."""
    key_file = tmp_path / "var" / "secret_key"
    key = project_settings.secret_key_from(key_file)
    assert len(key) >= 50
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert project_settings.secret_key_from(key_file) == key
    loose = tmp_path / "loose"
    loose.write_text("k")
    os.chmod(loose, 0o644)
    project_settings.private_file(loose)
    assert stat.S_IMODE(os.stat(loose).st_mode) == 0o600
