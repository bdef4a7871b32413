"""`memory_token owner` / `memory_token agent <id> [--job <job-id>]`: issue an API token and
print only its key (SPEC §14), so `KEY=$(python manage.py memory_token owner)` just works.

`--job` issues a job token: every write made with it is a `job:<job-id>` write (SPEC §5),
so its shared writes become proposals whatever a request says. Give a scheduled job its
own job token, and let it resume with the same token.

The owner token belongs to the first active superuser. When there is none yet, a
superuser called "owner" is created with an unusable password (set one with
`manage.py changepassword owner` to use the admin)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.errors import InvalidInput
from memory.models import Agent, ApiToken
from memory.presence import validate_job_id

OWNER_USERNAME = "owner"


class Command(BaseCommand):
    help = "Issue an API token for the owner or for one agent and print only its key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("who", choices=["owner", "agent"])
        parser.add_argument("agent_id", nargs="?", help="the agent's id (for `agent`)")
        parser.add_argument(
            "--job", help="a job token: every write is a job:<job-id> write (agent only)"
        )

    def handle(
        self, *args, who: str, agent_id: str | None = None, job: str | None = None, **options
    ) -> None:
        if who == "agent":
            if not agent_id:
                raise CommandError("Usage: memory_token agent <id> [--job <job-id>]")
            agent = Agent.objects.filter(pk=agent_id).first()
            if agent is None:
                raise CommandError(f"No agent {agent_id!r}.")
            if job is not None:
                try:
                    validate_job_id(job)
                except InvalidInput as error:
                    raise CommandError(error.message) from None
            _, key = ApiToken.issue(agent=agent, job=job or "")
        else:
            if agent_id or job is not None:
                raise CommandError("Usage: memory_token owner")
            _, key = ApiToken.issue(user=_owner_user())
        self.stdout.write(key)


def _owner_user():
    users = get_user_model().objects
    user = users.filter(is_superuser=True, is_active=True).order_by("pk").first()
    if user is None:
        user = users.filter(username=OWNER_USERNAME).first()
        if user is None:
            user = users.create_superuser(OWNER_USERNAME, email="", password=None)
        else:
            user.is_superuser = user.is_staff = user.is_active = True
            user.save(update_fields=["is_superuser", "is_staff", "is_active"])
    return user
