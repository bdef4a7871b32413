"""One OS process of the app on a deployment's database and workspace (DATABASE_URL,
MY_AGENT_HOME), for test_restore_crash: `setup` writes versions of MEMORY.md, `restore`
restores a version and stops at a chosen point for the test to SIGKILL it, `check` says
what the file and its history hold.

usage: python restore_crash.py setup
       python restore_crash.py restore <version id> <point>
       python restore_crash.py check

<point>: `intent` (the intent committed, nothing written), `temp` (the temp file written,
not renamed), `replaced` (the file replaced, its version not recorded), `recorded` (the
version recorded, the intent not removed), `refresh` (all done but the refresh). There it
prints `stopped` and sleeps until killed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")

import django  # noqa: E402

django.setup()

from memory import history, workspace  # noqa: E402
from memory.agents import default_agent  # noqa: E402
from memory.models import RestoreIntent  # noqa: E402

PATH = "MEMORY.md"


def stop_here() -> None:
    print("stopped", flush=True)
    time.sleep(600)  # until SIGKILL
    os._exit(3)


def setup() -> None:
    default_agent()
    for n in range(1, 4):
        workspace.write(PATH, f"# MEMORY.md\n\n- version {n}\n" + "- a line\n" * n)
    print(
        json.dumps(
            [[v.pk, history.text_of(history.content(v))] for v in history.versions(path=PATH)]
        )
    )


def patch(point: str) -> None:
    import memory.workspace as face
    from memory.workspace import writing

    if point == "intent":
        face.write_raw = lambda rel, data: stop_here()
    elif point == "temp":
        real_replace = os.replace

        def replace_then_maybe_stop(src, dst, *args, **kwargs):
            if str(dst).endswith(PATH):
                stop_here()
            return real_replace(src, dst, *args, **kwargs)

        os.replace = replace_then_maybe_stop
    elif point == "replaced":
        writing.notify = lambda *args, **kwargs: stop_here()
    elif point == "recorded":
        history.latest = lambda path: stop_here()
    elif point == "refresh":
        history._refresh = lambda path: stop_here()
    else:
        raise SystemExit(f"unknown point {point}")


def restore(version_id: str, point: str) -> None:
    version = history.get_version_or_404(int(version_id))
    base = history.current_hash(PATH)
    patch(point)
    history.restore(version, base_hash=base, by="crashing-process")
    print("restored", flush=True)  # never reached


def check() -> None:
    newest = history.latest(PATH)
    print(
        json.dumps(
            {
                "file": workspace.read(PATH),
                "latest": history.text_of(history.content(newest)),
                "op": newest.op,
                "note": newest.note,
                "intents": RestoreIntent.objects.count(),
            }
        )
    )


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"setup": setup, "restore": restore, "check": check}[command](*args)
