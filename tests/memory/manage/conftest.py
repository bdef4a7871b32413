# The local SMTP sink and webhook receiver of the notices' tests, for Settings → Notifications.
from tests.memory.jobs.test_notify import hook, smtp  # noqa: F401 - fixtures
