"""Forms of the management pages. They check shape only; the operations validate
meaning (fact names, note names, sources) and raise domain errors the views show."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from memory.text import FACT_TYPES

TYPE_CHOICES = [(name, name) for name in FACT_TYPES]


class FileForm(forms.Form):
    """A whole file's text, with the hash of the text the editor was opened on."""

    body = forms.CharField(
        label=_("Text"), required=False, strip=False, widget=forms.Textarea(attrs={"rows": 18})
    )
    base_hash = forms.CharField(required=False, widget=forms.HiddenInput)

    def clean_body(self) -> str:
        # Browsers post \r\n; files are \n (SPEC §1).
        return self.cleaned_data["body"].replace("\r\n", "\n").replace("\r", "\n")


class FactForm(forms.Form):
    description = forms.CharField(label=_("Description"), max_length=500)
    type = forms.ChoiceField(label=_("Type"), choices=TYPE_CHOICES)
    body = forms.CharField(
        label=_("Body"), required=False, strip=False, widget=forms.Textarea(attrs={"rows": 8})
    )

    def clean_body(self) -> str:
        return self.cleaned_data["body"].replace("\r\n", "\n").replace("\r", "\n")


class NewFactForm(FactForm):
    name = forms.CharField(
        label=_("Name"),
        max_length=64,
        help_text=_("lowercase letters, digits and single hyphens"),
    )
    field_order = ["name", "type", "description", "body"]


class SearchForm(forms.Form):
    q = forms.CharField(label=_("Search"), required=False, max_length=500)
    agent = forms.CharField(label=_("Agent"), required=False, max_length=64)


class WikiPageForm(forms.Form):
    """A page's frontmatter and body. Sources are one per line and required: a page that
    cannot say where it comes from is made up (SPEC §10.1)."""

    title = forms.CharField(label=_("Title"), max_length=300)
    kind = forms.ChoiceField(
        label=_("Kind"),
        choices=[("entity", "entity"), ("concept", "concept"), ("synthesis", "synthesis")],
    )
    status = forms.CharField(label=_("Status"), max_length=50, initial="ok")
    sources = forms.CharField(
        label=_("Sources"),
        help_text=_("one per line: note:YYYY-MM-DD or conv:<id>"),
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
