from django.urls import path

from memory import api_scripts

app_name = "scripts-api"

urlpatterns = [
    path(
        "agents/<str:agent_id>/script-store",
        api_scripts.ScriptStoreList.as_view(),
        name="list",
    ),
    path(
        "agents/<str:agent_id>/script-store/<str:scope>/<str:scope_id>/<str:key>",
        api_scripts.ScriptStoreEntry.as_view(),
        name="entry",
    ),
]
