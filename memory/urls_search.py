from django.urls import path

from memory.api_search import MemorySearchView

app_name = "search"

urlpatterns = [
    path("memory/search", MemorySearchView.as_view(), name="search"),
]
