"""Health you can probe (SPEC §18): the same report for `GET /healthz` (load balancers,
supervisors) and `python manage.py memory_health` (a person, cron; non-zero exit when
something is wrong).

Checks: the web process answers; the database answers and has every migration applied;
the workspace can take writes (looked at, never written: GETs never write); a worker
cluster beat within MEMORY_HEALTH_WORKER_SECONDS (memory.cluster writes the beats); how
many proposals wait for a person (reported, never a failure); and the search index — ready,
or "indexing, N of M files" while search answers from the files, how hand edits are found
and how soon (reported, never a failure: search works either way).
"""

from __future__ import annotations

import os
import socket
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_safe

from memory import workspace
from memory.models import WorkerBeat
from memory.search_keeper import status
from proposals.actions import pending_count

MIN_FREE_BYTES = 1024 * 1024


def worker_max_age() -> float:
    return float(settings.MEMORY_HEALTH_WORKER_SECONDS)


def _database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        executor = MigrationExecutor(connection)
        unapplied = len(executor.migration_plan(executor.loader.graph.leaf_nodes()))
    except Exception as exc:
        return {"ok": False, "vendor": connection.vendor, "error": f"{type(exc).__name__}: {exc}"}
    return {"ok": unapplied == 0, "vendor": connection.vendor, "unapplied_migrations": unapplied}


def _workspace() -> dict[str, Any]:
    state = workspace.health()
    ok = state.writable and state.free_bytes >= MIN_FREE_BYTES
    return {
        "ok": ok,
        "writable": state.writable,
        "read_only_mount": state.read_only_mount,
        "free_bytes": state.free_bytes,
    }


def _worker(detail: bool) -> dict[str, Any]:
    now = timezone.now()
    try:
        beats = list(WorkerBeat.objects.all())
    except Exception as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    ages = [(now - beat.beat_at).total_seconds() for beat in beats]
    fresh = [age for age in ages if age <= worker_max_age()]
    report: dict[str, Any] = {
        "ok": bool(fresh),
        "heartbeat_age_seconds": round(min(ages), 1) if ages else None,
        "clusters_alive": len(fresh),
        "max_age_seconds": worker_max_age(),
    }
    if detail:
        report["clusters"] = [
            {
                "name": beat.name,
                "broker": beat.broker,
                "age_seconds": round(age, 1),
                "restarts": beat.restarts,
                "up_since": beat.started_at.isoformat(),
            }
            for beat, age in zip(beats, ages, strict=True)
        ]
    return report


def _proposals() -> dict[str, Any]:
    try:
        return {"ok": True, "pending": pending_count()}
    except Exception as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def _search() -> dict[str, Any]:
    try:
        return status()
    except Exception as exc:
        return {"ok": True, "error": f"{type(exc).__name__}: {exc}"}


def report(*, detail: bool = False) -> dict[str, Any]:
    """Every check, and `ok` when all pass. `detail` adds who answered and each worker
    cluster by name (for a person; /healthz leaves names out)."""
    checks = {
        "web": {"ok": True},
        "database": _database(),
        "workspace": _workspace(),
        "worker": _worker(detail),
        "proposals": _proposals(),
        "search": _search(),
    }
    if detail:
        checks["web"].update(host=socket.gethostname(), pid=os.getpid())
    return {"ok": all(check["ok"] for check in checks.values()), **checks}


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """`GET /healthz`: 200 with the report when everything is fine, 503 with it when not."""
    body = report()
    return JsonResponse(body, status=200 if body["ok"] else 503)
