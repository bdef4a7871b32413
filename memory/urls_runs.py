"""Runs and the consolidation trigger (SPEC §8, §12), included under /api/."""

from django.urls import path

from memory import api_runs

app_name = "runs_api"

urlpatterns = [
    path(
        "agents/<str:agent_id>/memory/consolidate",
        api_runs.ConsolidateView.as_view(),
        name="consolidate",
    ),
    path("runs", api_runs.RunListView.as_view(), name="runs"),
    path("runs/<int:run_id>", api_runs.RunDetailView.as_view(), name="run"),
]
