"""Request ids: one id per HTTP request (or task), carried into every log line and task message.

A client may send ``X-Request-ID`` (letters, digits, ``-_.``, at most 64 characters); otherwise a
UUID4 is minted. The id is echoed in the response header of the same name.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("arg_request_id", default=None)
_VALID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
HEADER = "X-Request-ID"


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
        request_id = incoming if _VALID.match(incoming) else new_request_id()
        request.request_id = request_id  # type: ignore[attr-defined]
        # Not reset on the way out: Django logs the response (e.g. "Unauthorized: /api/…") after the
        # middleware chain returns, and that line must carry the id too. The next request sets its own.
        _request_id.set(request_id)
        response = self.get_response(request)
        response[HEADER] = request_id
        return response


class RequestIdLogFilter(logging.Filter):
    """Puts the current request id on every record as ``record.request_id`` ("-" when none)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get() or "-"
        return True
