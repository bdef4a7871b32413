"""Sanitised Markdown (the XSS corpus), the agent screen, the Scripts tab (SPEC §4, §11, §15)."""

from html.parser import HTMLParser

import pytest

from memory import facts, notes, scripts
from memory.manage.rendering import highlight, render_markdown
from memory.models import ScriptEntry
from memory.query import Query
from wiki import pages as wiki_pages

CORPUS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    '<a href="data:text/html,<script>alert(1)</script>">d</a>',
    '<a href="JaVaScRiPt:alert(1)">j</a>',
    '<svg onload="alert(1)"></svg>',
    '<iframe src="https://example.com"></iframe>',
    '<p style="x" onclick="alert(1)">p</p>',
]


@pytest.mark.parametrize(
    ("text", "query", "marked"),
    [
        ("Đọc sách ở Hà Nội", "doc sach", "<mark>Đọc</mark> <mark>sách</mark> ở Hà Nội"),
        (
            "<b>SACH</b> & sách",
            "sach",
            "&lt;b&gt;<mark>SACH</mark>&lt;/b&gt; &amp; <mark>sách</mark>",
        ),
        # Decomposed: a combining mark folds to nothing and is marked with its letter.
        ("đọc sa\u0301ch nhé", "sach", "đọc <mark>sa\u0301ch</mark> nhé"),
        # A character that folds to two: the mark covers it whole, and what follows.
        ("Straße ﬁnden, Strasse", "strasse", "<mark>Straße</mark> ﬁnden, <mark>Strasse</mark>"),
        ("ﬁnden und finden", "finden", "<mark>ﬁnden</mark> und <mark>finden</mark>"),
        ("nothing here", "sach", "nothing here"),
    ],
)
def test_a_hits_text_is_escaped_and_its_query_words_marked_where_search_finds_them(
    text, query, marked
):
    assert highlight(text, Query.parse(query)) == marked


def text_of(response) -> str:
    return response.content.decode()


class _Elements(HTMLParser):
    """Every element of a page as the browser would build it: (tag, attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict]] = []
        self.script_text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, {k.lower(): (v or "") for k, v in attrs}))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.script_text.append(data)


def assert_harmless(html: str) -> None:
    """No script runs from this HTML: only our own external script, no event-handler
    attribute, no javascript:/data: address, no embedded frames or SVG."""
    parser = _Elements()
    parser.feed(html)
    for tag, attrs in parser.elements:
        assert tag not in ("iframe", "svg", "object", "embed"), tag
        if tag == "script":
            assert attrs.get("src") == "/static/memory/pages.js", attrs
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("href", "src", "action", "formaction"):
                assert not value.strip().lower().startswith(("javascript:", "data:")), value
    assert "".join(parser.script_text).strip() == ""


@pytest.mark.parametrize("attack", CORPUS)
def test_it_renders_the_xss_corpus_harmlessly(attack):
    assert_harmless(str(render_markdown(attack)))


def test_it_keeps_ordinary_markdown_and_safe_links():
    html = str(render_markdown("**đậm** [site](https://example.com) [mail](mailto:a@b.c)"))
    assert "<strong>đậm</strong>" in html
    assert 'href="https://example.com"' in html and 'href="mailto:a@b.c"' in html


def test_a_note_with_the_corpus_renders_harmlessly_on_its_page(pages, master, workspace):
    notes.write_note(master, "2026-11-30", "# 2026-11-30\n\n" + "\n\n".join(CORPUS) + "\n")
    html = text_of(pages.get("/manage/memory/agents/master/notes/2026-11-30/"))
    rendered = html[html.index('<div class="rendered box">') : html.index("<h2>")]
    assert_harmless(rendered)
    # The editor shows the raw text escaped, never live.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_fact_and_a_wiki_page_with_the_corpus_render_harmlessly(pages, master, workspace):
    facts.save_fact(
        "evil",
        description="<script>alert(1)</script>",
        type="reference",
        body="\n\n".join(CORPUS),
        written_by="owner",
        source="web",
    )
    fact_html = text_of(pages.get("/manage/memory/facts/evil/"))
    assert_harmless(fact_html[fact_html.index("<main") :])
    wiki_pages.save_page(
        master,
        title="Evil",
        kind="concept",
        sources=["note:2026-11-30"],
        body="\n\n".join(CORPUS) + "\n\n[[<script>alert(1)</script>]]",
    )
    page_html = text_of(pages.get("/manage/memory/wiki/master/pages/concepts/evil/"))
    assert_harmless(page_html[page_html.index("<main") :])
    home = text_of(pages.get("/manage/memory/"))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in home
    assert_harmless(home[home.index("<main") :])


def test_pages_carry_a_content_security_policy_without_inline_scripts(pages, master):
    response = pages.get("/manage/memory/")
    assert "script-src 'self'" in response["Content-Security-Policy"]
    html = text_of(response)
    assert "<script>" not in html  # only <script src=…> from our static files
    assert '<script src="/static/memory/pages.js" defer></script>' in html


def test_the_agent_screen_shows_the_prompt_sections_and_the_pre_turn_block(
    pages, master, workspace
):
    from memory import context

    facts.write_user("Tôi là Lan.\n")
    notes.write_memory(master, "- dùng lịch Google (2026-11-01)\n")
    notes.memory_save(master, "uống 2 lít nước")
    html = text_of(pages.get("/manage/memory/agents/master/"))
    assert "## USER.md\nTôi là Lan." in html
    assert "## MEMORY.md\n- dùng lịch Google (2026-11-01)" in html
    assert "Read right before the first message of a new conversation" in html
    assert "uống 2 lít nước" in html
    from django.utils.html import escape

    assert escape(context.system_prompt(master)) in html
    assert escape(context.preview_pre_turn(master)) in html
    from memory.models import NoteCursor

    assert not NoteCursor.objects.exists()  # a preview writes no cursor


def test_the_scripts_tab_is_addressed_by_agent_and_groups_entries(pages, master, helper_agent):
    scripts.store(helper_agent, "schedule", "morning-bulletin", "last_sent", "2026-11-30")
    scripts.store(helper_agent, "schedule", "morning-bulletin", "count", 12)
    scripts.store(helper_agent, "conversation", "tg-42", "draft", {"title": "Sách"})
    scripts.store(master, "schedule", "other", "x", 1)
    response = pages.get("/manage/memory/scripts/helper")
    html = text_of(response)
    assert response.status_code == 200
    assert (
        html.index("By schedule") < html.index("morning-bulletin") < html.index("By conversation")
    )
    assert html.index("By conversation") < html.index("tg-42")
    assert "last_sent" in html and "&quot;2026-11-30&quot;" in html
    assert "&quot;title&quot;: &quot;Sách&quot;" in html
    assert "<code>other</code>" not in html
    assert pages.get("/manage/memory/scripts/nobody").status_code == 404


def test_the_scripts_tab_deletes_an_entry(pages, helper_agent):
    scripts.store(helper_agent, "conversation", "tg-42", "draft", 1)
    html = text_of(
        pages.post(
            "/manage/memory/scripts/helper/delete",
            {"scope": "conversation", "scope_id": "tg-42", "key": "draft"},
            follow=True,
        )
    )
    assert "Deleted conversation tg-42: draft." in html
    assert not ScriptEntry.objects.exists()
    again = text_of(
        pages.post(
            "/manage/memory/scripts/helper/delete",
            {"scope": "conversation", "scope_id": "tg-42", "key": "draft"},
            follow=True,
        )
    )
    assert "Not found: No script-store entry conversation/tg-42/draft." in again
