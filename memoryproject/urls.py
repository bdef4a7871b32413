"""The site: each app's routes, composed here."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from memoryproject.health import healthz

urlpatterns = [
    path("", RedirectView.as_view(url="/manage/memory/", permanent=False)),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/", include("memory.api.urls")),
    path("api/", include("wiki.urls")),
    path("manage/memory/", include("memory.manage.urls")),
    path("manage/memory/wiki/", include("wiki.manage_urls")),
    path("i18n/", include("django.conf.urls.i18n")),
]

# Errors outside a view's own answer: JSON under /api/, /mcp and the OAuth probes
# (memoryproject.error_views), the pages' templates elsewhere.
handler400 = "memoryproject.error_views.bad_request"
handler403 = "memoryproject.error_views.permission_denied"
handler404 = "memoryproject.error_views.page_not_found"
handler500 = "memoryproject.error_views.server_error"
