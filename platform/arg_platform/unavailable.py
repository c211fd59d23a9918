"""A backing service that is down answers 503 with a clear message, never a 500 with a stack trace.

The graph store (Neo4j's driver raises ``ServiceUnavailable`` / ``SessionExpired`` when the server is
unreachable) and the database (``OperationalError``: server gone, SQLite locked too long) are
*transient*: the same request succeeds once the service is back, with no restart of the platform —
the Neo4j driver reconnects by itself and Django opens a new database connection per request. So the
answer is 503 with ``Retry-After``, for the API (through ``arg_platform.api.exception_handler``) and
for the web pages (through ``ServiceUnavailableMiddleware``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import OperationalError
from django.http import HttpResponse, JsonResponse

logger = logging.getLogger("arg_platform.unavailable")

RETRY_AFTER_S = 5


def unavailable_reason(exc: BaseException) -> tuple[str, str] | None:
    """(component, message) when ``exc`` says a backing service is unreachable, else None."""
    try:
        from neo4j.exceptions import ServiceUnavailable, SessionExpired
    except ImportError:  # pragma: no cover - the driver is a dependency
        ServiceUnavailable = SessionExpired = ()  # type: ignore[assignment,misc]  # noqa: N806
    if isinstance(exc, ServiceUnavailable | SessionExpired):
        return "graph_store", "the graph store (Neo4j) is unreachable; retry in a few seconds"
    if isinstance(exc, OperationalError):
        return "database", "the database is unavailable or busy; retry in a few seconds"
    return None


def unavailable_body(component: str, message: str, request_id: str | None) -> dict[str, object]:
    return {
        "detail": message,
        "code": f"{component}_unavailable",
        "component": component,
        "retry_after": RETRY_AFTER_S,
        "request_id": request_id,
    }


class ServiceUnavailableMiddleware:
    """Turns an unreachable graph store or database in a web page or plain view into a 503."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        return self.get_response(request)

    def process_exception(self, request: Any, exc: Exception) -> HttpResponse | None:
        found = unavailable_reason(exc)
        if found is None:
            return None
        component, message = found
        request_id = getattr(request, "request_id", None)
        logger.warning("%s unavailable: %s: %s", component, type(exc).__name__, exc)
        if request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
            response: HttpResponse = JsonResponse(
                unavailable_body(component, message, request_id), status=503
            )
        else:
            response = HttpResponse(
                f"<!doctype html><title>Service unavailable</title><h1>503 — service unavailable</h1>"
                f"<p>{message.capitalize()}.</p><p>Request id: <code>{request_id}</code></p>",
                status=503,
                content_type="text/html; charset=utf-8",
            )
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
