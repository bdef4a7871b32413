"""Who makes the changes done now: the actor, source and interface a file's history
records for every change (SPEC §7).

Set with `attributed(...)` by the operations and interfaces (a context variable, so it
follows the request, the task or the thread that writes); read with
`current_attribution()` by the workspace when it tells its change hooks of a change.
Plain values only: nothing here touches a file or imports a model.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Attribution:
    """Who makes the changes done in the current context, as plain values.

    `actor`: "owner" (or the owner's username), "agent:<id>", "job:<id>", "auto:<agent>";
    `source`: the presence source of the write (SPEC §5: web, http, telegram, job:<id>…);
    `via`: the interface (api, pages, admin, tool, task, command); `proposal` / `run`:
    the ids of the proposal or run behind it; `note`: a short why ("undo of proposal 4",
    "restore of version 12"); `restored_from`: the version id a restore brings back;
    `reverts`: the version id a revert undoes (the feed's revert, memory.history.revert).
    """

    actor: str = ""
    source: str = ""
    via: str = ""
    proposal: int | None = None
    run: int | None = None
    note: str = ""
    restored_from: int | None = None
    reverts: int | None = None
    extra: dict = field(default_factory=dict)


_FIELDS = tuple(name for name in Attribution.__dataclass_fields__ if name != "extra")
# Layers, outermost first: dicts of fields, or callables answering one (a request's user is
# known only after authentication, so the HTTP layer registers a resolver).
_attribution: contextvars.ContextVar[tuple] = contextvars.ContextVar("attribution", default=())


@contextlib.contextmanager
def attributed(resolve: Callable[[], dict] | None = None, **fields) -> Iterator[None]:
    """Attribute the changes made inside the block. Inner blocks override the fields they
    set (empty values are left out); `resolve` is called when a change happens and answers
    fields too (overridden by explicit ones of the same and inner layers). TypeError for a
    field Attribution does not have."""
    unknown = set(fields) - set(_FIELDS)
    if unknown:
        raise TypeError(f"Unknown attribution fields: {sorted(unknown)}")
    layer: tuple = ((resolve,) if resolve is not None else ()) + (
        {key: value for key, value in fields.items() if value not in (None, "")},
    )
    token = _attribution.set(_attribution.get() + layer)
    try:
        yield
    finally:
        _attribution.reset(token)


def current_attribution() -> Attribution:
    """The attribution of a change made now (resolvers called, errors in them ignored)."""
    merged: dict = {}
    for layer in _attribution.get():
        if callable(layer):
            try:
                found = layer() or {}
            except Exception:  # a resolver must never stop a write
                logger.exception("attribution resolver failed")
                found = {}
            merged.update({k: v for k, v in found.items() if k in _FIELDS and v not in (None, "")})
        else:
            merged.update(layer)
    return replace(Attribution(), **merged)
