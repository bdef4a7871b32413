"""The memory API (SPEC §14), included under /api/ by memoryproject/urls.py. One view
module per resource in memory/api/; names are `memory-api:<resource>[-<verb>]`."""

from django.urls import path, re_path

from memory.api import (
    activity,
    agent_memory,
    agents,
    context,
    files,
    history,
    memory_tool,
    notes,
    notifications,
    proposals,
    runs,
    scripts,
    search,
    stats,
    tools,
    user,
)

app_name = "memory-api"

urlpatterns = [
    path("agents", agents.AgentListView.as_view(), name="agent-list"),
    path("agents/<str:agent_id>", agents.AgentDetailView.as_view(), name="agent"),
    path("memory/user", user.UserView.as_view(), name="user"),
    # Any text after facts/ reaches the view, so a bad name is 422, not a routing 404.
    re_path(r"^memory/user/facts/(?P<name>[\s\S]+)$", user.FactView.as_view(), name="fact"),
    path("memory/search", search.MemorySearchView.as_view(), name="search"),
    path("memory/history", history.HistoryList.as_view(), name="history-list"),
    path("memory/history/compare", history.HistoryCompare.as_view(), name="history-compare"),
    path("memory/history/<int:version_id>", history.HistoryDetail.as_view(), name="version"),
    path(
        "memory/history/<int:version_id>/restore",
        history.HistoryRestore.as_view(),
        name="version-restore",
    ),
    path("memory/blame", history.Blame.as_view(), name="blame"),
    path("memory/activity/writes", activity.WriteList.as_view(), name="write-list"),
    path(
        "memory/activity/writes/<int:version_id>/revert",
        activity.WriteRevert.as_view(),
        name="write-revert",
    ),
    path("memory/notifications", notifications.NotificationStatus.as_view(), name="notifications"),
    path(
        "memory/notifications/deliveries",
        notifications.DeliveryList.as_view(),
        name="delivery-list",
    ),
    path("memory/notifications/test", notifications.NotificationTest.as_view(), name="notify-test"),
    path("memory/proposals", proposals.ProposalList.as_view(), name="proposal-list"),
    path("memory/proposals/bulk", proposals.ProposalBulk.as_view(), name="proposal-bulk"),
    path("memory/proposals/<int:proposal_id>", proposals.ProposalDetail.as_view(), name="proposal"),
    path(
        "memory/proposals/<int:proposal_id>/hunks",
        proposals.ProposalHunks.as_view(),
        name="proposal-hunks",
    ),
    path(
        "memory/proposals/<int:proposal_id>/undo",
        proposals.ProposalUndo.as_view(),
        name="proposal-undo",
    ),
    path(
        "memory/proposals/<int:proposal_id>/reapply",
        proposals.ProposalReapply.as_view(),
        name="proposal-reapply",
    ),
    path("agents/<str:agent_id>/memory", agent_memory.MemoryView.as_view(), name="memory"),
    path(
        "agents/<str:agent_id>/memory/lines", agent_memory.MemoryLinesView.as_view(), name="lines"
    ),
    path("agents/<str:agent_id>/memory/save", agent_memory.MemorySaveView.as_view(), name="save"),
    path("agents/<str:agent_id>/memory/notes", notes.NoteListView.as_view(), name="note-list"),
    # Any characters on purpose (newlines too): `..`, `a/b` (from %2F) and NUL reach the
    # view and are refused with 422 instead of falling through to a routing 404.
    re_path(
        r"^agents/(?P<agent_id>[^/]+)/memory/notes/(?P<name>[\s\S]+)$",
        notes.NoteView.as_view(),
        name="note",
    ),
    path(
        "agents/<str:agent_id>/memory/files", files.MemoryFileListView.as_view(), name="file-list"
    ),
    # As for notes: any characters reach the view, so a bad path is 422, never a routing 404.
    re_path(
        r"^agents/(?P<agent_id>[^/]+)/memory/files/(?P<path>[\s\S]+)$",
        files.MemoryFileView.as_view(),
        name="file",
    ),
    path("agents/<str:agent_id>/memory/context", context.ContextView.as_view(), name="context"),
    path(
        "agents/<str:agent_id>/memory/consolidate",
        runs.ConsolidateView.as_view(),
        name="consolidate",
    ),
    path("agents/<str:agent_id>/tools", tools.ToolListView.as_view(), name="tool-list"),
    path("agents/<str:agent_id>/tools/<str:tool>", tools.ToolCallView.as_view(), name="tool-call"),
    path(
        "agents/<str:agent_id>/memory-tool",
        memory_tool.MemoryToolView.as_view(),
        name="memory-tool",
    ),
    path(
        "agents/<str:agent_id>/script-store",
        scripts.ScriptStoreList.as_view(),
        name="script-list",
    ),
    path(
        "agents/<str:agent_id>/script-store/<str:scope>/<str:scope_id>/<str:key>",
        scripts.ScriptStoreEntry.as_view(),
        name="script",
    ),
    path("runs", runs.RunListView.as_view(), name="run-list"),
    path("runs/<int:run_id>", runs.RunDetailView.as_view(), name="run"),
    path("stats", stats.StatsView.as_view(), name="stats"),
]
