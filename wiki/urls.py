"""Wiki routes (SPEC §14), included under /api/. Descriptions in wiki/api.py."""

from django.urls import path, re_path

from wiki import api

app_name = "wiki_api"

urlpatterns = [
    path("agents/<str:agent_id>/memory/wiki", api.WikiTocView.as_view(), name="toc"),
    path("agents/<str:agent_id>/memory/wiki/report", api.WikiReportView.as_view(), name="report"),
    path(
        "agents/<str:agent_id>/memory/wiki/compile", api.WikiCompileView.as_view(), name="compile"
    ),
    # Any characters reach the view, so a slug that is not a page name is 422 or 404 there.
    re_path(
        r"^agents/(?P<agent_id>[^/]+)/memory/wiki/pages/(?P<slug>[\s\S]+)$",
        api.WikiPageView.as_view(),
        name="page",
    ),
]
