"""Settings, read from the environment (SPEC §18). Nothing secret lives in the repo."""

import datetime as dt
import ipaddress
import os
import re
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent


# Every variable is read here, once, through the typed helpers below, with its default at
# the call: app code reads `settings.X` and never restates a default. docs/configuration.md
# documents each one (tests/test_docs.py compares the two). Importing this module reads
# the environment and files and writes nothing: the key file and the database's mode are
# made at start-up by `manage.py memory_init` (`make run`, the Procfile's release step).

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    """A text setting; unset or blank (spaces only) means the default."""
    value = os.environ.get(name, "").strip()
    return value or default


def env_bool(name: str, default: bool = False) -> bool:
    """A yes/no setting. Anything but 1/0, true/false, yes/no, on/off (any case) raises:
    a typo must not silently turn a setting off (as healthchecks' envbool)."""
    value = os.environ.get(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r}: use true or false.")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: not a whole number.") from None


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: not a number.") from None


def env_list(name: str, default: str = "", *, sep: str = ",") -> list[str]:
    """A list setting: the items between `sep`, stripped, empty ones left out."""
    return [item.strip() for item in os.environ.get(name, default).split(sep) if item.strip()]


def env_time_of_day(name: str, default: str) -> str:
    """A time of day as "HH:MM" (24-hour); set but empty means "none" ("")."""
    value = os.environ.get(name, default).strip()
    if value and not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", value):
        raise ImproperlyConfigured(f"{name}={value!r}: use HH:MM.")
    return value


def env_proxy_header(name: str) -> tuple[str, str] | None:
    """SECURE_PROXY_SSL_HEADER from `X-Forwarded-Proto` (the header a proxy sets, meaning
    `https` when it says so) or `X-Forwarded-Proto=https`; unset or empty: None."""
    value = (os.environ.get(name) or "").strip()
    if not value:
        return None
    header, _, expected = value.partition("=")
    header = header.strip()
    if not header or not all(ch.isalnum() or ch in "-_" for ch in header):
        raise ImproperlyConfigured(f"{name}={value!r}: use a header name, e.g. X-Forwarded-Proto.")
    meta = header.upper().replace("-", "_")
    if not meta.startswith("HTTP_"):
        meta = f"HTTP_{meta}"
    return meta, (expected.strip() or "https")


def read_secret_key(path: Path) -> str:
    """The key kept in `path`, or "" when there is none yet (nothing is written here)."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


DEBUG = env_bool("DEBUG", False)
# SECRET_KEY from the environment; else the key `memory_init` generated into var/secret_key
# (0600) on the first `make run`, so a fresh machine works without a secret ever being
# committed. A process started before that file exists (the test suite, the first
# `migrate`) signs with a key of its own, which dies with it. SECRET_KEY_FILE is None when
# the environment gives the key.
SECRET_KEY_FILE = None if env_str("SECRET_KEY") else BASE_DIR / "var" / "secret_key"
SECRET_KEY = (
    env_str("SECRET_KEY")
    or (SECRET_KEY_FILE and read_secret_key(SECRET_KEY_FILE))
    or get_random_secret_key()
)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
# Behind an HTTPS proxy (docs/configuration.md): cookies only over HTTPS, and the header
# the proxy sets to say a request came in over HTTPS. Off by default: `make run` serves
# plain HTTP on loopback.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_PROXY_SSL_HEADER = env_proxy_header("SECURE_PROXY_SSL_HEADER")

# The workspace root: every memory file lives below it (SPEC §1).
MY_AGENT_HOME = os.path.expanduser(env_str("MY_AGENT_HOME", "~/.agent-home"))


def server_time_zone() -> str:
    """The machine's zone name (/etc/timezone or the /etc/localtime link), else UTC.
    Django sets the process's TZ from TIME_ZONE, so "the server's" must be named here."""
    try:
        with open("/etc/timezone") as handle:
            name = handle.read().strip()
        if name:
            return name
    except OSError:
        pass
    real = os.path.realpath("/etc/localtime")
    return real.split("zoneinfo/", 1)[1] if "zoneinfo/" in real else "UTC"


# A change made by hand (an editor, Obsidian, a sync tool) rather than through the app shows
# in INDEX.md and in the wiki's graph, lint and reports within this many seconds: what the
# app writes is known at once; what it did not write is found by a check of every file's
# stamp, made at most this often (docs/decisions.md, "Facts, notes and the prompt").
MEMORY_RECONCILE_SECONDS = env_float("MEMORY_RECONCILE_SECONDS", 10.0)

# "Today" for daily notes is in the owner's time zone (SPEC §4.2), by default the server's.
MEMORY_TIME_ZONE = env_str("MEMORY_TIME_ZONE") or server_time_zone()
# The search index (memory/search_index.py): a per-host cache under this directory, on a
# local disk (never the shared workspace volume), rebuilt from the files when missing.
MEMORY_SEARCH_DIR = env_str("MEMORY_SEARCH_DIR", str(BASE_DIR / "var" / "search"))
# A file changed by hand (not through the app) where no watch is possible (a network file
# system, MEMORY_SEARCH_WATCH=poll) is found at most this late; watched, within 2 s.
MEMORY_SEARCH_RECONCILE_SECONDS = env_float("MEMORY_SEARCH_RECONCILE_SECONDS", 30.0)
# How the host's index keeper (memory/search_keeper.py) finds hand edits: `auto` watches the
# memory folders with inotify where the workspace is on a local file system, else polls;
# `poll` never watches.
MEMORY_SEARCH_WATCH = env_str("MEMORY_SEARCH_WATCH", "auto")
# `auto`: any process that searches may keep the host's index in a thread when no other
# process does (`manage.py memory_index`, which bin/serve starts, normally does); `off`: this
# process never does — a missing index is then built by the query that needs it.
MEMORY_SEARCH_KEEPER = env_str("MEMORY_SEARCH_KEEPER", "auto")

# An existing OpenClaw workspace, used as it is (SPEC §1; docs/openclaw.md). The user
# scope's USER.md: this file when set (relative to MY_AGENT_HOME), else users/owner/USER.md
# when it exists, else a root USER.md (OpenClaw's place for it).
MEMORY_USER_FILE = env_str("MEMORY_USER_FILE")
# More folders or files of Markdown that memory_search and memory_get read, read-only, as
# OpenClaw's memorySearch.extraPaths: absolute or relative to MY_AGENT_HOME, separated by
# os.pathsep (":"). Shown as extra/<name>/... in results.
MEMORY_EXTRA_PATHS = env_list("MEMORY_EXTRA_PATHS", sep=os.pathsep)
# The pre-turn notes block (SPEC §4.2) is capped per note and in total, in characters. The
# defaults keep today's and yesterday's notes to about 8,000 tokens beside a 32,000-char
# system prompt: small next to any current model's context, large enough for a busy day.
MEMORY_PRE_TURN_NOTE_CHARS = env_int("MEMORY_PRE_TURN_NOTE_CHARS", 20_000)
MEMORY_PRE_TURN_TOTAL_CHARS = env_int("MEMORY_PRE_TURN_TOTAL_CHARS", 30_000)
if MEMORY_PRE_TURN_NOTE_CHARS < 1000 or MEMORY_PRE_TURN_TOTAL_CHARS < 1000:
    raise ImproperlyConfigured("MEMORY_PRE_TURN_*_CHARS must be at least 1000.")

INSTALLED_APPS = [
    "memoryproject.admin.OwnerAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_q",
    "axes",
    "memory",
    "proposals",
    "wiki",
    # The layer above the apps: commands that use both memory and the wiki (memory_demo).
    "memoryproject",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "memoryproject.middleware.BodySizeLimitMiddleware",
    "memoryproject.middleware.QueryTextMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "memoryproject.middleware.WorkspaceCheckMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "memoryproject.middleware.ContentSecurityPolicyMiddleware",
    "memoryproject.middleware.AttributionMiddleware",
    "memoryproject.middleware.DomainErrorPageMiddleware",
    # Last, as django-axes requires: answers a locked-out sign-in.
    "axes.middleware.AxesMiddleware",
]

# Django's database sessions, each read by one fixed statement (memory.sessions).
SESSION_ENGINE = "memory.sessions"

# Sign-in throttling (django-axes; docs/decisions.md, "Presence and credentials"): after
# MEMORY_LOGIN_FAILURE_LIMIT failed sign-ins of one username from one address, that pair is
# refused (429) for MEMORY_LOGIN_COOLOFF_MINUTES. Counted in the database, so it holds across
# web workers and hosts. Covers the pages' and the admin's sign-in (API tokens are not
# passwords).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # Django's model backend, the signed-in account read by one fixed statement
    # (memory.lookups): sessions signed in before this backend was named sign in again.
    "memory.auth.AccountBackend",
]
AXES_FAILURE_LIMIT = env_int("MEMORY_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = dt.timedelta(minutes=env_int("MEMORY_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "memory/locked_out.html"
AXES_VERBOSE = False
# The address an attempt counts against (memoryproject.clients): the connection's peer;
# `X-Forwarded-For` only when the peer is one of these reverse proxies (addresses or
# networks, comma-separated; none by default, so the header is ignored).
MEMORY_TRUSTED_PROXIES = env_list("MEMORY_TRUSTED_PROXIES")
for _proxy in MEMORY_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"MEMORY_TRUSTED_PROXIES: {_proxy!r} is not an IP address or network."
        ) from None
AXES_CLIENT_IP_CALLABLE = "memoryproject.clients.client_address"

ROOT_URLCONF = "memoryproject.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
            ],
        },
    },
]
WSGI_APPLICATION = "memoryproject.wsgi.application"

# SQLite by default; PostgreSQL (or anything dj-database-url knows) through DATABASE_URL.
# The SQLite file holds live session keys: `memory_init` makes it readable by this OS user
# only (0600; SQLite gives its -wal and -shm files the database file's mode).
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'var' / 'memory.sqlite3'}")
# A request thread keeps its connection for DATABASE_CONN_MAX_AGE seconds (checked before
# reuse): opening one (and SQLite's PRAGMAs) cost every request ~1.5 ms of CPU
# (docs/decisions.md, "Deployment"). 0 closes it after every request.
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 600),
        conn_health_checks=True,
    )
}
_db = DATABASES["default"]
# Test databases are named per test session (inherited by the processes a test starts, which
# is why it is put in the environment) so several test runs on one machine never share one.
_test_suffix = env_str("MEMORY_TEST_DB_SUFFIX") or str(os.getpid())
os.environ["MEMORY_TEST_DB_SUFFIX"] = _test_suffix
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # Concurrent writers wait for each other instead of failing with "database is locked":
    # WAL lets readers run beside a writer, IMMEDIATE takes the write lock at BEGIN (no
    # deadlocking upgrade from a read lock), and the timeout is how long a writer waits.
    _db["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    _db["TEST"] = {"NAME": str(BASE_DIR / "var" / f"test-{_test_suffix}.sqlite3")}
else:
    _db["TEST"] = {"NAME": f"test_memory_{_test_suffix}"}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGES = [("en", "English"), ("vi", "Tiếng Việt")]
# The owner's language: the pages' when the browser states none, and the notices' digest.
LANGUAGE_CODE = env_str("MEMORY_LANGUAGE", "en").lower()
if LANGUAGE_CODE not in dict(LANGUAGES):
    raise ImproperlyConfigured(
        f"MEMORY_LANGUAGE must be one of {', '.join(dict(LANGUAGES))}, not {LANGUAGE_CODE!r}"
    )
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = MEMORY_TIME_ZONE
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]  # the management pages' CSS and JS
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "/manage/memory/login/"
LOGIN_REDIRECT_URL = "/manage/memory/"

# Request bodies over this size answer 413 (SPEC §17), the same JSON from one rule in two
# places: under uvicorn, memoryproject.asgi.LimitBody counts the bytes as they stream in
# (chunked or not, before Django is given the body); under another WSGI server and the
# test client, memoryproject.middleware.BodySizeLimitMiddleware
# reads Content-Length. Django's own limit is off so that no second, different answer (a
# 400) exists for the same request.
MEMORY_MAX_BODY_BYTES = env_int("MEMORY_MAX_BODY_BYTES", 2 * 1024 * 1024)
# Threads a web worker runs Django on (memoryproject.asgi). Few: Python runs one at a time,
# and with 8, 20 agents searching at once waited unevenly (p95 207–407 ms against 120–283
# with 2–4, docs/decisions.md, "Deployment"); more than one, so a request waiting on a
# lock or a build does not hold up the worker.
WEB_THREADS = env_int("WEB_THREADS", 4)
# MCP streams (GET /mcp, held open until the client leaves) one token may hold at once in
# one web process; one more is 429 (memory.mcp.http, SPEC §16).
MEMORY_MCP_STREAMS_PER_TOKEN = env_int("MEMORY_MCP_STREAMS_PER_TOKEN", 4)
DATA_UPLOAD_MAX_MEMORY_SIZE = None

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "memory.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["memory.auth.IsOwnerOrAgent"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "memoryproject.api.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # JSON only: a form-encoded or multipart body on a JSON endpoint is 415 (it would skip
    # the JSON type rules), and JSON nested too deep is 400, never a RecursionError.
    "DEFAULT_PARSER_CLASSES": ["memoryproject.api.JSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Agent memory API",
    "DESCRIPTION": "Markdown memory for a personal multi-agent assistant (see README).",
    "VERSION": "0.1.0",
}

# django-q2: the ORM broker by default, so one database is all a machine needs.
Q_CLUSTER = {
    "name": "memory",
    "orm": "default",
    "workers": env_int("Q_WORKERS", 2),
    "timeout": env_int("Q_TIMEOUT", 600),
    "retry": env_int("Q_RETRY", 900),
    "max_attempts": 1,
    "catch_up": False,
    "ack_failures": True,
    "poll": 1,
}
Q_REDIS_URL = env_str("Q_REDIS_URL")
if Q_REDIS_URL:
    Q_CLUSTER.pop("orm")
    Q_CLUSTER["redis"] = Q_REDIS_URL
# Tests run tasks inline unless they start a real cluster.
Q_CLUSTER["sync"] = env_bool("Q_SYNC", False)
# The cluster's supervisor (`manage.py memory_worker`, memory.cluster): a guard that has
# not beaten for this long is stuck and its cluster is started anew; lost runs are reaped
# this often; a cluster that fails to come up this many times in a row ends the command.
MEMORY_WORKER_STALE_SECONDS = env_int("MEMORY_WORKER_STALE_SECONDS", 30)
MEMORY_WORKER_REAP_SECONDS = env_int("MEMORY_WORKER_REAP_SECONDS", 15)
MEMORY_WORKER_STOP_SECONDS = env_int("MEMORY_WORKER_STOP_SECONDS", 30)
MEMORY_WORKER_GIVE_UP = env_int("MEMORY_WORKER_GIVE_UP", 5)
# /healthz and memory_health: unhealthy when no worker cluster beat for this long.
MEMORY_HEALTH_WORKER_SECONDS = env_int("MEMORY_HEALTH_WORKER_SECONDS", 60)

# File history (memory.history): versions older than this many days are pruned nightly
# (each file's newest version is always kept); 0 keeps everything.
MEMORY_HISTORY_DAYS = env_int("MEMORY_HISTORY_DAYS", 365)

# The review queue (memory.jobs.review, proposals.rules). A pending proposal older than
# this many days expires (nothing written; 0 = never). A standing rule is offered after the
# owner approved the same kind from the same job this many times (0 = never offered).
MEMORY_PROPOSAL_EXPIRE_DAYS = env_int("MEMORY_PROPOSAL_EXPIRE_DAYS", 30)
MEMORY_RULE_OFFER_AFTER = env_int("MEMORY_RULE_OFFER_AFTER", 3)
# Notices that proposals wait: at this time of day in MEMORY_TIME_ZONE ("HH:MM", "" = not
# by time) and/or as soon as this many wait (0 = not by count); at most once per new batch.
# By email to MEMORY_NOTIFY_EMAIL and/or a signed JSON POST to MEMORY_NOTIFY_WEBHOOK_URL.
MEMORY_NOTIFY_AT = env_time_of_day("MEMORY_NOTIFY_AT", "08:00")
MEMORY_NOTIFY_PENDING = env_int("MEMORY_NOTIFY_PENDING", 10)
MEMORY_NOTIFY_EMAIL = env_str("MEMORY_NOTIFY_EMAIL")
MEMORY_NOTIFY_WEBHOOK_URL = env_str("MEMORY_NOTIFY_WEBHOOK_URL")
MEMORY_NOTIFY_WEBHOOK_SECRET = env_str("MEMORY_NOTIFY_WEBHOOK_SECRET")
MEMORY_NOTIFY_WEBHOOK_ATTEMPTS = env_int("MEMORY_NOTIFY_WEBHOOK_ATTEMPTS", 3)
MEMORY_NOTIFY_WEBHOOK_RETRY_DELAY = env_float("MEMORY_NOTIFY_WEBHOOK_RETRY_DELAY", 2.0)
# What the webhook carries: "json" (the signed payload) or "text" (the digest as plain text,
# for a chat service such as ntfy or a Telegram bot relay; signed too when a secret is set).
MEMORY_NOTIFY_WEBHOOK_FORMAT = env_str("MEMORY_NOTIFY_WEBHOOK_FORMAT", "json").lower()
if MEMORY_NOTIFY_WEBHOOK_FORMAT not in ("json", "text"):
    raise ImproperlyConfigured(
        f"MEMORY_NOTIFY_WEBHOOK_FORMAT must be json or text, not {MEMORY_NOTIFY_WEBHOOK_FORMAT!r}"
    )
# Where the owner opens the pages, for the links in notices.
MEMORY_PUBLIC_URL = env_str("MEMORY_PUBLIC_URL", "http://127.0.0.1:8000")
# Email: the console backend (printed) unless an SMTP host is configured.
EMAIL_HOST = env_str("EMAIL_HOST")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 20)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "agent-memory@localhost")

# Model providers (SPEC §13).
MEMORY_LLM_PROVIDER = env_str("MEMORY_LLM_PROVIDER", "openai").lower()
MEMORY_LLM_BASE_URL = env_str("MEMORY_LLM_BASE_URL")
MEMORY_LLM_API_KEY = env_str("MEMORY_LLM_API_KEY")
MEMORY_LLM_MODEL = env_str("MEMORY_LLM_MODEL")
MEMORY_LLM_TIMEOUT = env_float("MEMORY_LLM_TIMEOUT", 120)
# Seconds before the first retry on 429/5xx/connection errors (doubled for the second).
MEMORY_LLM_RETRY_DELAY = env_float("MEMORY_LLM_RETRY_DELAY", 1)
MEMORY_LLM_MAX_TOKENS = env_int("MEMORY_LLM_MAX_TOKENS", 8192)  # Anthropic's required cap
# The model's context window in tokens (0: not known). Prompts are fitted to it with room
# for the answer (memory/jobs/window.py); a prompt that cannot fit fails its run.
MEMORY_LLM_CONTEXT_TOKENS = env_int("MEMORY_LLM_CONTEXT_TOKENS", 0)
# A claimed run whose heartbeat (renewed every quarter of this by its process) is older
# than this is failed as "worker lost" and started again once (memory.jobs.runs).
MEMORY_RUN_LEASE_SECONDS = env_int("MEMORY_RUN_LEASE_SECONDS", 120)
# A run no worker claimed within this is lost too (its task vanished with a cluster).
MEMORY_RUN_QUEUED_LEASE_SECONDS = env_int("MEMORY_RUN_QUEUED_LEASE_SECONDS", 30 * 60)
# What each model costs is data, not a setting: memory/jobs/prices.toml.

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
