"""One OS process trying to start a consolidation run (run by test_trigger).

usage: python start_worker.py <db name> <agent id> <go file>

Waits for the go file, calls memory.jobs.runs.start_run, prints `started <run id>` or
`conflict <message>` (or `error …`). The run is left running, as a busy worker would.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")

from django.conf import settings  # noqa: E402

db_name, agent_id, go_file = sys.argv[1:4]
# Point at the test database of the parent test run before any connection is made.
settings.DATABASES["default"]["NAME"] = db_name

import django  # noqa: E402

django.setup()

from memory.errors import Conflict  # noqa: E402
from memory.jobs import runs  # noqa: E402
from memory.models import Agent, Run  # noqa: E402

agent = Agent.objects.get(pk=agent_id)
print("ready", flush=True)
while not os.path.exists(go_file):
    time.sleep(0.005)
try:
    run = runs.start_run(agent, Run.Kind.CONSOLIDATE, trigger=f"process-{os.getpid()}")
    print(f"started {run.pk}", flush=True)
except Conflict as exc:
    print(f"conflict {exc.message}", flush=True)
except Exception as exc:  # reported to the test, which fails on any
    print(f"error {type(exc).__name__}: {exc}", flush=True)
