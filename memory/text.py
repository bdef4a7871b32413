"""Pure text rules shared by search, facts, notes and the wiki. No IO here."""

from __future__ import annotations

import datetime as dt
import functools
import re
import unicodedata

import frontmatter
import yaml

from memory.errors import InvalidInput

# --- folding and words (SPEC §6.1) -----------------------------------------------------


def _mark_class(low: int, high: int) -> str:
    """A regex character class of every code point in [low, high) whose canonical
    combining class is not 0 (what `unicodedata.combining` calls a combining mark)."""
    ranges: list[tuple[int, int]] = []
    for code in range(low, high):
        if unicodedata.combining(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in ranges
    )


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


@functools.cache
def _mark_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    # Dropping marks with one regex pass runs in C; the per-character Python loop it
    # replaces took ~1.5 s on 10 MB of notes. The class is split: sre tests a BMP-only
    # class with one table lookup per character, while a class with astral ranges walks
    # them all. Built on first use (~50 ms), not at import.
    return (
        re.compile(f"[{_mark_class(0, 0x10000)}]+"),
        re.compile(f"[{_mark_class(0x10000, 0x110000)}]+"),
    )


def fold(text: str) -> str:
    """NFD, drop combining marks, đ→d / Đ→D, casefold: `Sách ĐANG đọc` → `sach dang doc`.

    Length is not preserved (NFD splits characters): where offsets into the original
    text matter, fold it a character at a time (memory.manage.rendering.matched_spans).
    Folding works character by character (marks are dropped, so their reordering by NFD
    does not matter), so a newline stays a newline and the folded text has the same lines
    as the original.
    """
    if text.isascii():
        return text.lower()  # ASCII: NFD changes nothing and casefold is lower
    bmp_marks, astral_marks = _mark_patterns()
    stripped = bmp_marks.sub("", unicodedata.normalize("NFD", text))
    if _ASTRAL.search(stripped):
        stripped = astral_marks.sub("", stripped)
    return stripped.replace("đ", "d").replace("Đ", "D").casefold()


_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)


def words(text: str) -> list[str]:
    """The folded words of a query: runs of letters and digits, in order, without repeats."""
    seen: dict[str, None] = {}
    for word in _WORD_RE.findall(fold(text)):
        seen.setdefault(word, None)
    return list(seen)


SHORT_WORD = 3  # a word this long or shorter only counts when found whole

# Scripts written without spaces between words: Han (with its marks of iteration and
# the CJK radicals), Hiragana, Katakana (also halfwidth) and Hangul (syllables, and the
# conjoining jamo that folding's NFD turns them into). A run of these is a phrase, not a
# word, so the whole-word rule for short words cannot apply to it (SPEC §6.1 exception).
_SPACELESS = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c"
    "\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7ff\uf900-\ufaff\uff66-\uffdc\U00020000-\U0003ffff"
)
_SPACELESS_WORD = re.compile(f"[{_SPACELESS}]+")
SPACELESS_CHAR = re.compile(f"[{_SPACELESS}]")


def is_spaceless(word: str) -> bool:
    """Whether a (folded) word is written only in Han, Kana or Hangul: such a run matches
    anywhere inside the text at any length (`心跳`, `大同`)."""
    return _SPACELESS_WORD.fullmatch(word) is not None


def is_short(word: str) -> bool:
    """Whether a folded query word counts only when found whole (SPEC §6.1): three
    characters or fewer, unless it is written in a script without spaces."""
    return len(word) <= SHORT_WORD and not is_spaceless(word)


def word_pattern(word: str) -> re.Pattern[str]:
    """How one folded query word matches folded text (SPEC §6.1): a word of four or more
    characters anywhere; a shorter one only as a whole word (not inside letters/digits),
    except a run of Han, Kana or Hangul, which matches anywhere at any length."""
    escaped = re.escape(word)
    if is_short(word):
        # The literal comes first so sre can scan for it quickly; the lookbehind after it
        # then asserts that the character before the word is not a letter or digit.
        return re.compile(rf"{escaped}(?<![^\W_]{escaped})(?![^\W_])")
    return re.compile(escaped)


# --- entries: blocks of lines (SPEC §6.1) ---------------------------------------------

MAX_BLOCK_LINES = 5  # a paragraph longer than this is several entries
MAX_BLOCK_CHARS = 1000  # nor does a block grow past this many characters
_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_ITEM = re.compile(r"[ \t]*(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]|$)|[ \t]*\|")
_FRONTMATTER_END = ("---", "...")


def is_heading(line: str) -> bool:
    """An ATX heading line (`# …` to `###### …`)."""
    return _HEADING.match(line) is not None


def _frontmatter_end(lines: list[str]) -> int:
    """The index of the line closing a YAML frontmatter that opens the file, else -1."""
    if not lines or lines[0].rstrip() != "---":
        return -1
    for index in range(1, len(lines)):
        if lines[index].rstrip() in _FRONTMATTER_END:
            return index
    return -1


def page_title(text: str) -> str:
    """The `title` of a page's frontmatter ("" when it has none): the heading of what the
    page says under no heading of its own (SPEC §6.1)."""
    if not text.startswith("---"):
        return ""
    meta, _body = parse_frontmatter(text)
    title = meta.get("title")
    return fold_single_line(str(title)) if isinstance(title, str | int | float) else ""


def blocks(lines: list[str], *, start_at: int = 0) -> list[tuple[int, int, int]]:
    """The entries of a file's lines, as (first line, last line, heading line) indexes,
    0-based and in order; the heading is the nearest heading line above the entry, -1
    when there is none. Lines holding no letter or digit make no entry.

    An entry is a block (SPEC §6.1): a paragraph, or a list item with its continuation
    lines, up to MAX_BLOCK_LINES lines and MAX_BLOCK_CHARS characters. A blank line, a
    heading, a new list item or table row starts a new entry; a heading is an entry of one
    line; a frontmatter is no entry (it is not searchable text: a page's `title` counts as
    the heading of the page instead, page_title). So a daily note's `- HH:MM …` lines stay
    one entry each, while a bullet continued on the next line, or a short paragraph, is
    one.

    `start_at` (the first line of an entry found before, past any frontmatter) gives the
    entries from that line on, as the whole file's would be there: what comes before an
    entry never changes where the later ones start, but for the heading above, found here.
    """
    found: list[tuple[int, int, int]] = []
    has_word = _WORD_RE.search
    heading = -1
    start = last = -1  # the open block's first line and its last line with a word
    size = 0
    frontmatter = _frontmatter_end(lines)
    if start_at:
        heading = next(
            (i for i in range(start_at - 1, frontmatter, -1) if is_heading(lines[i])), -1
        )
    for index in range(max(start_at, frontmatter + 1), len(lines)):
        line = lines[index]
        single = is_heading(line)
        if single or not line.strip():
            if last >= 0:
                found.append((start, last, heading))
            start = last = -1
            if single and has_word(line):
                found.append((index, index, heading))
            if single:
                heading = index
            continue
        if (
            start < 0
            or _ITEM.match(line)
            or index - start >= MAX_BLOCK_LINES
            or size + len(line) > MAX_BLOCK_CHARS
        ):
            if last >= 0:
                found.append((start, last, heading))
            start, last, size = index, -1, 0
        size += len(line)
        if has_word(line):
            last = index
    if last >= 0:
        found.append((start, last, heading))
    return found


# --- slugs (SPEC §10.2) and names ------------------------------------------------------


def _is_slug_char(ch: str) -> bool:
    # Letters and digits of every script, plus the spacing marks that survive folding
    # (Devanagari vowel signs and the like have combining class 0): they are part of a
    # word there, and splitting at them would cut `हिन्दी` into pieces.
    return ch.isalnum() or unicodedata.category(ch).startswith("M")


def slugify(title: str) -> str:
    """Fold marks as search does, lowercase, keep letters and digits of every script, and
    turn every other run into one `-`. `Hạn Eco` → `han-eco`, `東京` → `東京`.

    The result is NFKC-stable (the workspace refuses other file names): compatibility
    forms are normalised first (`Ｔｏｋｙｏ` → `tokyo`) and what folding decomposed is
    recomposed after (Hangul `서울` stays `서울`, not loose jamo). Idempotent:
    slugify(slugify(t)) == slugify(t).

    Raises InvalidInput when no letter or digit is left.
    """
    folded = unicodedata.normalize("NFKC", fold(unicodedata.normalize("NFKC", title or "")))
    parts: list[str] = []
    run: list[str] = []
    for ch in folded:
        if _is_slug_char(ch):
            run.append(ch)
        elif run:
            parts.append("".join(run))
            run = []
    if run:
        parts.append("".join(run))
    # A run of marks alone (no letter or digit) is punctuation-like: it separates.
    slug = "-".join(part for part in parts if any(ch.isalnum() for ch in part))
    if not slug:
        raise InvalidInput(f"A title needs at least one letter or digit: {title!r}.")
    return slug


FACT_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
FACT_TYPES = ("profile", "preference", "feedback", "project", "reference")


def validate_fact_name(name: str) -> str:
    """A fact name is lowercase ASCII letters, digits and single hyphens, 1–64 chars.
    Anything else is refused, never sanitised into another name (SPEC §2)."""
    if not isinstance(name, str) or len(name) > 64 or not FACT_NAME_RE.fullmatch(name):
        raise InvalidInput(
            f"Invalid fact name {name!r}: use 1–64 lowercase letters, digits and single hyphens."
        )
    return name


def validate_fact_type(kind: str) -> str:
    if kind not in FACT_TYPES:
        raise InvalidInput(f"Unknown fact type {kind!r}: one of {', '.join(FACT_TYPES)}.")
    return kind


NOTE_NAME_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})(-[a-z0-9-]+)?", re.ASCII)


def parse_note_name(name: str) -> tuple[dt.date, str]:
    """Validate a daily-note name (with or without `.md`) and return (day, suffix).

    `2026-09-19` and `2026-09-19-1030` are notes of 19 September. ASCII digits only, no
    trailing newline, a real date, suffix of `[a-z0-9-]`. Anything else is InvalidInput.
    """
    if not isinstance(name, str):
        raise InvalidInput("A note name must be text.")
    stem = name[:-3] if name.endswith(".md") else name
    match = NOTE_NAME_RE.fullmatch(stem)
    if not match:
        raise InvalidInput(
            f"Invalid note name {name!r}: expected YYYY-MM-DD with an optional "
            "suffix of lowercase letters, digits and hyphens."
        )
    year, month, day, suffix = match.groups()
    try:
        date = dt.date(int(year), int(month), int(day))
    except ValueError:
        raise InvalidInput(f"Invalid note name {name!r}: not a real date.") from None
    return date, (suffix or "")[1:]


# --- text that can be stored ------------------------------------------------------------


INT64_MAX = 2**63 - 1  # the largest integer a database column (or an OFFSET) holds


def refuse_unstorable(value: object, where: str = "text", *, numbers: bool = True) -> None:
    """InvalidInput (422) when anything in `value` (a str, an int, or lists and dicts of
    them, keys included) cannot be stored as given: a string holding a lone surrogate
    (JSON's "\\ud800", which no UTF-8 file can hold and which YAML would write as an
    escape that breaks the file when read back) or a NUL character (PostgreSQL's text and
    jsonb refuse it, and no Markdown file means one), or an integer outside a signed 64-bit
    one (no database column holds it; `numbers=False` lets any integer through, for text
    that holds them only as text, such as frontmatter). The one check every way in calls
    at its boundary (SPEC §17): the API's JSON parser, its query strings, and the tool
    dispatcher. Walked without recursion."""
    pending: list[tuple[object, str]] = [(value, where)]
    while pending:
        item, place = pending.pop()
        if isinstance(item, str):
            _refuse_bad_text(item, place)
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if numbers and not -INT64_MAX - 1 <= item <= INT64_MAX:
                raise InvalidInput(f"{place} is out of range (a whole number of at most 2^63 − 1).")
        elif isinstance(item, dict):
            for key, child in item.items():
                pending.append((key, place))
                pending.append((child, f"{place}.{key}" if isinstance(key, str) else place))
        elif isinstance(item, list | tuple):
            pending.extend((child, f"{place}[{index}]") for index, child in enumerate(item))


def _refuse_bad_text(text: str, place: str) -> None:
    if "\x00" in text:
        raise InvalidInput(f"{place} holds a NUL character, which text here cannot hold.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(
            f"{place} is not valid Unicode text (it holds a lone surrogate)."
        ) from None


# Names other tools give notes of a day, as found in real OpenClaw workspaces:
# `2026-03-22-zhiji-E001` (a suffix with capitals), `2026-01-05_1030` (an underscore).
# Letters, digits, `-` and `_` only, so such a name still never leaves its directory.
LOOSE_NOTE_NAME_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[-_]([A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*))?", re.ASCII
)


def note_day(name: str) -> tuple[dt.date, str] | None:
    """(day, suffix) of a file that is a note of its day, read leniently; None otherwise.

    Every name parse_note_name accepts, and also the odd but real names other tools write
    (`2026-03-22-zhiji-E001.md`, `2026-01-05_1030.md`). These are notes of their day for
    reading, listing and consolidation; only parse_note_name's names are ever created.
    An impossible date (`2026-02-30`) is no day: the file is "other"."""
    if not isinstance(name, str):
        return None
    stem = name[:-3] if name.endswith(".md") else name
    match = LOOSE_NOTE_NAME_RE.fullmatch(stem)
    if not match:
        return None
    year, month, day, suffix = match.groups()
    try:
        return dt.date(int(year), int(month), int(day)), suffix or ""
    except ValueError:
        return None


# --- frontmatter ---------------------------------------------------------------------


def parse_frontmatter(text: str) -> tuple[dict, str]:
    """(metadata, body) of a Markdown file with optional YAML frontmatter. Malformed
    frontmatter is treated as body, so a hand-broken file still reads."""
    try:
        post = frontmatter.loads(text)
    except (yaml.YAMLError, ValueError):
        return {}, text
    meta = {str(key): yaml_plain(value) for key, value in post.metadata.items()}
    return meta, post.content


def yaml_plain(value: object) -> object:
    """A frontmatter value as memory keeps it: YAML turns 2026-11-30 into a date (and
    2026-11-30 10:00 into a datetime); memory wants the day as the person wrote it."""
    if isinstance(value, dt.date):
        return value.isoformat()[:10]
    if isinstance(value, list):
        return [yaml_plain(item) for item in value]
    return value


def dump_frontmatter(meta: dict, body: str) -> str:
    """Markdown text with YAML frontmatter (keys in the given order), ending in a newline.
    InvalidInput for text that is not valid Unicode (refuse_unstorable)."""
    refuse_unstorable(meta, "frontmatter", numbers=False)
    refuse_unstorable(body, "body")
    header = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, default_flow_style=False)
    body = body.strip("\n")
    return f"---\n{header}---\n\n{body}\n" if body else f"---\n{header}---\n"


_BACKTICKS = re.compile(r"`+")


def fence_mark(text: str) -> str:
    """A run of backticks longer than any in `text` (at least three): fence lines of it
    around the text make it one block of quoted data that nothing inside can close."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def cap(text: str, limit: int) -> str:
    """Cut text to `limit` characters, ending in `…` when cut (the `…` counts)."""
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def fold_single_line(text: str) -> str:
    """Line breaks inside a text become spaces (memory_save writes one line): every
    break str.splitlines knows, so U+2028, NEL or a form feed cannot start a new line for
    an editor while staying one line for search."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


# --- what a caller says about a write (SPEC §5) ------------------------------------------

MAX_REASON_CHARS = 1000  # a few sentences; the card shows it whole
MAX_HEADING_CHARS = 200


def clean_reason(reason: object) -> str:
    """A write's optional `reason` — the model's own words on why, shown on the card
    labelled as such and never read by any rule: "" for None or blank, the text with its
    line breaks folded to spaces otherwise. InvalidInput (422) for a non-string or more
    than MAX_REASON_CHARS characters."""
    if reason is None:
        return ""
    if not isinstance(reason, str):
        raise InvalidInput("`reason` must be text.")
    folded = fold_single_line(reason)
    if len(folded) > MAX_REASON_CHARS:
        raise InvalidInput(f"`reason` may have at most {MAX_REASON_CHARS} characters.")
    return folded


def clean_heading(heading: object) -> str:
    """The heading a line belongs under (`Lịch`, `## Lịch`): its text without the `#`
    marks, "" for None or blank. InvalidInput (422) for a non-string, a line break or more
    than MAX_HEADING_CHARS characters."""
    if heading is None:
        return ""
    if not isinstance(heading, str):
        raise InvalidInput("`heading` must be text.")
    if len(heading.splitlines()) > 1:
        raise InvalidInput("`heading` is one line.")
    text = heading.strip().lstrip("#").strip()
    if len(text) > MAX_HEADING_CHARS:
        raise InvalidInput(f"`heading` may have at most {MAX_HEADING_CHARS} characters.")
    return text


def heading_text(line: str) -> str:
    """A heading line's words (`## Lịch  ` → `Lịch`); "" for a line that is no heading."""
    if not is_heading(line):
        return ""
    return line.strip().lstrip("#").strip().rstrip("#").strip()


def heading_level(line: str) -> int:
    """How many `#` open a heading line (0 for a line that is no heading)."""
    if not is_heading(line):
        return 0
    stripped = line.lstrip(" ")
    return len(stripped) - len(stripped.lstrip("#"))


# --- the wiki's machine-owned block (SPEC §10.1) --------------------------------------

MACHINE_BLOCK_START = "<!-- wiki:related:start — generated, edits here are replaced -->"
MACHINE_BLOCK_END = "<!-- wiki:related:end -->"
