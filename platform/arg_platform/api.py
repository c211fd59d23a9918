"""API plumbing shared by every app: the exception handler that turns domain errors into 4xx JSON,
a rate limit into a clear 429 and an unreachable backing service into a 503."""

from __future__ import annotations

import logging
from typing import Any

from rest_framework.exceptions import Throttled
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from .errors import DomainError
from .request_id import get_request_id
from .unavailable import RETRY_AFTER_S, unavailable_body, unavailable_reason

logger = logging.getLogger("arg_platform.api")


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        body = exc.as_dict()
        body["request_id"] = get_request_id()
        return Response(body, status=exc.status_code)
    found = unavailable_reason(exc)
    if found is not None:
        component, message = found
        logger.warning("%s unavailable: %s: %s", component, type(exc).__name__, exc)
        return Response(
            unavailable_body(component, message, get_request_id()),
            status=503,
            headers={"Retry-After": str(RETRY_AFTER_S)},
        )
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, Throttled):
        request = context.get("request")
        limit = getattr(getattr(request, "_request", None), "arg_rate_limit", None)
        if limit is not None:
            response.data = {
                "detail": limit["message"],
                "code": "rate_limited",
                "scope": limit["scope"],
                "limit": limit["limit"],
                "retry_after": limit["retry_after"],
            }
            response["Retry-After"] = str(limit["retry_after"])
    if response is not None and isinstance(response.data, dict):
        response.data.setdefault("request_id", get_request_id())
    return response
