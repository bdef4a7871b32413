"""Forms of the management pages. They check shape only; the operations validate
meaning (fact names, note names, sources) and raise domain errors the views show."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from memory.errors import DomainError, InvalidInput
from memory.text import FACT_TYPES, validate_fact_name

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

    def clean_name(self) -> str:
        # The operation's own rule (SPEC §2), checked here too so the error stands next
        # to the field instead of collapsing the form.
        name = self.cleaned_data["name"]
        try:
            validate_fact_name(name)
        except InvalidInput as exc:
            raise forms.ValidationError(exc.message) from None
        return name


class SearchForm(forms.Form):
    q = forms.CharField(label=_("Search"), required=False, max_length=500)
    agent = forms.CharField(label=_("Agent"), required=False, max_length=64)
    explain = forms.BooleanField(label=_("Explain the ranking"), required=False)


def attach_error(form: forms.Form, exc: DomainError, *, default_field: str | None = None) -> None:
    """A refusal of the operation shown on the form it came from: next to the field it
    names (the error's `field`, else `default_field`), else above the form."""
    field = exc.extra.get("field") or default_field
    form.add_error(field if field in form.fields else None, exc.message)
