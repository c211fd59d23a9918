"""API plumbing shared by every app: the exception handler that turns domain errors into 4xx JSON."""

from __future__ import annotations

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from .errors import DomainError
from .request_id import get_request_id


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        body = exc.as_dict()
        body["request_id"] = get_request_id()
        return Response(body, status=exc.status_code)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict):
        response.data.setdefault("request_id", get_request_id())
    return response
