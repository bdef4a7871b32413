"""A proposal's diff: computed as data when shown, rendered separately with every piece
escaped and `mark_safe` called once on the result (never "apply then roll back")."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext, gettext_lazy

from proposals.actions import planned_writes, previous_texts
from proposals.models import Proposal

# Row operations: " " unchanged, "-" removed, "+" added, "@" a hunk header.
SAME, REMOVED, ADDED, HUNK = " ", "-", "+", "@"
CONTEXT_LINES = 3


@dataclass
class FileDiff:
    path: str
    change: str  # "create", "delete", "modify", "unchanged"
    rows: list[tuple[str, str]] = field(default_factory=list)


def diff_lines(before: str | None, after: str | None) -> list[tuple[str, str]]:
    """(op, line) rows turning `before` into `after`, with a few lines of context around
    each change. Lines are shown without their line ending."""
    old = (before or "").splitlines()
    new = (after or "").splitlines()
    rows: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        first, last = group[0], group[-1]
        rows.append(
            (
                HUNK,
                f"@@ -{first[1] + 1},{last[2] - first[1]} +{first[3] + 1},{last[4] - first[3]} @@",
            )
        )
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows.extend((SAME, line) for line in old[i1:i2])
                continue
            if tag in ("replace", "delete"):
                rows.extend((REMOVED, line) for line in old[i1:i2])
            if tag in ("replace", "insert"):
                rows.extend((ADDED, line) for line in new[j1:j2])
    return rows


def file_diff(path: str, before: str | None, after: str | None) -> FileDiff:
    if before is None and after is None:
        change = "unchanged"
    elif before is None:
        change = "create"
    elif after is None:
        change = "delete"
    elif before == after:
        change = "unchanged"
    else:
        change = "modify"
    return FileDiff(path, change, diff_lines(before, after))


def proposal_diff(proposal: Proposal) -> list[FileDiff]:
    """One FileDiff per path the proposal changes: what it replaces against what approving
    writes (for a batch, per page), in path order."""
    before = previous_texts(proposal)
    return [
        file_diff(path, before.get(path), text)
        for path, text in sorted(planned_writes(proposal).items())
    ]


def added_lines(proposal: Proposal) -> list[str]:
    """The lines an `agent_memory` proposal would add (its payload, as asked)."""
    lines = (proposal.payload or {}).get("lines") or []
    return [str(line) for line in lines]


_CLASSES = {SAME: "diff-same", REMOVED: "diff-removed", ADDED: "diff-added", HUNK: "diff-hunk"}
_CHANGE_LABELS = {
    "create": gettext_lazy("new file"),
    "delete": gettext_lazy("deleted"),
    "modify": gettext_lazy("changed"),
    "unchanged": gettext_lazy("unchanged"),
}


def _file_diffs_html(diffs: list[FileDiff]) -> str:
    parts: list[str] = []
    for item in diffs:
        parts.append('<div class="proposal-diff">')
        parts.append(
            f'<div class="diff-path"><code>{escape(item.path)}</code> '
            f"({escape(str(_CHANGE_LABELS.get(item.change, item.change)))})</div>"
        )
        parts.append('<pre class="diff">')
        if not item.rows:
            parts.append('<span class="diff-same">(no change)</span>\n')
        for op, line in item.rows:
            marker = "" if op == HUNK else op
            parts.append(f'<span class="{_CLASSES[op]}">{escape(marker + line)}</span>\n')
        parts.append("</pre></div>")
    return "".join(parts)


def _added_lines_html(lines: list[str]) -> str:
    body = "".join(f'<span class="diff-added">{escape("+ " + line)}</span>\n' for line in lines)
    return f'<pre class="diff">{body}</pre>'


def render_file_diffs(diffs: list[FileDiff]) -> SafeString:
    """HTML for the diffs. Every path and line is escaped; removed lines carry class
    `diff-removed` and a leading `-`, added lines `diff-added` and `+`."""
    return mark_safe(_file_diffs_html(diffs))  # every piece escaped in _file_diffs_html


def render_proposal(proposal: Proposal) -> SafeString:
    """The whole review view of a proposal: for agent_memory the lines it would add, then
    (for every kind) the diff of each file against what it replaces."""
    parts: list[str] = []
    if proposal.kind == "agent_memory":
        parts.append(f"<h4>{escape(gettext('Lines it would add'))}</h4>")
        parts.append(_added_lines_html(added_lines(proposal)))
        parts.append(f"<h4>{escape(gettext('MEMORY.md after approving'))}</h4>")
    parts.append(_file_diffs_html(proposal_diff(proposal)))
    # The one mark_safe: every path and line was escaped by the helpers above.
    return mark_safe("".join(parts))


def reason_text(reason: object) -> str:
    """A reason as the one line a card shows. Reasons are strings; older runs stored
    consolidation reasons as {"line", "action", "why"} objects: `action “line”: why`."""
    if isinstance(reason, dict):
        action = reason.get("action", "")
        line = reason.get("line", "")
        why = reason.get("why", "")
        head = " ".join(str(part) for part in (action, f"“{line}”" if line else "") if part)
        return f"{head}: {why}" if head and why else str(head or why or reason)
    return str(reason)
