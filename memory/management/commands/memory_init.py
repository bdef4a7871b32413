import contextlib
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.core.management.utils import get_random_secret_key
from django.db import connection, transaction

from memory import history, search_store, workspace
from memory.agents import agent_dir_problems, default_agent
from memory.binding import configured_zone, require_own_workspace, time_zone
from memory.errors import DomainError
from memory.models import ApiToken

OWNER_USERNAME = "owner"


class Command(BaseCommand):
    help = (
        "Make the server ready (run at start-up): the secret key kept in var/secret_key and "
        "the SQLite database readable by this OS user only (0600), then the workspace: the "
        "lock pool, stale temp files of "
        "killed writes removed, every agent's directory checked (nothing of the owner's is "
        "created: memory files and folders come with their first write). Never fails on the "
        "workspace's state: an agent dir that cannot be used (a symbolic link, a read-only "
        "disk) is reported with the reason. On the first run (no owner account yet) "
        "create the owner and print, once, how to sign in."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--port", default=os.environ.get("PORT", "8000"), help="port of the sign-in URL"
        )

    def handle(self, *args, **options) -> None:
        keep_secrets_private()
        require_own_workspace()
        try:  # refused here, at start-up, rather than as a 500 on every search
            search_store.base_dir()
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from exc
        self.say_time_zone()
        default_agent()
        self.prepare_workspace()
        created = create_first_owner()
        if created is not None:
            password, token_key = created
            self.stdout.write(first_run_text(options["port"], password, token_key))

    def say_time_zone(self) -> None:
        """Every process takes today from the zone the workspace records (SPEC §4.2): say
        so when this process was started with another one."""
        recorded, configured = time_zone(), configured_zone()
        if recorded != configured:
            self.stderr.write(
                f"memory_init: this workspace's time zone is {recorded} (recorded at its first "
                f"start); MEMORY_TIME_ZONE here is {configured}. Notes keep the recorded "
                f"zone's days. To change it: manage.py memory_workspace --time-zone {configured}"
            )

    def prepare_workspace(self) -> None:
        try:
            workspace.prepare()
        except DomainError as exc:
            self.stderr.write(f"memory_init: the workspace cannot take writes: {exc.message}")
        recovered = history.recover()
        if recovered:
            self.stdout.write(
                f"memory_init: recorded {len(recovered)} restore(s) a killed process had "
                "written: " + ", ".join(recovered[:10])
            )
        removed = workspace.remove_stale_temp_files()
        if removed:
            self.stdout.write(
                f"memory_init: removed {len(removed)} temp file(s) left by killed writes: "
                + ", ".join(removed[:10])
            )
        for agent_id, problems in agent_dir_problems().items():
            for problem in problems:
                self.stderr.write(f"memory_init: agent {agent_id} cannot be used: {problem}")


def private_file(path: Path) -> None:
    """Make `path` exist readable and writable by this OS user only (0600), tightening
    an existing file that others may read: it holds a secret (the key, the sessions).

    An existing file is never opened, only chmodded: closing any descriptor of a file
    drops every POSIX lock this process holds on it — SQLite's locks on the database and
    its -shm file, when this runs in a process with an open connection."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        with contextlib.suppress(FileExistsError):  # created meanwhile: chmodded below
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    if os.stat(path).st_mode & 0o077:
        try:
            os.chmod(path, 0o600)
        except PermissionError:  # another user's file: theirs to tighten
            pass


def secret_key_from(path: Path) -> str:
    """The key in `path`, or a new one written there (0600) when it has none."""
    private_file(path)
    key = path.read_text().strip()
    if not key:
        key = get_random_secret_key()
        with open(path, "w") as handle:
            handle.write(key)
    return key


def keep_secrets_private() -> None:
    """The key file the settings read (written once, unless SECRET_KEY is in the
    environment) and the SQLite database with its -wal and -shm files: 0600. Settings
    read these files and never write them (importing them has no side effects)."""
    if settings.SECRET_KEY_FILE:
        secret_key_from(Path(settings.SECRET_KEY_FILE))
    name = str(connection.settings_dict.get("NAME") or "")
    if connection.vendor == "sqlite" and name and name != ":memory:" and "mode=memory" not in name:
        private_file(Path(name))
        for suffix in ("-wal", "-shm"):
            if os.path.exists(name + suffix):
                private_file(Path(name + suffix))


def create_first_owner() -> tuple[str, str] | None:
    """When no superuser with a password exists, create `owner` with a generated password
    and an owner API token. Returns (password, token key) — shown once, stored only hashed
    — or None when an owner already exists (nothing is created or printed again)."""
    users = get_user_model()
    with transaction.atomic():
        superusers = list(users.objects.select_for_update().filter(is_superuser=True))
        if any(user.has_usable_password() for user in superusers):
            return None
        password = secrets.token_urlsafe(12)
        existing = next((u for u in superusers if u.username == OWNER_USERNAME), None)
        if existing is not None:
            # `memory_token owner` made the owner without a password: give it one now.
            existing.set_password(password)
            existing.save(update_fields=["password"])
            user = existing
        elif superusers or users.objects.filter(username=OWNER_USERNAME).exists():
            return None  # someone set up accounts by hand: leave them alone
        else:
            user = users.objects.create_superuser(OWNER_USERNAME, "", password)
        _, key = ApiToken.issue(user=user)
    return password, key


def first_run_text(port: str, password: str, token_key: str) -> str:
    return (
        "\n"
        "=== First run: an owner account was created (shown only this once) ===\n"
        f"  Sign in at:  http://127.0.0.1:{port}/manage/memory/\n"
        f"  Username:    {OWNER_USERNAME}\n"
        f"  Password:    {password}\n"
        f"  Change it:   .venv/bin/python manage.py changepassword {OWNER_USERNAME}\n"
        f"  Owner API token (Authorization: Token <key>): {token_key}\n"
        "  A new token any time: .venv/bin/python manage.py memory_token owner\n"
        "======================================================================\n"
    )
