from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

urlpatterns = [
    path("", RedirectView.as_view(url="/manage/memory/", permanent=False)),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/", include("memory.urls")),
    path("api/", include("memory.urls_tools")),
    path("api/", include("memory.urls_search")),
    path("api/", include("memory.urls_runs")),
    path("api/", include("memory.urls_scripts")),
    path("api/", include("proposals.urls")),
    path("api/", include("wiki.urls")),
    path("manage/memory/", include("memory.urls_pages")),
    path("i18n/", include("django.conf.urls.i18n")),
]
