"""The typed settings helpers: a typo in the environment fails at start-up, it never
silently means "off"."""

import ast
import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from memory.management.commands import memory_init
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


def test_a_list_and_a_time_of_day_are_read_and_checked(monkeypatch):
    from memoryproject.settings import env_list, env_str, env_time_of_day

    monkeypatch.setenv("SOME_LIST", " a:b ::c ")
    assert env_list("SOME_LIST", sep=":") == ["a", "b", "c"]
    monkeypatch.setenv("SOME_TEXT", "   ")
    assert env_str("SOME_TEXT", "fallback") == "fallback"
    monkeypatch.setenv("SOME_TIME", "")
    assert env_time_of_day("SOME_TIME", "08:00") == ""  # set but empty: none
    monkeypatch.delenv("SOME_TIME")
    assert env_time_of_day("SOME_TIME", "08:00") == "08:00"
    monkeypatch.setenv("SOME_TIME", "8am")
    with pytest.raises(ImproperlyConfigured, match="SOME_TIME='8am': use HH:MM"):
        env_time_of_day("SOME_TIME", "08:00")


SETTINGS = Path(__file__).resolve().parents[2] / "memoryproject" / "settings.py"
WRITES = {
    "write_text",
    "write_bytes",
    "mkdir",
    "makedirs",
    "chmod",
    "touch",
    "unlink",
    "rename",
    "open",
}


def test_the_settings_module_writes_nothing():
    """Importing the settings reads the environment and files; start-up (memory_init)
    writes the key file and tightens the database's mode."""
    calls = set()
    for node in ast.walk(ast.parse(SETTINGS.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            calls.add(node.func.attr)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "open":
            assert not node.args[1:], "settings.py opens a file for writing"
    assert calls & WRITES == set()


def test_importing_the_settings_creates_no_database_file(tmp_path):
    db = tmp_path / "memory.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}"}
    done = subprocess.run(
        [sys.executable, "-c", "import memoryproject.settings as s; print(len(s.SECRET_KEY))"],
        cwd=SETTINGS.parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 50  # a key all the same
    assert list(tmp_path.iterdir()) == []


def test_memory_init_keeps_one_secret_key_readable_by_its_user_only(db, workspace, settings):
    key_file = Path(settings.MY_AGENT_HOME).parent / "var" / "secret_key"
    settings.SECRET_KEY_FILE = key_file
    call_command("memory_init", stdout=io.StringIO())
    key = key_file.read_text()
    assert len(key) >= 50 and stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    call_command("memory_init", stdout=io.StringIO())
    assert key_file.read_text() == key
    from memoryproject.settings import read_secret_key

    assert read_secret_key(key_file) == key  # what the next process's settings read
    assert read_secret_key(key_file.parent / "missing") == ""


def test_with_a_secret_key_in_the_environment_no_key_file_is_kept(db, workspace, settings):
    settings.SECRET_KEY_FILE = None  # what the settings say when SECRET_KEY is set
    call_command("memory_init", stdout=io.StringIO())  # writes no key anywhere
    env = {**os.environ, "SECRET_KEY": "from-the-environment"}
    done = subprocess.run(
        [sys.executable, "-c", "import memoryproject.settings as s; print(s.SECRET_KEY_FILE)"],
        cwd=SETTINGS.parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == "None", done.stderr


def test_the_secret_key_file_and_a_loose_file_are_made_0600(tmp_path):
    """Files that hold secrets are readable by this OS user only (the SQLite database too:
    tests/spec/test_s18_running.py)."""
    key_file = tmp_path / "var" / "secret_key"
    key = memory_init.secret_key_from(key_file)
    assert len(key) >= 50
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert memory_init.secret_key_from(key_file) == key
    loose = tmp_path / "loose"
    loose.write_text("k")
    os.chmod(loose, 0o644)
    memory_init.private_file(loose)
    assert stat.S_IMODE(os.stat(loose).st_mode) == 0o600
