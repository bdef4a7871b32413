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
