"""The words the code writes, in the page's language (SPEC §15).

Statuses and kinds are labels. Run summaries and reasons are sentences the jobs store in
English (the API and the logs read them as they are); the pages show them translated by
matching each against the templates below — marked for translation, so the catalogue test
(tests/test_translations.py) fails when one has no Vietnamese. A sentence that
matches no template is shown as it was written: never a wrong translation.
"""

from __future__ import annotations

import re
from functools import cache

from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

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
    "expired": _("expired"),
}

KINDS = {
    # runs
    "consolidate": _("consolidation"),
    "fact_review": _("fact review"),
    "compile": _("wiki compile"),
    # (proposal kinds are proposals.diff.KIND_LABELS: the `proposal_kind` filter)
    # fact types (SPEC §2)
    "profile": _("profile"),
    "preference": _("preference"),
    "feedback": _("feedback"),
    "project": _("project"),
    "reference": _("reference"),
    # wiki page kinds and lint issues (SPEC §10)
    "entity": _("entity"),
    "concept": _("concept"),
    "synthesis": _("synthesis"),
    "unsourced": _("no sources"),
    "dangling": _("link to a missing page"),
    "review": _("to review"),
    "stale": _("stale"),
}

# Who made a version of a file (memory.history.who), before their name.
WHO = {
    "owner": _("owner"),
    "agent": _("agent"),
    "job": _("job"),
    "rule": _("standing rule"),
    "outside": _("edited outside the app"),
    "app": _("the app"),
}

# What a proposed line and an existing one state differently (memory.disagreement).
VALUE_KINDS = {
    "day": _("day"),
    "number": _("number"),
    "name": _("name"),
    "month": _("month"),
}

# The kinds of file the feed of what was remembered tells apart (memory.history.KINDS).
FILE_KINDS = {
    "lines": _("MEMORY.md lines"),
    "memory": _("MEMORY.md rewrite"),
    "note": _("daily note"),
    "fact": _("fact"),
    "user": _("USER.md"),
    "wiki": _("wiki page"),
    "file": _("other file"),
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
    gettext_noop("no model configured"),
    gettext_noop("no daily notes to read"),
    gettext_noop("no note is newer than MEMORY.md"),
    gettext_noop("MEMORY.md is up to date"),
    gettext_noop("nothing to propose"),
    gettext_noop("MEMORY.md changed while the model was rewriting it"),
    gettext_noop("nothing proposed"),
    gettext_noop("proposed a rewrite of MEMORY.md (proposal #%(id)s) for review"),
    gettext_noop("held for review (proposal #%(id)s): %(why)s"),
    gettext_noop("the rewrite could not apply (proposal #%(id)s): %(error)s"),
    gettext_noop(
        "applied at once (proposal #%(id)s): %(added)s line(s) added, %(redated)s date(s) changed"
    ),
    # memory/jobs/autoapply.py (why a rewrite is held)
    gettext_noop("drops a line: %(line)s"),
    gettext_noop("changes a line: %(before)s → %(after)s"),
    gettext_noop("moves a line: %(line)s"),
    gettext_noop(
        "carries the date %(date)s, which is not in MEMORY.md, not the date of a note "
        "read, and not today"
    ),
    # memory/jobs/hygiene.py, nightly.py
    gettext_noop("no facts to review"),
    gettext_noop("%(count)s fact proposal(s) created"),
    gettext_noop("%(count)s fact(s) left out of the review"),
    gettext_noop("no fact proposals"),
    gettext_noop("fact review (run #%(id)s): %(summary)s"),
    gettext_noop("fact review failed"),
    # memory/jobs/runs.py
    gettext_noop("the model answered badly: %(error)s"),
    gettext_noop("the model call failed: %(error)s"),
    gettext_noop("could not be queued: %(error)s"),
    gettext_noop("internal error: %(error)s"),
    gettext_noop("worker lost: not picked up within %(duration)s"),
    gettext_noop("worker lost: no heartbeat for more than %(duration)s"),
    gettext_noop("redone as run #%(id)s"),
    gettext_noop("not redone: another consolidation or compile is running"),
    gettext_noop("could not be redone"),
    gettext_noop("%(count)s minute"),
    gettext_noop("%(count)s minutes"),
    gettext_noop("%(count)s seconds"),
    # wiki/compile.py
    gettext_noop("no daily notes to compile"),
    gettext_noop("no note is newer than the last compile"),
    gettext_noop("no page with sources to propose"),
    gettext_noop("the vault is up to date"),
    gettext_noop("proposed %(count)s page(s) (proposal #%(id)s) for review"),
    gettext_noop("applied %(count)s page(s) at once (proposal #%(id)s)"),
    gettext_noop("the batch could not be proposed: %(error)s"),
    gettext_noop("the batch could not apply (proposal #%(id)s): %(error)s"),
    gettext_noop("%(count)s page(s) dropped without sources"),
    # memory/writes.py (a proposal's reason)
    gettext_noop("%(who)s asked to save the fact %(name)s from %(source)s."),
    gettext_noop("%(who)s asked to update the fact %(name)s from %(source)s."),
    gettext_noop("%(who)s asked to forget the fact %(name)s from %(source)s."),
    gettext_noop("%(source)s asked to add %(count)s line(s) to %(agent)s's MEMORY.md."),
    gettext_noop("%(source)s asked to rewrite %(agent)s's MEMORY.md."),
    # proposals/actions.py (a re-applied proposal's reason)
    gettext_noop("Re-applied from #%(id)s on the current text by %(who)s."),
]

_SEPARATORS = re.compile(r"(; | · )")


NUMBERS = {"count", "id", "added", "redated"}  # placeholders that are always numbers


@cache
def _patterns() -> list[tuple[re.Pattern[str], str]]:
    """Each sentence as a regular expression, most specific (most fixed text) first."""
    compiled = []
    for sentence in SENTENCES:
        pattern = ""
        for piece in re.split(r"(%\(\w+\)s)", sentence):
            name = re.fullmatch(r"%\((\w+)\)s", piece)
            if name:
                value = r"\d+" if name.group(1) in NUMBERS else ".+?"
                pattern += f"(?P<{name.group(1)}>{value})"
            else:
                pattern += re.escape(piece)
        fixed = len(re.sub(r"%\(\w+\)s", "", sentence))
        compiled.append((fixed, re.compile(rf"\A{pattern}\Z", re.DOTALL), sentence))
    compiled.sort(key=lambda item: -item[0])
    return [(pattern, sentence) for _fixed, pattern, sentence in compiled]


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
