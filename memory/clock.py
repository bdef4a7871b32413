"""The owner's clock (SPEC §4.2): what "now" and "today" are for notes, in the owner's
time zone — the one recorded with the workspace (memory.binding: MEMORY_TIME_ZONE at the
first start, else the server's), never the environment of whichever process asks."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from memory.binding import time_zone


def local_tz() -> dt.tzinfo:
    """The owner's time zone: the one the workspace records (memory.binding.time_zone)."""
    return ZoneInfo(time_zone())


def zone_name() -> str:
    """The owner's time zone by name (`Asia/Ho_Chi_Minh`), as pages show it; a zone
    without one (the server's fixed offset) as it prints."""
    tz = local_tz()
    return getattr(tz, "key", None) or str(tz)


def local_now(now: dt.datetime | None = None) -> dt.datetime:
    """`now` (default: the current time) in the owner's time zone. A naive `now` is taken
    to be in that zone already."""
    tz = local_tz()
    if now is None:
        return dt.datetime.now(tz)
    if now.tzinfo is None:
        return now.replace(tzinfo=tz)
    return now.astimezone(tz)


def today() -> dt.date:
    """Today in the owner's time zone (SPEC §4.2)."""
    return local_now().date()
