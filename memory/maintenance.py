"""What the worker's supervisor does every few minutes to undo what killed processes left
(SPEC §18): the temp files of writes killed before their rename, and an INDEX.md that a
kill left behind its facts. Start-up (memory_init) does the first round."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from memory import facts, workspace
from memory.errors import DomainError

log = logging.getLogger(__name__)

# How often the supervisor runs `upkeep` (memory.jobs.cluster).
UPKEEP_SECONDS = 300.0


@dataclass(frozen=True)
class Upkept:
    temp_files_removed: list[str]
    index_healed: bool


def upkeep() -> Upkept:
    """Remove the temp files of killed writes (older than
    workspace.STALE_TEMP_SECONDS) and write INDEX.md when the facts changed since it was
    written. A workspace that cannot take writes is left as it is (logged)."""
    removed = workspace.remove_stale_temp_files()
    try:
        healed = facts.heal_index()
    except DomainError as exc:  # a read-only or full workspace: nothing to heal then
        log.warning("could not bring INDEX.md up to date: %s", exc.message)
        healed = False
    if removed:
        log.info("removed %d temp file(s) left by killed writes", len(removed))
    return Upkept(removed, healed)
