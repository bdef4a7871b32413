"""The management pages under /manage/memory/ (SPEC §15)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from memory import views
from wiki import views as wiki_views

app_name = "memory-pages"

urlpatterns = [
    path("", views.memory_home, name="home"),
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="memory/login.html"),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(next_page="memory-pages:login"), name="logout"),
    path("user/", views.save_user, name="save-user"),
    path("facts/new/", views.add_fact, name="add-fact"),
    path("facts/<str:name>/", views.fact_detail, name="fact"),
    path("facts/<str:name>/forget/", views.forget_fact, name="forget-fact"),
    path("agents/<str:agent_id>/memory/", views.agent_memory, name="agent-memory"),
    path("agents/<str:agent_id>/notes/<str:name>/", views.note_detail, name="note"),
    path("agents/<str:agent_id>/consolidate/", views.consolidate_now, name="consolidate"),
    path("agent/", views.agent_screen_current, name="agent-current"),
    path("agents/<str:agent_id>/", views.agent_screen, name="agent"),
    path("search/", views.search_page, name="search"),
    path("proposals/", views.proposals, name="proposals"),
    path("proposals/<int:pk>/", views.proposal_detail, name="proposal"),
    path("proposals/<int:pk>/approve/", views.approve_proposal, name="approve"),
    path("proposals/<int:pk>/reject/", views.reject_proposal, name="reject"),
    path("proposals/<int:pk>/undo/", views.undo_proposal, name="undo"),
    path("activity/", views.activity, name="activity"),
    path("scripts/", views.scripts_current, name="scripts-current"),
    path("scripts/<str:agent_id>", views.scripts_tab, name="scripts"),
    path("scripts/<str:agent_id>/delete", views.delete_script_entry, name="delete-script"),
    path("wiki/", wiki_views.vault_current, name="wiki-current"),
    path("wiki/<str:agent_id>/", wiki_views.vault, name="vault"),
    path("wiki/<str:agent_id>/new/", wiki_views.page_edit, name="wiki-new"),
    path("wiki/<str:agent_id>/compile/", wiki_views.compile_now, name="wiki-compile"),
    path("wiki/<str:agent_id>/pages/<str:slug>/", wiki_views.page_detail, name="wiki-page"),
    path("wiki/<str:agent_id>/pages/<str:slug>/edit/", wiki_views.page_edit, name="wiki-edit"),
    path(
        "wiki/<str:agent_id>/pages/<str:slug>/delete/", wiki_views.page_delete, name="wiki-delete"
    ),
]
