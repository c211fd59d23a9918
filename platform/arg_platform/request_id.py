"""Request ids: one id per HTTP request (or task), carried into every log line and task message.

The server mints every request id (a UUID4) and answers it in the ``X-Request-ID`` response header;
it is the unique key of the request's log row. An ``X-Request-ID`` the client sends (letters,
digits, ``-_.``, at most 64 characters) is kept as the request's *correlation id*: not unique (any
client may send any value, as often as it likes), stored beside the request id, put on the log lines
and echoed in the ``X-Correlation-ID`` response header. A value that does not match is ignored.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("arg_request_id", default=None)
_correlation_id: contextvars.ContextVar[str] = contextvars.ContextVar("arg_correlation_id", default="")
_VALID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
HEADER = "X-Request-ID"
CORRELATION_HEADER = "X-Correlation-ID"


def get_request_id() -> str | None:
    return _request_id.get()


def set_request_id(value: str | None) -> None:
    _request_id.set(value)


def new_request_id() -> str:
    return uuid.uuid4().hex


class RequestIdMiddleware:
    """Assigns ``request.request_id`` and makes it visible to logging for the request's duration."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get(HEADER, "")
        correlation_id = incoming if _VALID.match(incoming) else ""
        request_id = new_request_id()
        request.request_id = request_id  # type: ignore[attr-defined]
        request.correlation_id = correlation_id  # type: ignore[attr-defined]
        # Not reset on the way out: Django logs the response (e.g. "Unauthorized: /api/…") after the
        # middleware chain returns, and that line must carry the id too. The next request sets its own.
        _request_id.set(request_id)
        _correlation_id.set(correlation_id)
        response = self.get_response(request)
        response[HEADER] = request_id
        if correlation_id:
            response[CORRELATION_HEADER] = correlation_id
        return response


class RequestIdLogFilter(logging.Filter):
    """Puts the current request id on every record as ``record.request_id`` ("-" when none), and the
    client's correlation id, when it sent one, as ``record.correlation_id``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get() or "-"
        correlation_id = _correlation_id.get()
        if correlation_id:
            record.correlation_id = correlation_id
        return True
