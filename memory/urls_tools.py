from django.urls import path

from memory.api_tools import ToolCallView, ToolListView

app_name = "tools"

urlpatterns = [
    path("agents/<str:agent_id>/tools", ToolListView.as_view(), name="list"),
    path("agents/<str:agent_id>/tools/<str:tool>", ToolCallView.as_view(), name="call"),
]
