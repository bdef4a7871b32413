"""The Wiki tab of the management pages (SPEC §15), under /manage/memory/wiki/."""

from django.urls import path

from wiki import views

app_name = "wiki-pages"

urlpatterns = [
    path("", views.vault_current, name="current"),
    path("<str:agent_id>/", views.vault, name="vault"),
    path("<str:agent_id>/new/", views.page_edit, name="new"),
    path("<str:agent_id>/compile/", views.compile_now, name="compile"),
    # A page is its path (SPEC §10.1): its folder and its slug. The address of a slug
    # alone (older links) opens the page of that slug when one folder holds it.
    path("<str:agent_id>/pages/<str:slug>/", views.page_by_slug, name="page-by-slug"),
    path("<str:agent_id>/pages/<str:folder>/<str:slug>/", views.page_detail, name="page"),
    path("<str:agent_id>/pages/<str:folder>/<str:slug>/edit/", views.page_edit, name="edit"),
    path(
        "<str:agent_id>/pages/<str:folder>/<str:slug>/delete/",
        views.page_delete,
        name="delete",
    ),
]
