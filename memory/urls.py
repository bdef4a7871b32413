"""Memory core routes (SPEC §14), included under /api/. Descriptions in memory/api.py."""

from django.urls import path, re_path

from memory import api

app_name = "memory_api"

urlpatterns = [
    path("agents", api.AgentListView.as_view(), name="agents"),
    path("agents/<str:agent_id>", api.AgentDetailView.as_view(), name="agent"),
    path("memory/user", api.UserView.as_view(), name="user"),
    # Any text after facts/ reaches the view, so a bad name is 422, not a routing 404.
    re_path(r"^memory/user/facts/(?P<name>[\s\S]+)$", api.FactView.as_view(), name="fact"),
    path("agents/<str:agent_id>/memory", api.MemoryView.as_view(), name="memory"),
    path("agents/<str:agent_id>/memory/lines", api.MemoryLinesView.as_view(), name="lines"),
    path("agents/<str:agent_id>/memory/save", api.MemorySaveView.as_view(), name="save"),
    path("agents/<str:agent_id>/memory/notes", api.NoteListView.as_view(), name="notes"),
    # Any characters on purpose (newlines too): `..`, `a/b` (from %2F) and NUL reach the
    # view and are refused with 422 instead of falling through to a routing 404.
    re_path(
        r"^agents/(?P<agent_id>[^/]+)/memory/notes/(?P<name>[\s\S]+)$",
        api.NoteView.as_view(),
        name="note",
    ),
    path("agents/<str:agent_id>/memory/context", api.ContextView.as_view(), name="context"),
    path("stats", api.StatsView.as_view(), name="stats"),
]
