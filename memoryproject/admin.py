"""The Django admin, opened to the owner only (memory.owner): the same definition as the
API and the pages, instead of Django's staff flag and per-model permissions."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from memory.owner import is_owner


class OwnerAdminSite(admin.AdminSite):
    site_header = _("Agent memory")
    site_title = _("Agent memory")
    index_title = _("Memory administration")

    def has_permission(self, request: HttpRequest) -> bool:
        return is_owner(request.user)


class OwnerAdminConfig(AdminConfig):
    default_site = "memoryproject.admin.OwnerAdminSite"
