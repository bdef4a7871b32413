"""SPEC §18 and §13: settings come from the environment."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PRINT = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({k: str(getattr(s, k, None)) for k in ("
    "'MY_AGENT_HOME','MEMORY_TIME_ZONE','SECRET_KEY','DEBUG','ALLOWED_HOSTS',"
    "'MEMORY_LLM_PROVIDER','MEMORY_LLM_BASE_URL','MEMORY_LLM_API_KEY','MEMORY_LLM_MODEL',"
    "'MEMORY_LLM_TIMEOUT')} | {'DB': s.DATABASES['default']['ENGINE'] + '|' + "
    "str(s.DATABASES['default']['NAME'])}))"
)


def _settings(**env) -> dict:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "DATABASE_URL"))}
    base.update(DJANGO_SETTINGS_MODULE="memoryproject.settings", **env)
    done = subprocess.run(
        [sys.executable, "-c", PRINT],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_it_reads_every_setting_from_the_environment(tmp_path):
    got = _settings(
        MY_AGENT_HOME=str(tmp_path / "home"),
        MEMORY_TIME_ZONE="Asia/Ho_Chi_Minh",
        SECRET_KEY="s3cret-from-env",
        DEBUG="1",
        ALLOWED_HOSTS="a.example,b.example",
        MEMORY_LLM_PROVIDER="anthropic",
        MEMORY_LLM_BASE_URL="http://127.0.0.1:9/v1",
        MEMORY_LLM_API_KEY="k-1",
        MEMORY_LLM_MODEL="m-1",
        MEMORY_LLM_TIMEOUT="7",
        DATABASE_URL=f"sqlite:///{tmp_path / 'x.sqlite3'}",
    )
    assert got["MY_AGENT_HOME"] == str(tmp_path / "home")
    assert got["MEMORY_TIME_ZONE"] == "Asia/Ho_Chi_Minh"
    assert got["SECRET_KEY"] == "s3cret-from-env"
    assert got["DEBUG"] == "True"
    assert got["ALLOWED_HOSTS"] == str(["a.example", "b.example"])
    assert got["MEMORY_LLM_PROVIDER"] == "anthropic"
    assert got["MEMORY_LLM_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert got["MEMORY_LLM_API_KEY"] == "k-1"
    assert got["MEMORY_LLM_MODEL"] == "m-1"
    assert float(got["MEMORY_LLM_TIMEOUT"]) == 7.0
    assert got["DB"] == f"django.db.backends.sqlite3|{tmp_path / 'x.sqlite3'}"


def test_it_has_the_embedded_defaults(monkeypatch):
    for key in ("MY_AGENT_HOME", "DEBUG"):
        monkeypatch.delenv(key, raising=False)
    got = _settings(HOME=os.environ.get("HOME", "/root"))
    assert got["MY_AGENT_HOME"] == os.path.expanduser("~/.agent-home") or got[
        "MY_AGENT_HOME"
    ].endswith(".agent-home")
    assert got["MEMORY_LLM_PROVIDER"] == "openai"
    assert got["DB"].startswith("django.db.backends.sqlite3|")
    assert "/var/" in got["DB"]
    assert got["MEMORY_TIME_ZONE"]  # the server's zone, named


def test_it_reads_postgresql_from_database_url():
    got = _settings(DATABASE_URL="postgres://u:p@127.0.0.1:5432/agentmem")
    assert got["DB"] == "django.db.backends.postgresql|agentmem"


def test_the_sqlite_database_is_0600(tmp_path):
    # The secret key's file and private_file(): tests/memoryproject/test_settings_helpers.py.
    # A fresh start as `make run` does it: migrate, then memory_init.
    db = tmp_path / "db" / "memory.sqlite3"
    db.parent.mkdir()
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "MY_AGENT_HOME": str(tmp_path / "h")}
    for command in (["migrate", "--noinput", "-v0"], ["memory_init"]):
        done = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    for path in db.parent.iterdir():  # the database, and its -wal / -shm when present
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path.name


def test_secure_cookie_and_proxy_settings_come_from_the_environment():
    script = (
        "from django.conf import settings as s;"
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER)"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memoryproject.settings",
        "SESSION_COOKIE_SECURE": "true",
        "CSRF_COOKIE_SECURE": "yes",
        "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    }
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {script}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "True True ('HTTP_X_FORWARDED_PROTO', 'https')", out.stderr
    env.pop("SESSION_COOKIE_SECURE")
    env.pop("CSRF_COOKIE_SECURE")
    env["SECURE_PROXY_SSL_HEADER"] = "X-Scheme=on"
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {script}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "False False ('HTTP_X_SCHEME', 'on')", out.stderr


def test_the_derived_state_is_the_owners_alone(owner_client, master, workspace):
    """SPEC §18: the derived state (which facts, which pages changed) is 0700 / 0600 —
    it was left world-readable — and start-up tightens what an older version left."""
    from django.core.management import call_command

    state = workspace / ".memory-state"
    state.mkdir(mode=0o755, exist_ok=True)
    os.chmod(state, 0o755)
    (state / "old.json").write_text("{}")
    os.chmod(state / "old.json", 0o644)
    call_command("memory_init", stdout=open(os.devnull, "w"))  # noqa: SIM115
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "old.json").stat().st_mode) == 0o600
    fact = {"description": "black", "type": "preference", "body": ""}
    assert owner_client.put("/api/memory/user/facts/coffee", fact, format="json").status_code == 201
    os.chmod(state, 0o755)  # a folder someone loosened since: the next write tightens it
    assert owner_client.put("/api/memory/user/facts/tea", fact, format="json").status_code == 201
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "facts-index.json").stat().st_mode) == 0o600
