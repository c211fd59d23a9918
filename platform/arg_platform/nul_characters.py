"""A URL carrying a NUL character is refused with 400 before any view runs.

PostgreSQL's text type cannot hold NUL, so a view that filters or looks up by a path segment or a query
parameter holding one (``/nodes/?status=%00``) would fail with a ``DataError`` — a 500 — on the
production database, while SQLite simply finds nothing. No identifier, slug, filter or search term of
the platform contains NUL, so such a request is refused at the door, for every view alike: JSON in the
API's error shape (rule ``request.nul_character``) under ``/api/``, a plain page elsewhere. Request
bodies need no such check: every text field of the API's serializers and the web forms refuses NUL with
its own field message (DRF's and Django's validators), and the inference endpoint logs a refused binary
prompt through ``arg_platform.storable_text``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpResponse, JsonResponse

from .errors import RuleViolation, Violation

RULE = "request.nul_character"


def _refusal(where: str) -> RuleViolation:
    return RuleViolation(Violation(RULE, f"the {where} contains a NUL character", where.replace(" ", "_")))


def url_nul_problem(path: str, query_string: str) -> RuleViolation | None:
    """The refusal for a decoded URL path and a raw (percent-encoded) query string, or ``None``."""
    if "\x00" in path:
        return _refusal("path")
    if "%00" in query_string or "\x00" in query_string:
        return _refusal("query string")
    return None


class NulCharacterMiddleware:
    """Refuses a request whose URL path or query string holds a NUL character (see the module)."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        problem = url_nul_problem(request.path_info, request.META.get("QUERY_STRING", ""))
        if problem is None:
            return self.get_response(request)
        request_id = getattr(request, "request_id", None)
        if request.path_info.startswith("/api/"):
            return JsonResponse({**problem.as_dict(), "request_id": request_id}, status=400)
        message = problem.violations[0].message
        return HttpResponse(
            f"<!doctype html><title>Bad request</title><h1>400 — bad request</h1>"
            f"<p>{message[0].upper()}{message[1:]}.</p><p>Request id: <code>{request_id}</code></p>",
            status=400,
            content_type="text/html; charset=utf-8",
        )
