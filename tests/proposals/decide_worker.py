"""One OS process deciding a proposal from several threads (run by test_concurrency).

usage: python decide_worker.py <db name> <proposal id> <process label> <threads> <go file>

Prints one line per thread: `ok <by>`, `conflict <by>` or `error <by> <what>`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")

from django.conf import settings  # noqa: E402

db_name, proposal_id, label, threads, go_file = sys.argv[1:6]
# Point at the test database of the parent test run before any connection is made.
settings.DATABASES["default"]["NAME"] = db_name

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from memory.errors import Conflict  # noqa: E402
from proposals import actions  # noqa: E402
from proposals.models import Proposal  # noqa: E402
from tests.proposals import counting_kind  # noqa: E402

counting_kind.register()
print("ready", flush=True)
results: list[str] = []


def decide(by: str) -> None:
    try:
        proposal = Proposal.objects.get(pk=int(proposal_id))
        while not os.path.exists(go_file):
            time.sleep(0.005)
        try:
            actions.approve(proposal, by=by)
            results.append(f"ok {by}")
        except Conflict:
            results.append(f"conflict {by}")
    except Exception as exc:  # reported to the test, which fails on any
        results.append(f"error {by} {type(exc).__name__}: {exc}")
    finally:
        connection.close()


workers = [threading.Thread(target=decide, args=(f"{label}-{n}",)) for n in range(int(threads))]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
for line in results:
    print(line, flush=True)
