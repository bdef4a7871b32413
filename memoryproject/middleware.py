"""Middleware: a Content-Security-Policy on every response (pages load scripts and styles
only from us), the body-size limit, and the attribution of file changes to the caller."""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from memory.attribution import attributed
from memory.auth import attribution_of
from memory.binding import WrongWorkspace, check_workspace
from memory.errors import DomainError, InvalidInput
from memory.manage.layout import error_page
from memory.text import refuse_unstorable
from memoryproject.error_views import wants_json

POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'self'; "
    "form-action 'self'"
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response


class BodySizeLimitMiddleware:
    """Answer 413 before reading a body larger than MEMORY_MAX_BODY_BYTES (SPEC §17)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > settings.MEMORY_MAX_BODY_BYTES:
            return JsonResponse(
                {"detail": "Request body is too large.", "code": "too_large"}, status=413
            )
        return self.get_response(request)


class QueryTextMiddleware:
    """A NUL in a query string (a key or a value) is refused — 422 with a message, JSON
    under /api/ and /mcp — before any view passes it on to a database that cannot hold it
    (PostgreSQL refuses NUL in text: a `turn=` with one was a 500) or to a file. JSON
    bodies are checked by the API's parser and tool arguments by the tool dispatcher
    (memory.text.refuse_unstorable, SPEC §17); the pages' form fields by Django's own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            for key, values in request.GET.lists():
                name = key.replace("\x00", "\\0")
                refuse_unstorable(key, f"The query parameter name `{name}`")
                for value in values:
                    refuse_unstorable(value, f"The query parameter `{name}`")
        except InvalidInput as error:
            return _refusal(request, error.message, error.code, error.status_code)
        return self.get_response(request)


def _refusal(request: HttpRequest, message: str, code: str, status: int) -> HttpResponse:
    if wants_json(request.path):
        return JsonResponse({"detail": message, "code": code}, status=status)
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


class WorkspaceCheckMiddleware:
    """Refuse to serve a workspace this database does not belong to (memory.binding): 503
    with the reason — JSON for the API and MCP, a page for the rest."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/static/"):
            try:
                check_workspace()
            except WrongWorkspace as exc:
                if request.path.startswith(("/api/", "/mcp", "/healthz")):
                    return JsonResponse({"detail": exc.message, "code": exc.code}, status=503)
                return render(
                    request, "memory/wrong_workspace.html", {"reason": exc.message}, status=503
                )
        return self.get_response(request)


class AttributionMiddleware:
    """Every memory file changed while a request is answered is attributed, in its history,
    to whoever made the request (memory.auth.attribution_of, resolved when the change
    happens, after authentication). Operations add more (the source a body states, the
    proposal an approval applies)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with attributed(resolve=lambda: attribution_of(request)):
            return self.get_response(request)


class DomainErrorPageMiddleware:
    """A domain error raised out of a page view (not the API: DRF maps those to JSON in
    memoryproject.api) becomes a page saying what happened, with its status — a full
    disk is 507, a read-only workspace 503 — never a 500."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, DomainError):
            return None
        try:
            return error_page(request, exception)
        except Exception:  # the page itself could not be rendered: say it plainly
            return HttpResponse(
                exception.message, status=exception.status_code, content_type="text/plain"
            )
