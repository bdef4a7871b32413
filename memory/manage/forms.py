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
    explain = forms.BooleanField(label=_("Explain the ranking"), required=False)
