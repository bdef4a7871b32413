"""Lint and reports (SPEC §10.6).

One pass over the vault reports four kinds of issue:

- `unsourced` — no valid source (`note:YYYY-MM-DD[-suffix]` or `conv:<id>`, or for an
  OpenClaw page the ids in `sourceIds`) left; OpenClaw's source pages need none;
- `dangling` — a `[[link]]` to a page nobody wrote (or to no possible page, `[[???]]`);
- `ambiguous` — a bare `[[name]]` that matches pages in several folders (it opens the
  first in folder order; `[[folder/name]]` names one);
- `review` — a status other than `ok` (or OpenClaw's `active`);
- `stale` — `updated` more than 90 days before today, or missing, or not a date.

Nothing is deleted: a dangling link is work for the next compile. Two Markdown reports
beside the pages, `reports/open-questions.md` and `reports/stale.md`, are regenerated
whole from the vault (never accumulated) and written only when their text changes — and
never over a file of that name another tool wrote (OpenClaw keeps its own reports/).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from typing import NamedTuple

from memory import workspace
from memory.errors import InvalidInput
from memory.text import note_day, parse_note_name
from wiki.vault import REPORTS_DIR, Record, Vault, is_key

ISSUE_KINDS = ("unsourced", "dangling", "ambiguous", "review", "stale")
# Statuses that need no person's eye: this app's `ok`, OpenClaw memory-wiki's `active`.
OK_STATUSES = ("ok", "active")
# Pages that need no sources: OpenClaw's source pages are where sources are kept.
SOURCE_KINDS = ("source", "report")
STALE_AFTER_DAYS = 90
OPEN_QUESTIONS = "open-questions.md"
STALE = "stale.md"
_CONV_RE = re.compile(r"conv:[^\s]{1,200}")


def valid_source(source: object, *, loose: bool = False) -> bool:
    """`note:YYYY-MM-DD[-suffix]` (a real date, the note name rules of §3) or `conv:<id>`
    (no whitespace, at most 200 characters). With `loose`, also the odd but real names of
    other tools' notes (`note:2026-01-05_1030`, `note:2026-03-22-zhiji-E001`): what lint
    accepts on a page, and a compile when that note exists; a write from outside names a
    note by the §3 form."""
    return isinstance(source, str) and _valid_source_text(source, loose)


@functools.lru_cache(maxsize=65536)  # a vault's pages cite the same few hundred notes
def _valid_source_text(source: str, loose: bool) -> bool:
    if source.startswith("note:"):
        if source.endswith(".md"):
            return False
        if loose:
            return note_day(source[5:]) is not None
        try:
            parse_note_name(source[5:])
        except InvalidInput:
            return False
        return True
    return bool(_CONV_RE.fullmatch(source))


@functools.lru_cache(maxsize=4096)
def parse_day(value: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(value) if len(value) == 10 else None
    except ValueError:
        return None


class Issue(NamedTuple):
    kind: str
    slug: str
    title: str
    path: str
    detail: str
    key: str = ""  # the page's key, folder/slug (wiki.vault: a page is its path)

    def as_dict(self) -> dict:
        return self._asdict()


def _is_stale(record: Record, today: dt.date) -> tuple[bool, str]:
    day = parse_day(record.updated)
    if day is None:
        if record.updated:
            return True, f"updated is not a date: {record.updated!r}"
        return True, "no updated date"
    age = (today - day).days
    if age > STALE_AFTER_DAYS:
        return True, f"updated {day.isoformat()}, {age} days ago"
    return False, ""


def _own_issues(record: Record, today: dt.date) -> tuple:
    """(unsourced, review, stale) details of one page, None where it is fine. Depends
    only on the page and today, so it is cached on the record for the day."""
    if record._lint is not None and record._lint[0] == today:
        return record._lint[1]
    sources = record.sources
    # An OpenClaw page names its sources by the ids of its source pages (sourceIds).
    sourced = bool(record.source_ids)
    for source in sources if not sourced else ():
        if _valid_source_text(source, True):  # _text_list made them strings
            sourced = True
            break
    unsourced = None
    if not sourced and record.kind not in SOURCE_KINDS and not record.raw_source:
        unsourced = "no sources" if not sources else "no valid source"
    review = None
    # A raw source (OpenClaw's `openclaw:wiki:raw-source`) opts out of metadata lint.
    if record.status.lower() not in OK_STATUSES and not record.raw_source:
        review = f"status is {record.status!r}" if record.status else "no status"
    # A raw source page (OpenClaw's `openclaw:wiki:raw-source`) opts out of freshness.
    stale, why = (False, "") if record.raw_source else _is_stale(record, today)
    result = (unsourced, review, why if stale else None)
    record._lint = (today, result)
    return result


def page_issues(record: Record, vault: Vault, today: dt.date) -> tuple[Issue, ...]:
    """The issues of one page, by kind: they depend on the page, today and which pages
    the refs it links with name (none, one, several)."""
    unsourced, review, stale = _own_issues(record, today)
    issues: list[Issue] = []
    where = (record.slug, record.title, record.path)
    if unsourced:
        issues.append(Issue("unsourced", *where, unsourced, record.key))
    seen: set[str] = set()
    shared: list[Issue] = []
    for target, ref in record.links:
        if ref is None:
            key, detail = target, f"[[{target}]] names no page"
        elif vault.resolve(ref) is None:
            key, detail = ref, f"[[{target}]] → {ref}: no such page"
        elif not is_key(ref) and len(holders := vault.holders(ref)) > 1:
            if ref not in seen:
                seen.add(ref)
                matches = ", ".join(holders)
                shared.append(
                    Issue(
                        "ambiguous",
                        *where,
                        f"[[{target}]] matches {matches}: it opens {holders[0]}; write "
                        f"[[{holders[0]}]] or [[{holders[1]}]] to name one",
                        record.key,
                    )
                )
            continue
        else:
            continue
        if key not in seen:  # one issue per missing page, however often it is linked
            seen.add(key)
            issues.append(Issue("dangling", *where, detail, record.key))
    issues += shared
    if review:
        issues.append(Issue("review", *where, review, record.key))
    if stale:
        issues.append(Issue("stale", *where, stale, record.key))
    return tuple(issues)


def lint(vault: Vault, *, today: dt.date) -> list[Issue]:
    """Every issue of the vault, by page (folder order, path) then kind.

    Incremental: a snapshot inherits its ancestor's issues per page (`vault.lint_base`)
    and recomputes only the pages changed since (`vault.lint_dirty`, which includes the
    pages linking to a page that appeared or went); a new day, or a vault parsed from
    scratch, lints every page. Computed once per snapshot and day."""
    with vault.lock:
        if vault.lint_cache is not None and vault.lint_cache[0] == today:
            return vault.lint_cache[1]
        pages = vault.pages
        base, dirty = vault.lint_base, vault.lint_dirty
        if base is None or dirty is None or base[0] != today:
            per_page = {key: page_issues(record, vault, today) for key, record in pages.items()}
        else:
            per_page = dict(base[1])
            for key in dirty:
                record = pages.get(key)
                if record is None:
                    per_page.pop(key, None)
                else:
                    per_page[key] = page_issues(record, vault, today)
        vault.lint_base, vault.lint_dirty = (today, per_page), set()
        for key in pages.keys() - per_page.keys():  # never expected; cheap to be sure
            per_page[key] = page_issues(pages[key], vault, today)
        issues = [issue for key in pages for issue in per_page[key]]
        vault.lint_cache = (today, issues)
        return issues


def shared_names(vault: Vault) -> dict:
    """What the doctor says of a vault (memory.doctor.register_vault_check): the pages
    sharing one file name across folders, and every bare link matching several pages —
    `{"same_named": [[key, …], …], "ambiguous_links": [{"page", "link", "matches"}, …]}`."""
    same = [list(keys) for keys in vault.named.values() if len(keys) > 1]
    links = [
        {"page": record.key, "link": target, "matches": list(vault.holders(ref))}
        for record in vault.pages.values()
        for target, ref in record.links
        if ref and not is_key(ref) and len(vault.holders(ref)) > 1
    ]
    return {"same_named": same, "ambiguous_links": links}


# --- reports --------------------------------------------------------------------------


def _line(text: str) -> str:
    return " ".join(text.split())


def render_open_questions(vault: Vault) -> str:
    lines = [
        "# Open questions",
        "",
        "Generated from the wiki pages' `questions` after every compile, edit and report; "
        "edits here are replaced.",
    ]
    count = 0
    for record in vault.pages.values():
        questions = record.questions
        if not questions:
            continue
        if record.questions_md is None:  # cached on the record: it changes with the file
            section = ["", f"## {_line(record.title)} ({record.path[len(vault.base) + 1 :]})", ""]
            record.questions_md = "\n".join(section + [f"- {_line(q)}" for q in questions])
        lines.append(record.questions_md)
        count += len(questions)
    if not count:
        lines += ["", "No open questions."]
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=65536)  # an edit re-renders the report; its lines repeat
def _stale_line(title: str, rel: str, detail: str) -> str:
    return f"- {_line(title)} ({rel}): {detail}"


def render_stale(vault: Vault, issues: list[Issue]) -> str:
    lines = [
        "# Stale pages",
        "",
        f"Pages not updated for more than {STALE_AFTER_DAYS} days, or without a date. "
        "Generated after every compile, edit and report; edits here are replaced.",
        "",
    ]
    stale = [issue for issue in issues if issue.kind == "stale"]
    start = len(vault.base) + 1
    lines += [_stale_line(issue.title, issue.path[start:], issue.detail) for issue in stale]
    if not stale:
        lines.append("No stale pages.")
    return "\n".join(lines) + "\n"


def report_paths(vault: Vault) -> tuple[str, str]:
    return (
        f"{vault.base}/{REPORTS_DIR}/{OPEN_QUESTIONS}",
        f"{vault.base}/{REPORTS_DIR}/{STALE}",
    )


def report_changes(vault: Vault, issues: list[Issue]) -> dict[str, str]:
    """{path: text} of the reports, regenerated whole, whose file does not hold that text
    already (each is written only when its text changed). Reads; writes nothing."""
    questions_path, stale_path = report_paths(vault)
    changes = {}
    for path, text in (
        (questions_path, render_open_questions(vault)),
        (stale_path, render_stale(vault, issues)),
    ):
        current = workspace.read(path)
        if current is not None and not is_own_report(current):
            continue  # another tool's file of that name (OpenClaw's reports/): left as it is
        if current != text:
            changes[path] = text
    return changes


_OWN_REPORT_STARTS = (
    "# Open questions\n\nGenerated from the wiki pages' `questions`",
    "# Stale pages\n\nPages not updated for more than",
)


def is_own_report(text: str) -> bool:
    """Whether a report file is one this app generated (and so may regenerate whole)."""
    return text.startswith(_OWN_REPORT_STARTS)


def report_data(vault: Vault, issues: list[Issue]) -> dict:
    """The lint report as data (`GET …/wiki/report`)."""
    counts = {kind: 0 for kind in ISSUE_KINDS}
    for issue in issues:
        counts[issue.kind] += 1
    questions = [
        {"slug": record.slug, "key": record.key, "title": record.title, "question": question}
        for record in vault.pages.values()
        for question in record.questions
    ]
    questions_path, stale_path = report_paths(vault)
    return {
        "pages": len(vault.pages),
        "counts": counts,
        "issues": [issue.as_dict() for issue in issues],
        "open_questions": questions,
        "reports": {"open_questions": questions_path, "stale": stale_path},
    }
