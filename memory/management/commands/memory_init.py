import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from memory import workspace
from memory.agents import default_agent, ensure_all_dirs
from memory.binding import require_own_workspace
from memory.errors import DomainError
from memory.models import ApiToken

OWNER_USERNAME = "owner"


class Command(BaseCommand):
    help = (
        "Make the workspace ready (run at start-up): the lock pool, stale temp files of "
        "killed writes removed, the directories of every agent. Never fails on the "
        "workspace's state: an agent dir that cannot be used (a symbolic link, a read-only "
        "disk) is reported with the reason. On the first run (no owner account yet) "
        "create the owner and print, once, how to sign in."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--port", default=os.environ.get("PORT", "8000"), help="port of the sign-in URL"
        )

    def handle(self, *args, **options) -> None:
        require_own_workspace()
        default_agent()
        self.prepare_workspace()
        created = create_first_owner()
        if created is not None:
            password, token_key = created
            self.stdout.write(first_run_text(options["port"], password, token_key))

    def prepare_workspace(self) -> None:
        try:
            workspace.prepare()
        except DomainError as exc:
            self.stderr.write(f"memory_init: the workspace cannot take writes: {exc.message}")
        removed = workspace.remove_stale_temp_files()
        if removed:
            self.stdout.write(
                f"memory_init: removed {len(removed)} temp file(s) left by killed writes: "
                + ", ".join(removed[:10])
            )
        for agent_id, problems in ensure_all_dirs().items():
            who = f"agent {agent_id}" if agent_id else "the user scope"
            for problem in problems:
                self.stderr.write(f"memory_init: {who} cannot be used: {problem}")


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
