"""A proposal's diff: computed as data when shown, rendered separately with every piece
escaped and `mark_safe` called once on the result (never "apply then roll back").

- **Bounded.** Lines are compared with memory.textdiff (diff-match-patch with a deadline),
  so 25,000 identical lines and one new one cost a prefix comparison, and no diff runs
  past its deadline. A diff changing more than MAX_CHANGED_LINES lines is not drawn row by
  row: it says "diff too large — N lines changed".
- **Readable.** Inside a changed line the words that changed are marked; a file kind may
  register a *presenter* (`register_presenter`) that shows its text as fields and a body
  (a fact: "description: old → new") or leaves a generated part out (the wiki's machine
  block); a consolidation's reasons stand beside the lines they name; kinds read in words.
- **Choosable.** Each change of a rewrite is a hunk `(i1, i2, j1, j2)` (old lines i1:i2
  become new lines j1:j2) that the review page offers to keep or refuse one by one; each
  page of a batch can be chosen (proposals.actions.approve applies the choice).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from memory import textdiff
from proposals.actions import applied_writes, planned_writes, previous_texts
from proposals.models import Proposal

# Row operations: " " unchanged, "-" removed, "+" added, "@" a hunk header, "?" the start
# of one change (a choosable hunk).
SAME, REMOVED, ADDED, HUNK, CHANGE = " ", "-", "+", "@", "?"
CONTEXT_LINES = 3
MAX_CHANGED_LINES = 5_000

KIND_LABELS = {
    "user_fact": gettext_lazy("Save a shared fact"),
    "user_fact_forget": gettext_lazy("Forget a shared fact"),
    "agent_memory": gettext_lazy("Add lines to MEMORY.md"),
    "memory_rewrite": gettext_lazy("Rewrite of MEMORY.md (consolidation)"),
    "fact_review": gettext_lazy("Fact review: forget or update a fact"),
    "wiki_compile": gettext_lazy("Wiki pages compiled from the notes"),
}


def kind_label(kind: str) -> str:
    """A proposal kind in words ("Add lines to MEMORY.md"), the code itself when unknown."""
    return str(KIND_LABELS.get(kind, kind))


# --- presenters -------------------------------------------------------------------------


@dataclass(frozen=True)
class Presented:
    """A file's text as a person reviews it: named fields, and the body that is diffed line
    by line; `note` says what was left out."""

    fields: dict[str, str]
    body: str
    note: str = ""


@dataclass(frozen=True)
class Presenter:
    applies: Callable[[str], bool]
    present: Callable[[str], Presented]
    # The whole file text from an edited body (and the file's planned text): how an edit
    # of what the page shows becomes what is written. None: the body is the whole text.
    join: Callable[[str, str], str] | None = None


_PRESENTERS: dict[str, Presenter] = {}


def register_presenter(name: str, presenter: Presenter) -> None:
    """Show files for which `presenter.applies(path)` through it (apps register theirs
    from ready(): memory the facts, the wiki its pages)."""
    _PRESENTERS[name] = presenter


def presenter_for(path: str) -> Presenter | None:
    for presenter in _PRESENTERS.values():
        if presenter.applies(path):
            return presenter
    return None


def editable_text(path: str, text: str | None) -> str:
    """What the review page lets the owner edit for one file (a wiki page without its
    generated block, a fact as its file)."""
    presenter = presenter_for(path)
    if presenter is None or presenter.join is None or text is None:
        return text or ""
    return presenter.present(text).body


def joined_text(path: str, edited: str, planned: str | None) -> str:
    """The file text to write from an edit of `editable_text`."""
    presenter = presenter_for(path)
    edited = edited.replace("\r\n", "\n").replace("\r", "\n")
    if presenter is None or presenter.join is None:
        return edited
    return presenter.join(edited, planned or "")


# --- data -----------------------------------------------------------------------------


@dataclass
class Row:
    op: str
    text: str
    segments: list[tuple[bool, str]] | None = None  # word runs (changed?, text)
    reasons: list[str] = field(default_factory=list)
    hunk: tuple[int, int, int, int] | None = None  # on CHANGE rows


@dataclass
class FieldChange:
    name: str
    old: str | None
    new: str | None


@dataclass
class FileDiff:
    path: str
    change: str  # "create", "delete", "modify", "unchanged"
    rows: list[Row] = field(default_factory=list)
    removed: int = 0
    added: int = 0
    too_large: bool = False
    fields: list[FieldChange] = field(default_factory=list)
    note: str = ""
    hunks: list[tuple[int, int, int, int]] = field(default_factory=list)
    stale: bool = False  # a batch page whose file changed since it was proposed


def _change(before: str | None, after: str | None) -> str:
    if before is None and after is None:
        return "unchanged"
    if before is None:
        return "create"
    if after is None:
        return "delete"
    return "unchanged" if before == after else "modify"


def _row_text(line: str) -> str:
    return line[:-1] if line.endswith("\n") else line


def diff_rows(
    before: str | None, after: str | None, *, context: int = CONTEXT_LINES
) -> tuple[list[Row], int, int, list[tuple[int, int, int, int]], bool]:
    """(rows, lines removed, lines added, change hunks, too large) turning `before` into
    `after`, with `context` lines around each change; changed line pairs carry word runs."""
    old, new = textdiff.lines_of(before), textdiff.lines_of(after)
    opcodes = textdiff.line_opcodes(old, new)
    removed, added = textdiff.changed_line_count(opcodes)
    hunks = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in opcodes if tag != "equal"]
    if removed + added > MAX_CHANGED_LINES:
        return [], removed, added, hunks, True
    rows: list[Row] = []
    for group in textdiff.grouped(opcodes, context):
        first, last = group[0], group[-1]
        rows.append(
            Row(
                HUNK,
                f"@@ -{first[1] + 1},{last[2] - first[1]} +{first[3] + 1},{last[4] - first[3]} @@",
            )
        )
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows.extend(Row(SAME, _row_text(line)) for line in old[i1:i2])
                continue
            rows.append(Row(CHANGE, "", hunk=(i1, i2, j1, j2)))
            gone = [_row_text(line) for line in old[i1:i2]]
            come = [_row_text(line) for line in new[j1:j2]]
            pairs = min(len(gone), len(come)) if tag == "replace" else 0
            left_runs, right_runs = [], []
            for a, b in zip(gone[:pairs], come[:pairs], strict=True):
                left, right = textdiff.word_segments(a, b)
                left_runs.append(left)
                right_runs.append(right)
            rows.extend(
                Row(REMOVED, line, left_runs[n] if n < pairs else None)
                for n, line in enumerate(gone)
            )
            rows.extend(
                Row(ADDED, line, right_runs[n] if n < pairs else None)
                for n, line in enumerate(come)
            )
    return rows, removed, added, hunks, False


def diff_lines(before: str | None, after: str | None) -> list[tuple[str, str]]:
    """(op, line) rows turning `before` into `after` (the rows of diff_rows as pairs,
    without the change markers)."""
    rows = diff_rows(before, after)[0]
    return [(row.op, row.text) for row in rows if row.op != CHANGE]


def file_diff(path: str, before: str | None, after: str | None) -> FileDiff:
    """The diff of one file, through its presenter when it has one (fields shown as
    changes, the body diffed, generated parts left out)."""
    change = _change(before, after)
    presenter = presenter_for(path)
    fields: list[FieldChange] = []
    note = ""
    if presenter is not None:
        old_view = presenter.present(before) if before is not None else None
        new_view = presenter.present(after) if after is not None else None
        names = list(
            dict.fromkeys(
                [*(old_view.fields if old_view else {}), *(new_view.fields if new_view else {})]
            )
        )
        for name in names:
            old_value = old_view.fields.get(name) if old_view else None
            new_value = new_view.fields.get(name) if new_view else None
            if old_value != new_value:
                fields.append(FieldChange(name, old_value, new_value))
        note = (new_view or old_view).note if (new_view or old_view) else ""
        before = old_view.body if old_view else None
        after = new_view.body if new_view else None
    rows, removed, added, hunks, too_large = diff_rows(before, after)
    return FileDiff(path, change, rows, removed, added, too_large, fields, note, hunks)


def proposal_diff(proposal: Proposal, *, applied: bool = False) -> list[FileDiff]:
    """One FileDiff per path the proposal changes: what it replaces against what approving
    writes (`applied`: against what was written, the owner's edits and choices included),
    in path order."""
    before = previous_texts(proposal)
    after = applied_writes(proposal) if applied else planned_writes(proposal)
    return [file_diff(path, before.get(path), text) for path, text in sorted(after.items())]


def hunks_of(proposal: Proposal) -> dict[str, list[tuple[int, int, int, int]]]:
    """The choosable hunks of every file, on the raw texts (what approve's `hunks` takes)."""
    before = previous_texts(proposal)
    return {
        path: textdiff.change_hunks(before.get(path), text)
        for path, text in sorted(planned_writes(proposal).items())
        if text is not None
    }


def added_lines(proposal: Proposal) -> list[str]:
    """The lines an `agent_memory` proposal would add (its payload, as asked)."""
    lines = (proposal.payload or {}).get("lines") or []
    return [str(line) for line in lines]


# --- reasons beside their lines ----------------------------------------------------------


def _key(text: str) -> str:
    text = text.strip()
    if text.startswith(("- ", "* ")):
        text = text[2:]
    return " ".join(text.split()).casefold()


def attach_reasons(diffs: list[FileDiff], items: list[dict]) -> list[str]:
    """Put each structured reason ({"line", "action", "why"}) beside the first removed or
    added row whose text is its line (kept lines beside the unchanged row). Returns the
    reasons that name no line of the diff, as text."""
    left: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            left.append(str(item))
            continue
        line = _key(str(item.get("line", "")))
        label = f"{item.get('action', '')}: {item.get('why', '')}".strip(": ")
        placed = False
        if line:
            for diff in diffs:
                for row in diff.rows:
                    if row.op in (REMOVED, ADDED, SAME) and _key(row.text) == line:
                        row.reasons.append(label)
                        placed = True
                        break
                if placed:
                    break
        if not placed:
            left.append(reason_text(item))
    return left


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


# --- rendering ---------------------------------------------------------------------------

_CLASSES = {
    SAME: "diff-same",
    REMOVED: "diff-removed",
    ADDED: "diff-added",
    HUNK: "diff-hunk",
    CHANGE: "diff-change",
}


def _change_label(change: str) -> str:
    return {
        "create": _("new file"),
        "delete": _("deleted"),
        "modify": _("changed"),
        "unchanged": _("unchanged"),
    }.get(change, change)


def _line_html(row: Row) -> str:
    marker = "" if row.op == HUNK else escape(row.op)
    if row.segments is None:
        body = escape(row.text)
    else:
        body = "".join(
            f"<mark>{escape(text)}</mark>" if changed else escape(text)
            for changed, text in row.segments
        )
    reasons = "".join(
        f'<span class="diff-reason">{escape(reason)}</span>' for reason in row.reasons
    )
    return f'<span class="{_CLASSES[row.op]}">{marker}{body}{reasons}</span>\n'


def _file_diffs_html(
    diffs: list[FileDiff], *, choose_pages: bool = False, choose_hunks: bool = False
) -> str:
    parts: list[str] = []
    for item in diffs:
        parts.append(f'<div class="proposal-diff" data-path="{escape(item.path)}">')
        page_box = ""
        if choose_pages:
            page_box = (
                f'<label class="choose"><input type="checkbox" name="page" '
                f'value="{escape(item.path)}" checked> {escape(_("apply this page"))}</label> '
            )
        stale = (
            f' <span class="label stale-label">{escape(_("changed since"))}</span>'
            if item.stale
            else ""
        )
        counts = (
            f' <span class="muted diff-counts">−{item.removed} +{item.added}</span>'
            if item.removed or item.added
            else ""
        )
        parts.append(
            f'<div class="diff-path">{page_box}<code>{escape(item.path)}</code> '
            f"({escape(_change_label(item.change))}){counts}{stale}</div>"
        )
        if item.fields:
            parts.append('<dl class="field-changes">')
            for change in item.fields:
                old = "—" if change.old is None else change.old
                new = "—" if change.new is None else change.new
                parts.append(
                    f"<dt>{escape(change.name)}</dt><dd><del>{escape(old)}</del> → "
                    f"<ins>{escape(new)}</ins></dd>"
                )
            parts.append("</dl>")
        if item.note:
            parts.append(f'<p class="muted diff-note">{escape(item.note)}</p>')
        if item.too_large:
            parts.append(
                '<p class="diff-too-large">'
                + escape(
                    _("Diff too large — %(count)s lines changed (−%(removed)s +%(added)s).")
                    % {
                        "count": item.removed + item.added,
                        "removed": item.removed,
                        "added": item.added,
                    }
                )
                + "</p></div>"
            )
            continue
        parts.append('<pre class="diff">')
        if not item.rows:
            parts.append(f'<span class="diff-same">{escape(_("(no change)"))}</span>\n')
        number = 0
        for row in item.rows:
            if row.op == CHANGE:
                number += 1
                if choose_hunks and row.hunk is not None:
                    value = f"{item.path}|{':'.join(str(n) for n in row.hunk)}"
                    parts.append(
                        f'<span class="diff-change"><label><input type="checkbox" name="hunk" '
                        f'value="{escape(value)}" checked> '
                        f"{escape(_('keep change %(n)s') % {'n': number})}</label></span>\n"
                    )
                continue
            parts.append(_line_html(row))
        parts.append("</pre></div>")
    return "".join(parts)


def render_file_diffs(
    diffs: list[FileDiff], *, choose_pages: bool = False, choose_hunks: bool = False
) -> SafeString:
    """HTML for the diffs. Every path, field and line is escaped; removed lines carry class
    `diff-removed` and a leading `-`, added lines `diff-added` and `+`, changed words
    `<mark>`. With choose_pages / choose_hunks, checkboxes named `page` / `hunk` for a
    form around it (values: the path; `path|i1:i2:j1:j2`)."""
    html = _file_diffs_html(diffs, choose_pages=choose_pages, choose_hunks=choose_hunks)
    return mark_safe(html)  # every piece escaped in _file_diffs_html


def render_proposal(proposal: Proposal) -> SafeString:
    """The whole review view of a proposal: for agent_memory the lines it would add, then
    (for every kind) the diff of each file against what it replaces."""
    parts: list[str] = []
    if proposal.kind == "agent_memory":
        parts.append(f"<h4>{escape(_('Lines it would add'))}</h4>")
        body = "".join(
            f'<span class="diff-added">{escape("+ " + line)}</span>\n'
            for line in added_lines(proposal)
        )
        parts.append(f'<pre class="diff">{body}</pre>')
        parts.append(f"<h4>{escape(_('MEMORY.md after approving'))}</h4>")
    diffs = proposal_diff(proposal)
    attach_reasons(diffs, (proposal.payload or {}).get("reason_items") or [])
    parts.append(_file_diffs_html(diffs))
    # The one mark_safe: every path and line was escaped by the helpers above.
    return mark_safe("".join(parts))
