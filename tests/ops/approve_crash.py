"""One OS process approving a proposal, stopped at a chosen point for the test to kill it
with SIGKILL (run by test_approval_crash).

usage: python approve_crash.py <db name> <proposal id> <point>

<point> is `after-write` (every file written, the transaction not committed),
`after-commit` (committed, before the kind's after_write: a fact's INDEX.md line) or
`mid-batch` (the first file of a batch written, the others not). At that point it prints
`written` and sleeps until it is killed; it never reaches the commit.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")

from django.conf import settings  # noqa: E402

db_name, proposal_id, point = sys.argv[1:4]
settings.DATABASES["default"]["NAME"] = db_name  # the parent test run's database

import django  # noqa: E402

django.setup()

from memory import workspace  # noqa: E402
from proposals import actions  # noqa: E402
from proposals.models import Proposal  # noqa: E402
from tests.ops import batch_kind  # noqa: E402

batch_kind.register()


def stop_here() -> None:
    print("written", flush=True)
    time.sleep(600)  # until SIGKILL
    os._exit(3)


if point == "after-write":
    real_write_texts = actions._write_texts

    def write_then_stop(texts):
        real_write_texts(texts)
        stop_here()

    actions._write_texts = write_then_stop
elif point == "after-commit":
    # Committed (the row approved, the files written), before what follows the write
    # (a fact's INDEX.md line) ran.
    def stop_before_after_write(proposal):
        stop_here()

    actions._after_write = stop_before_after_write
elif point == "mid-batch":
    real_write = workspace.write

    def write_one_then_stop(rel, text):
        real_write(rel, text)
        stop_here()

    workspace.write = write_one_then_stop
else:
    raise SystemExit(f"unknown point {point}")

actions.approve(Proposal.objects.get(pk=int(proposal_id)), by="crashing-process")
print("committed", flush=True)  # never reached
