"""The site's URLconf with one view under /api/ and one page that fail as a bug would (an
exception no handler knows), for tests/memoryproject/test_error_views.py."""

from django.urls import path

from memoryproject.urls import *  # noqa: F403 — the real routes and error handlers
from memoryproject.urls import urlpatterns as site


def _fails(request):
    raise RuntimeError("a bug")


urlpatterns = [path("api/fails", _fails), path("manage/fails", _fails), *site]
