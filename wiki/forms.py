"""The Wiki tab's form. It checks shape only; wiki.pages validates meaning."""

from __future__ import annotations

from django import forms
from django.utils.html import escape
from django.utils.translation import gettext_lazy as _

from wiki.vault import KINDS


class WikiPageForm(forms.Form):
    """A page's frontmatter and body. Sources are one per line and required: a page that
    cannot say where it comes from is made up (SPEC §10.1)."""

    title = forms.CharField(label=_("Title"), max_length=300)
    kind = forms.ChoiceField(
        label=_("Kind"),
        # `source`: OpenClaw's source pages keep their kind when edited here.
        choices=[(kind, kind) for kind in (*KINDS, "source")],
    )
    status = forms.CharField(label=_("Status"), max_length=50, initial="ok")
    sources = forms.CharField(
        label=_("Sources"),
        # Django puts help text in the page unescaped: escape it, or `<id>` is a tag.
        help_text=escape(_("one per line: note:YYYY-MM-DD or conv:<id>")),
        widget=forms.Textarea(attrs={"rows": 4}),
    )
    questions = forms.CharField(
        label=_("Open questions"),
        required=False,
        help_text=_("one per line"),
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    body = forms.CharField(
        label=_("Body"), required=False, strip=False, widget=forms.Textarea(attrs={"rows": 18})
    )

    @staticmethod
    def _lines(text: str) -> list[str]:
        return [line.strip() for line in text.splitlines() if line.strip()]

    def clean_sources(self) -> list[str]:
        sources = self._lines(self.cleaned_data["sources"])
        if not sources:
            raise forms.ValidationError(_("A page needs at least one source."))
        return sources

    def clean_questions(self) -> list[str]:
        return self._lines(self.cleaned_data.get("questions") or "")

    def clean_body(self) -> str:
        return self.cleaned_data["body"].replace("\r\n", "\n").replace("\r", "\n")
