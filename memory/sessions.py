"""The session store `SESSION_ENGINE` names: Django's database sessions, each looked up by
one statement written once (memory.lookups) rather than a query the ORM compiles on every
page."""

from __future__ import annotations

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.utils import timezone

from memory import lookups


class SessionStore(DatabaseSessionStore):
    def _get_session_from_db(self):
        """The session row if it exists and has not expired (Django's own rule), else None
        — and then this store has no key, as Django's has not."""
        found = lookups.get_by(self.model, "session_key", self.session_key)
        if found is None or found.expire_date <= timezone.now():
            self._session_key = None
            return None
        return found
