"""The management pages under /manage/memory/ (SPEC §15); the Wiki tab's routes are the
wiki's own (wiki/manage_urls.py), composed beside these by memoryproject/urls.py."""

from django.contrib.auth import views as auth_views
from django.urls import path

from memory.manage import (
    activity,
    agent,
    files,
    history,
    memory,
    notifications,
    proposals,
    queue,
    remembered,
    scripts,
    settings,
)

app_name = "memory-pages"

urlpatterns = [
    path("", memory.memory_home, name="home"),
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="memory/login.html"),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(next_page="memory-pages:login"), name="logout"),
    path("user/", memory.save_user, name="save-user"),
    path("facts/new/", memory.add_fact, name="add-fact"),
    path("facts/<str:name>/", memory.fact_detail, name="fact"),
    path("facts/<str:name>/forget/", memory.forget_fact, name="forget-fact"),
    path("agents/<str:agent_id>/memory/", memory.agent_memory, name="agent-memory"),
    path("agents/<str:agent_id>/notes/<str:name>/", memory.note_detail, name="note"),
    path("agents/<str:agent_id>/consolidate/", memory.consolidate_now, name="consolidate"),
    path("agents/<str:agent_id>/files/", files.memory_files, name="memory-files"),
    path("agents/<str:agent_id>/files/<path:path>", files.memory_file, name="memory-file"),
    path("agents/<str:agent_id>/view/<path:path>", memory.file_view, name="file"),
    path("settings/", settings.settings_current, name="settings-current"),
    path("settings/new-agent/", settings.create_agent, name="create-agent"),
    path("settings/notifications/test/", notifications.send_test, name="notify-test"),
    path("settings/<str:agent_id>/", settings.agent_settings, name="settings"),
    path("settings/<str:agent_id>/token/", settings.issue_token, name="issue-token"),
    path("search/", memory.search_page, name="search"),
    path("agent/", agent.agent_screen_current, name="agent-current"),
    path("agents/<str:agent_id>/", agent.agent_screen, name="agent"),
    path("proposals/", queue.proposals, name="proposals"),
    path("proposals/<int:pk>/", proposals.proposal_detail, name="proposal"),
    path("proposals/<int:pk>/approve/", proposals.approve_proposal, name="approve"),
    path("proposals/<int:pk>/reject/", proposals.reject_proposal, name="reject"),
    path("proposals/<int:pk>/undo/", proposals.undo_proposal, name="undo"),
    path("proposals/<int:pk>/approve-part/", proposals.approve_partial, name="approve-part"),
    path("proposals/<int:pk>/approve-edited/", proposals.approve_edited, name="approve-edited"),
    path("proposals/<int:pk>/rule/", proposals.create_rule, name="create-rule"),
    path("proposals/<int:pk>/reapply/", proposals.reapply_proposal, name="reapply"),
    path("proposals/bulk/", proposals.bulk_decide, name="bulk"),
    path("rules/<int:rule_id>/revoke/", proposals.revoke_rule, name="revoke-rule"),
    path("history/", history.file_history, name="history"),
    path("history/compare/", history.compare_versions, name="compare"),
    path("history/<int:version_id>/", history.version_detail, name="version"),
    path("history/<int:version_id>/restore/", history.restore_version, name="restore"),
    path("blame/", history.file_blame, name="blame"),
    path("activity/", activity.activity, name="activity"),
    path("activity/writes/", remembered.remembered, name="remembered"),
    path("activity/writes/<int:version_id>/revert/", remembered.revert_write, name="revert-write"),
    path("scripts/", scripts.scripts_current, name="scripts-current"),
    path("scripts/<str:agent_id>", scripts.scripts_tab, name="scripts"),
    path("scripts/<str:agent_id>/delete", scripts.delete_script_entry, name="delete-script"),
]
