"""Markdown to safe HTML for the management pages (SPEC §15).

Owner- and model-written text is rendered as GitHub-flavoured Markdown by cmark-gfm (C:
a note of a few thousand lines renders in milliseconds), then sanitised with `nh3`
against an explicit allow-list: no `<script>`, no event-handler attributes, and links only
to http, https, mailto or relative addresses (no `javascript:` or `data:`). The result is
the only HTML the templates mark safe.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

import cmarkgfm
import nh3
from cmarkgfm.cmark import Options
from django.utils.safestring import SafeString, mark_safe

from memory.query import Query
from memory.text import fold

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "ol", "p",
    "pre", "s", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th",
    "thead", "tr", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "class"},
    "img": {"src", "alt", "title"},
    "abbr": {"title"},
    "td": {"align"},
    "th": {"align"},
    "span": {"class"},
    "code": {"class"},
}
URL_SCHEMES = {"http", "https", "mailto"}
MARKDOWN_OPTIONS = Options.CMARK_OPT_UNSAFE | Options.CMARK_OPT_FOOTNOTES

# [[Page name]] or [[Page name|label]] (SPEC §10.3).
WIKI_LINK_RE = re.compile(r"\[\[([^\[\]|\n]+)(?:\|([^\[\]\n]+))?\]\]")


def sanitize(html: str) -> str:
    """Clean HTML with the allow-list above (comments and script/style contents dropped)."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer",
        strip_comments=True,
    )


def _escape_label(text: str) -> str:
    return re.sub(r"([\\\[\]()*_`<>])", r"\\\1", text)


def link_wiki_pages(text: str, url_for_target: Callable[[str], str | None]) -> str:
    """Turn `[[Page name|label]]` into a Markdown link to the address `url_for_target`
    gives for the target as written (`Page name`, `folder/name`); a target it has no
    address for (no letter or digit: it names no page) stays as written."""

    def replace(match: re.Match[str]) -> str:
        title = match.group(1).strip()
        label = (match.group(2) or match.group(1)).strip()
        url = url_for_target(title)
        if url is None:
            return match.group(0)
        hint = title.replace('"', "")
        return f'[{_escape_label(label)}]({url} "{hint}")'

    return WIKI_LINK_RE.sub(replace, text)


def render_markdown(
    text: str, *, wiki_url: Callable[[str], str | None] | None = None
) -> SafeString:
    """Markdown → sanitised HTML, safe to put in a page. With `wiki_url`, `[[links]]`
    become links to `wiki_url(target as written)` (link_wiki_pages)."""
    if wiki_url is not None:
        text = link_wiki_pages(text, wiki_url)
    # Raw HTML passes through cmark (UNSAFE) to the allow-list, which keeps what is
    # harmless (<details>, <kbd>) and drops the rest.
    html = cmarkgfm.github_flavored_markdown_to_html(text or "", options=MARKDOWN_OPTIONS)
    return mark_safe(sanitize(html))  # noqa: S308 — sanitised just above


# --- search hits -----------------------------------------------------------------------


class _Folds(dict):
    """str.translate's table of folded characters (fold's own ASCII rule), each computed
    the first time a text holds it; the characters that fold to none or to several are
    kept in `irregular`."""

    def __init__(self) -> None:
        super().__init__()
        self.irregular: set[str] = set()

    def __missing__(self, code: int) -> str:
        char = chr(code)
        folded = char.lower() if char.isascii() else fold(char)
        if len(folded) != 1:
            self.irregular.add(char)
        self[code] = folded
        return folded


_FOLDS = _Folds()


def matched_spans(text: str, query: Query) -> list[tuple[int, int]]:
    """Where the query's words are in `text`, as (start, end) offsets into `text` itself,
    found exactly as search finds them (folded, short words whole; memory.text). Folding
    works character by character, so each folded character knows the original one it
    came from; a match ends after the marks that follow its last letter."""
    folded_text = text.translate(_FOLDS)
    if _FOLDS.irregular.isdisjoint(text):
        # Each character folds to one (the usual text): offsets are the text's own.
        found = [
            (match.start(), match.end())
            for word in query.words
            for match in word.pattern.finditer(folded_text)
        ]
    else:
        found = _spans_through(text, query)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(span for span in found if span[1] > span[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _spans_through(text: str, query: Query) -> list[tuple[int, int]]:
    """matched_spans' spans of a text where some character folds to none (a combining
    mark) or to several: each folded character is mapped back to the one it came from."""
    folded_chars = [_FOLDS[ord(char)] for char in text]
    origin: list[int] = []
    for index, folded in enumerate(folded_chars):
        origin.extend([index] * len(folded))
    folded_text = "".join(folded_chars)
    spans: list[tuple[int, int]] = []
    for word in query.words:
        for match in word.pattern.finditer(folded_text):
            if match.end() == match.start():
                continue
            start, end = origin[match.start()], origin[match.end() - 1] + 1
            while end < len(text) and not folded_chars[end]:
                end += 1  # a combining mark belongs to the letter before it
            spans.append((start, end))
    return spans


def highlight(text: str, query: Query) -> SafeString:
    """`text` escaped, then the query's words wrapped in <mark>: the marks are the only
    HTML in the result, so nothing in a note can inject markup."""
    parts: list[str] = []
    position = 0
    for start, end in matched_spans(text, query):
        parts.append(html.escape(text[position:start]))
        parts.append(f"<mark>{html.escape(text[start:end])}</mark>")
        position = end
    parts.append(html.escape(text[position:]))
    return mark_safe("".join(parts))  # noqa: S308 — every piece escaped just above
