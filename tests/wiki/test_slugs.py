"""Slugs (SPEC §10.2): the same folding as search, letters and digits of every script."""

import pytest

from memory import workspace
from memory.errors import InvalidInput
from memory.text import slugify
from wiki import pages


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Hạn Eco", "han-eco"),
        ("han eco", "han-eco"),
        ("HẠN   ECO!!", "han-eco"),
        ("Đà Lạt", "da-lat"),
        ("東京", "東京"),
        ("Москва", "москва"),
        ("مدينة", "مدينة"),
        ("Eco Retreat 2026 – Đà Lạt / 東京", "eco-retreat-2026-da-lat-東京"),
        ("Tokyo 東京 Москва", "tokyo-東京-москва"),
        ("서울", "서울"),
        ("Ｔｏｋｙｏ", "tokyo"),
        ("snake_case name", "snake-case-name"),
    ],
)
def test_it_slugifies_titles_of_every_script(title, slug):
    assert slugify(title) == slug
    assert slugify(slug) == slug  # a slug is its own slug, so URLs round-trip


@pytest.mark.parametrize("title", ["???", "---", "  ", "_", "!!! ...", "\u0301"])
def test_it_refuses_a_title_without_a_letter_or_digit(title):
    with pytest.raises(InvalidInput):
        slugify(title)


def test_it_makes_one_page_of_titles_that_fold_alike(master):
    first = pages.save_page(
        master, title="Hạn Eco", kind="entity", sources=["note:2026-11-20"], body="one"
    )
    second = pages.save_page(
        master, title="han eco", kind="entity", sources=["note:2026-11-21"], body="two"
    )
    assert first.path == second.path == "memory/wiki/entities/han-eco.md"
    assert not first.path.endswith("han-eco-2.md")
    assert [page.slug for page in pages.list_pages(master)] == ["han-eco"]
    assert "\n\ntwo\n" in workspace.read(second.path)


@pytest.mark.parametrize(
    ("title", "name"),
    [("東京", "東京"), ("Москва", "москва"), ("مدينة", "مدينة"), ("서울", "서울")],
)
def test_it_writes_non_latin_titles_to_their_own_files(master, title, name):
    page = pages.save_page(master, title=title, kind="entity", sources=["conv:c1"], body="x")
    assert page.path == f"memory/wiki/entities/{name}.md"
    assert workspace.read(page.path).startswith(f"---\ntitle: {title}\n")


def test_non_latin_titles_never_merge_into_one_fallback_page(master):
    for title in ("東京", "Москва", "مدينة"):
        pages.save_page(master, title=title, kind="entity", sources=["conv:c1"], body=title)
    assert sorted(page.slug for page in pages.list_pages(master)) == sorted(
        ["東京", "москва", "مدينة"]
    )


def test_a_punctuation_only_title_writes_nothing(master, workspace):
    with pytest.raises(InvalidInput):
        pages.save_page(master, title="?!", kind="entity", sources=["conv:c1"], body="x")
    assert not (workspace / "memory" / "wiki").exists()
