"""The vault's fast frontmatter reader (wiki.vault.parse_author) answers as the reference
parser (python-frontmatter, memory.text.parse_frontmatter) does."""

import pytest

from memory.text import parse_frontmatter
from wiki.vault import parse_author

PAGES = [
    "---\ntitle: Eco Retreat\nkind: entity\nsources:\n- note:2026-11-30\n---\n\nBody [[Minh]].\n",
    "---\ntitle: Hạn Eco\nupdated: 2026-11-30\nquestions: []\nstatus: review\n---\nBody\n",
    "---\ntitle: 'quoted: colon'\nsources: [note:2026-11-01, 'conv:42']\n---\n\n# Head\n\ntext\n",
    "---\ntitle: Dated\nupdated: 2026-11-30 10:00:00\n---\n\nx\n",
    "---\nextra_key: kept\ntitle: 東京\n---\n\n東京の本文\n",
    "no frontmatter at all\n\n---\n\nnot a header\n",
    "---\n- a list\n- not a mapping\n---\n\nbody\n",
    "---\ntitle: [unclosed\n---\n\nbroken YAML is body\n",
    "---\ntitle: Empty body\n---\n",
]


@pytest.mark.parametrize("text", PAGES)
def test_it_reads_a_page_as_the_reference_parser_does(text):
    fast_meta, fast_body = parse_author(text)
    meta, body = parse_frontmatter(text)
    if not meta and text.startswith("---\n"):
        # Neither reads a header that is not a YAML mapping; both keep the text.
        assert fast_meta == {}
        assert text.strip("\n").endswith(fast_body)
        return
    assert fast_meta == meta
    assert fast_body == body.strip("\n")


# Values that YAML reads as something other than the plain text, or that need care, mixed
# with ordinary ones: the fast reading must either agree with YAML or leave the header to
# it — never read a different value.
VALUES = [
    "Eco Retreat", "Hạn Eco", "東京", "yes", "No", "on", "null", "~", "", "1:20", "12:30:00",
    "2026-11-30", "2026-11-30 10:00:00", "1e3", "1.5", ".inf", "0x1F", "+1", "-1", "<<", "=",
    "note:2026-11-05", "conv:42", "a: b", "a:b", "trailing:", "C#", "a #b", "#x", "- x",
    "? x", "[x", "x]", "{x}", "a, b", "*ref", "&anchor", "!tag", "|", ">", "%x", "@x", "`x",
    "'quoted'", "'it''s'", "'broken", '"double"', " lead", "trail ", "two  spaces", "tab\tx",
    "nbsp\u00a0x", "line\u2028sep", "nel\x85x", "bom\ufeffx", "...", "---x", "ok", "review",
]  # fmt: skip
KEYS = ["title", "kind", "sources", "questions", "status", "updated", "yes", "on", "x_1"]


def _random_header(rng) -> str:
    lines = []
    for _ in range(rng.randint(1, 6)):
        key = rng.choice(KEYS)
        shape = rng.random()
        if shape < 0.5:
            lines.append(f"{key}: {rng.choice(VALUES)}")
        elif shape < 0.6:
            lines.append(f"{key}: []")
        elif shape < 0.65:
            lines.append(f"{key}:")
        else:
            lines.append(f"{key}:")
            lines += [f"- {rng.choice(VALUES)}" for _ in range(rng.randint(1, 3))]
    return "\n".join(lines)


def test_it_reads_generated_headers_as_yaml_does(monkeypatch):
    """The fast reading of simple headers against the same function reading every header
    with YAML (python-frontmatter itself fails on keys YAML reads as booleans)."""
    import random

    from wiki import vault

    rng = random.Random(20261130)
    texts = [f"---\n{_random_header(rng)}\n---\n\nBody [[Link]].\n" for _ in range(3000)]
    fast = [parse_author(text) for text in texts]
    monkeypatch.setattr(vault, "_simple_header", lambda header: None)
    for text, answer in zip(texts, fast, strict=True):
        assert answer == parse_author(text), text
    # And the fast reading was used for the simple ones (not always left to YAML).
    monkeypatch.undo()
    assert sum(vault._simple_header(t[4 : t.index("\n---\n", 3)]) is not None for t in texts) > 100


def test_the_headers_this_app_writes_are_read_without_yaml():
    from wiki import pages, vault

    author = pages.render_author(
        title="Hạn Eco: phase 2, Đà Nẵng",
        kind="entity",
        sources=["note:2026-11-20", "conv:42"],
        questions=["Who signs?", "yes"],
        status="ok",
        updated="2026-11-30",
        body="Body [[Minh]].",
        kept={"aliases": ["Eco"], "rating": "5"},
    )
    header = author[4 : author.index("\n---", 3)]
    assert vault._simple_header(header) == parse_frontmatter(author)[0]
