"""Django's error answers (404, 500, 400, 403) for every path the URLconf does not answer
itself: JSON with a message under `/api/` and `/mcp` (a client's `.json()` never meets an
HTML page, SPEC §17), and on the paths an OAuth client probes — this server has no OAuth,
so each says so in JSON and names what to send instead; the management pages' own
templates everywhere else."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from memory.auth import HOW_TO_CONNECT

# Where JSON is answered. `/.well-known/` holds OAuth's discovery documents (RFC 8414,
# RFC 9728, OpenID), `/register`, `/authorize` and `/token` the endpoints a client tries by
# default when discovery finds none (the MCP authorization spec's fallbacks).
JSON_PREFIXES = ("/api/", "/mcp", "/.well-known/")
OAUTH_PATHS = ("/register", "/authorize", "/token", "/oauth")


def wants_json(path: str) -> bool:
    return path.startswith(JSON_PREFIXES) or path.rstrip("/") in OAUTH_PATHS


def _oauth_probe(path: str) -> bool:
    return path.startswith("/.well-known/") or path.rstrip("/") in OAUTH_PATHS


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if not wants_json(request.path):
        return defaults.page_not_found(request, exception)
    if _oauth_probe(request.path):
        detail = f"This server does not offer OAuth. {HOW_TO_CONNECT}"
        return JsonResponse({"detail": detail, "code": "no_oauth"}, status=404)
    return JsonResponse(
        {"detail": f"Nothing is served at {request.path}.", "code": "not_found"}, status=404
    )


def server_error(request: HttpRequest) -> HttpResponse:
    if not wants_json(request.path):
        return defaults.server_error(request)
    return JsonResponse(
        {
            "detail": "The server failed to answer this request; nothing was saved by it. "
            "The server's log has the details.",
            "code": "server_error",
        },
        status=500,
    )


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if not wants_json(request.path):
        return defaults.bad_request(request, exception)
    return JsonResponse({"detail": "Bad request.", "code": "bad_request"}, status=400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if not wants_json(request.path):
        return defaults.permission_denied(request, exception)
    detail = str(exception) if exception and str(exception) else "Forbidden."
    return JsonResponse({"detail": detail, "code": "forbidden"}, status=403)
