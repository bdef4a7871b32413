"""Vietnamese everywhere (SPEC §15): every string a template or a gettext call marks has a
Vietnamese translation, and the compiled catalogue (.mo) says the same as the .po.

The strings are extracted the way `makemessages` extracts them (Django's templatize for
templates, xgettext with Django's keywords for Python) into a temporary directory, so the
check sees a string the moment it is written, without touching locale/."""

from __future__ import annotations

import gettext
import shutil
import subprocess
from pathlib import Path

import pytest
from django.utils.translation.template import templatize

ROOT = Path(__file__).resolve().parents[1]
PO = ROOT / "locale/vi/LC_MESSAGES/django.po"
MO = ROOT / "locale/vi/LC_MESSAGES/django.mo"
APPS = ("memory", "proposals", "wiki", "memoryproject")
# Django's own keywords (django/core/management/commands/makemessages.py).
KEYWORDS = [
    "--keyword=gettext_noop",
    "--keyword=gettext_lazy",
    "--keyword=ngettext_lazy:1,2",
    "--keyword=pgettext:1c,2",
    "--keyword=npgettext:1c,2,3",
    "--keyword=pgettext_lazy:1c,2",
    "--keyword=npgettext_lazy:1c,2,3",
]

pytestmark = pytest.mark.skipif(
    shutil.which("xgettext") is None or shutil.which("msgcmp") is None,
    reason="gettext tools missing: apt-get install gettext (.ci/run does)",
)


def _sources(tmp_path: Path) -> list[Path]:
    """The Python files of the apps, and every template turned into what xgettext reads."""
    files = [
        path
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts
    ]
    for template in sorted((ROOT / "templates").rglob("*.html")):
        target = tmp_path / "templates" / template.relative_to(ROOT / "templates")
        target = target.with_suffix(".html.py")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(templatize(template.read_text(encoding="utf-8"), origin=str(template)))
        files.append(target)
    return files


def _extract(tmp_path: Path) -> Path:
    pot = tmp_path / "django.pot"
    command = [
        "xgettext",
        "--language=Python",
        "--from-code=UTF-8",
        *KEYWORDS,
        f"--output={pot}",
        *map(str, _sources(tmp_path)),
    ]
    subprocess.run(command, check=True, capture_output=True)
    return pot


def test_every_marked_string_has_a_vietnamese_translation(tmp_path):
    pot = _extract(tmp_path)
    # msgcmp: every msgid of the template catalogue must be translated (not fuzzy, not
    # empty) in the Vietnamese one; it lists each one that is not.
    result = subprocess.run(["msgcmp", str(PO), str(pot)], capture_output=True, text=True)
    assert result.returncode == 0, "Untranslated strings (run makemessages, translate):\n" + (
        result.stderr
    )


def _catalog_of_po() -> dict:
    compiled = subprocess.run(
        ["msgfmt", "--check-format", "-o", "-", str(PO)], capture_output=True, check=True
    ).stdout
    path = Path(MO.parent / ".check.mo")
    try:
        path.write_bytes(compiled)
        with path.open("rb") as handle:
            return gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
    finally:
        path.unlink(missing_ok=True)


def test_the_compiled_catalogue_matches_the_po(tmp_path):
    with MO.open("rb") as handle:
        committed = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
    assert committed == _catalog_of_po(), (
        "locale/vi/LC_MESSAGES/django.mo is out of date: "
        ".venv/bin/python manage.py compilemessages -l vi --ignore=.venv"
    )


def test_a_page_and_the_words_the_code_writes_read_in_vietnamese(pages, master):
    from memory.models import Run

    Run.objects.create(
        agent=master,
        kind="consolidate",
        status="skipped",
        summary="no note is newer than MEMORY.md · fact review (run #3): "
        "2 fact proposal(s) created; 1 fact(s) left out of the review",
    )
    html = pages.get("/manage/memory/activity/", HTTP_ACCEPT_LANGUAGE="vi").content.decode()
    assert "không có ghi chú nào mới hơn MEMORY.md · rà soát fact (lượt chạy #3): " in html
    assert "đã tạo 2 đề xuất về fact; 1 fact không được đưa vào rà soát" in html
    assert ">bỏ qua<" in html and ">hợp nhất" in html
