"""Queue one django-q2 task from a process of its own (its Q_CLUSTER from the environment,
e.g. the Redis broker through Q_REDIS_URL) and print the task id.

usage: python enqueue.py <db url> <dotted function> [<argument> ...]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ["DATABASE_URL"] = sys.argv[1]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")

import django  # noqa: E402

django.setup()

from django_q.tasks import async_task  # noqa: E402

print(async_task(sys.argv[2], *[float(arg) for arg in sys.argv[3:]]), flush=True)
