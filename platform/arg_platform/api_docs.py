"""The API reference pages: Swagger UI at ``/api/v1/docs/`` and Redoc at ``/api/v1/redoc/``.

Both read the OpenAPI schema (``/api/v1/schema/``) and load their scripts and styles from the
platform's own static files (``drf-spectacular-sidecar``), so they work offline and under the site's
Content-Security-Policy. Swagger UI's start-up script is a separate file (drf-spectacular's split view:
no inline script). Redoc's bundle is served by ``redoc_script``: the sidecar's file with its one
external address — the Redocly logo of its footer, on ``cdn.redoc.ly`` — replaced by an empty inline
image, so the page fetches nothing from outside. Redoc renders the schema in a Web Worker it creates
from a ``blob:`` URL, so its page — and only its page — also allows ``worker-src blob:``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import drf_spectacular_sidecar
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularRedocView
from rest_framework.request import Request
from rest_framework.response import Response

from .csp import HEADER

REDOC_BUNDLE = (
    Path(drf_spectacular_sidecar.__file__).parent
    / "static"
    / "drf_spectacular_sidecar"
    / "redoc"
    / "bundles"
    / "redoc.standalone.js"
)
EXTERNAL_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
EMPTY_IMAGE = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"


@functools.cache
def redoc_bundle() -> bytes:
    """The sidecar's Redoc bundle with the external logo address replaced (read once per process)."""
    return REDOC_BUNDLE.read_text(encoding="utf-8").replace(EXTERNAL_LOGO, EMPTY_IMAGE).encode("utf-8")


@require_GET
@cache_control(public=True, max_age=86_400)
def redoc_script(request: HttpRequest) -> HttpResponse:
    return HttpResponse(redoc_bundle(), content_type="application/javascript; charset=utf-8")


class RedocView(SpectacularRedocView):
    def _redoc_standalone(self) -> str:  # type: ignore[override]
        return reverse("api-redoc-script")

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        response = super().get(request, *args, **kwargs)
        if settings.CONTENT_SECURITY_POLICY:
            response[HEADER] = f"{settings.CONTENT_SECURITY_POLICY}; worker-src 'self' blob:"
        return response
