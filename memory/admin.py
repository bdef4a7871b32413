"""Admin for the rows that are not memory itself: agents, runs (read-only activity), the
script store and API tokens. Memory content is edited through the files (REST, pages)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html

from memory.errors import InvalidInput
from memory.jobs.schedules import validate_cron
from memory.models import Agent, ApiToken, Delivery, FileVersion, Run, ScriptEntry


class AgentForm(forms.ModelForm):
    """The API's rules in the admin: the id as typed (never trimmed: "x\n" is refused,
    not saved as "x"), and a cron that fires (validated before anything is saved)."""

    class Meta:
        model = Agent
        fields = ["id", "name", "is_default", "autonomous", "memory_consolidate"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if "id" in self.fields:
            self.fields["id"].strip = False

    def clean_memory_consolidate(self) -> str:
        try:
            return validate_cron(self.cleaned_data.get("memory_consolidate") or "")
        except InvalidInput as exc:
            raise forms.ValidationError(exc.message) from None


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    form = AgentForm
    list_display = ["id", "name", "is_default", "autonomous", "memory_consolidate", "created_at"]
    list_filter = ["is_default", "autonomous"]
    search_fields = ["id", "name"]
    readonly_fields = ["created_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Agent | None = None):
        # The id names the agent's directory on disk: fixed once created.
        return [*self.readonly_fields, "id"] if obj is not None else self.readonly_fields


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """Activity: what consolidation, fact review and compile did. Read-only."""

    list_display = ["id", "agent", "kind", "status", "started_at", "finished_at", "cost"]
    list_filter = ["kind", "status", "agent"]
    search_fields = ["summary", "agent__id"]
    date_hierarchy = "started_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        return False


@admin.register(ScriptEntry)
class ScriptEntryAdmin(admin.ModelAdmin):
    list_display = ["agent", "scope", "scope_id", "key", "updated_at"]
    list_filter = ["scope", "agent"]
    search_fields = ["scope_id", "key"]
    readonly_fields = ["updated_at"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are made with `manage.py memory_token`; the admin may revoke (delete) them.
    Only the key's hash is stored, and it is never editable."""

    list_display = ["id", "__str__", "user", "agent", "created_at", "last_used_at"]
    list_filter = ["agent"]
    readonly_fields = ["key_hash", "user", "agent", "created_at", "last_used_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(FileVersion)
class FileVersionAdmin(admin.ModelAdmin):
    """Every version of every memory file (memory.history). Read-only: history is never
    edited; restore from the pages (History) or `POST /api/memory/history/{id}/restore`."""

    list_display = ["path", "seq", "op", "actor", "source", "proposal_id", "created_at", "page"]
    list_filter = ["op", "agent", "via"]
    search_fields = ["path", "actor", "source", "note"]
    exclude = ["data"]

    @admin.display(description="history page")
    def page(self, obj: FileVersion) -> str:
        return format_html('<a href="/manage/memory/history/{}/">v{}</a>', obj.pk, obj.seq)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    """Every notification sent or tried (memory.jobs.notify). Read-only: a test is sent from
    Settings → Notifications or `POST /api/memory/notifications/test`."""

    list_display = ["sent_at", "channel", "what", "target", "payload_format", "ok", "result"]
    list_filter = ["channel", "what", "ok"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
