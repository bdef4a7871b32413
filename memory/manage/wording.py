"""The words the code writes, in the page's language (issue 14).

Statuses and kinds are labels. Run summaries and reasons are sentences the jobs store in
English (the API and the logs read them as they are); the pages show them translated by
matching each against the templates below — marked for translation, so the catalogue test
(tests/pages/test_translations.py) fails when one has no Vietnamese. A sentence that
matches no template is shown as it was written: never a wrong translation.
"""

from __future__ import annotations

import re
from functools import cache

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop as _noop

STATUSES = {
    "running": _("running"),
    "succeeded": _("succeeded"),
    "skipped": _("skipped"),
    "failed": _("failed"),
    "held": _("held"),
    "pending": _("pending"),
    "approved": _("approved"),
    "rejected": _("rejected"),
    "superseded": _("superseded"),
}

KINDS = {
    # runs
    "consolidate": _("consolidation"),
    "fact_review": _("fact review"),
    "compile": _("wiki compile"),
    # proposals
    "user_fact": _("save a fact"),
    "user_fact_forget": _("forget a fact"),
    "agent_memory": _("lines for MEMORY.md"),
    "memory_rewrite": _("MEMORY.md rewrite"),
    "wiki_compile": _("wiki pages"),
}

TRIGGERS = {
    "api": _("API"),
    "page": _("this page"),
    "schedule": _("schedule"),
    "demo": _("demo"),
    "redo": _("redone"),
}

# Sentences of memory/jobs and wiki/compile, with the parts that vary as %(name)s. A
# summary may join several with "; " or " · " (each part is matched on its own).
SENTENCES = [
    # memory/jobs/consolidate.py
    _noop("no model configured"),
    _noop("no daily notes to read"),
    _noop("no note is newer than MEMORY.md"),
    _noop("MEMORY.md is up to date"),
    _noop("nothing to propose"),
    _noop("MEMORY.md changed while the model was rewriting it"),
    _noop("nothing proposed"),
    _noop("proposed a rewrite of MEMORY.md (proposal #%(id)s) for review"),
    _noop("held for review (proposal #%(id)s): %(why)s"),
    _noop("the rewrite could not apply (proposal #%(id)s): %(error)s"),
    _noop(
        "applied at once (proposal #%(id)s): %(added)s line(s) added, %(redated)s date(s) changed"
    ),
    # memory/jobs/autoapply.py (why a rewrite is held)
    _noop("drops a line: %(line)s"),
    _noop("changes a line: %(before)s → %(after)s"),
    _noop("moves a line: %(line)s"),
    _noop(
        "carries the date %(date)s, which is not in MEMORY.md, not the date of a note "
        "read, and not today"
    ),
    # memory/jobs/hygiene.py, nightly.py
    _noop("no facts to review"),
    _noop("%(count)s fact proposal(s) created"),
    _noop("%(count)s fact(s) left out of the review"),
    _noop("no fact proposals"),
    _noop("fact review (run #%(id)s): %(summary)s"),
    _noop("fact review failed"),
    # memory/jobs/runs.py
    _noop("the model answered badly: %(error)s"),
    _noop("the model call failed: %(error)s"),
    _noop("could not be queued: %(error)s"),
    _noop("internal error: %(error)s"),
    _noop("worker lost: not picked up within %(duration)s"),
    _noop("worker lost: no heartbeat for more than %(duration)s"),
    _noop("redone as run #%(id)s"),
    _noop("not redone: another consolidation or compile is running"),
    _noop("could not be redone"),
    _noop("%(count)s minute"),
    _noop("%(count)s minutes"),
    _noop("%(count)s seconds"),
    # wiki/compile.py
    _noop("no daily notes to compile"),
    _noop("no note is newer than the last compile"),
    _noop("no page with sources to propose"),
    _noop("the vault is up to date"),
    _noop("proposed %(count)s page(s) (proposal #%(id)s) for review"),
    _noop("applied %(count)s page(s) at once (proposal #%(id)s)"),
    _noop("the batch could not be proposed: %(error)s"),
    _noop("the batch could not apply (proposal #%(id)s): %(error)s"),
    _noop("%(count)s page(s) dropped without sources"),
    # memory/writes.py (a proposal's reason)
    _noop("%(who)s asked to save the fact %(name)s from %(source)s."),
    _noop("%(who)s asked to update the fact %(name)s from %(source)s."),
    _noop("%(who)s asked to forget the fact %(name)s from %(source)s."),
    _noop("%(source)s asked to add %(count)s line(s) to %(agent)s's MEMORY.md."),
    _noop("%(source)s asked to rewrite %(agent)s's MEMORY.md."),
]

_SEPARATORS = re.compile(r"(; | · )")


@cache
def _patterns() -> list[tuple[re.Pattern[str], str]]:
    compiled = []
    for sentence in SENTENCES:
        pattern = ""
        for piece in re.split(r"(%\(\w+\)s)", sentence):
            name = re.fullmatch(r"%\((\w+)\)s", piece)
            pattern += f"(?P<{name.group(1)}>.+?)" if name else re.escape(piece)
        compiled.append((re.compile(rf"\A{pattern}\Z", re.DOTALL), sentence))
    return compiled


def _localize_part(part: str) -> str:
    for pattern, sentence in _patterns():
        match = pattern.match(part)
        if match:
            values = {key: _localize_part(value) for key, value in match.groupdict().items()}
            return gettext(sentence) % values
    return part


def localize(text: str) -> str:
    """`text` (a summary or reason the code wrote in English) in the active language."""
    if not text:
        return text
    parts = _SEPARATORS.split(str(text))
    return "".join(part if _SEPARATORS.fullmatch(part) else _localize_part(part) for part in parts)
