"""Content-Security-Policy: what a page of the platform may load and run.

Every response is served with ``settings.CONTENT_SECURITY_POLICY``: scripts only from the site's own
static files (no inline script, no ``on…=`` attribute, no ``eval``), no plugins, no framing, forms and
requests only to the site itself. Inline *styles* stay allowed: the templates set bar widths in
``style`` attributes and htmx adds its indicator rule; CSS cannot run code. A response that already
carries the header keeps its own.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        policy = settings.CONTENT_SECURITY_POLICY
        if policy and HEADER not in response:
            response[HEADER] = policy
        return response
