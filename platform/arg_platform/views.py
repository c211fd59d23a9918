"""Cross-cutting pages: health and the home page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from projects.selectors import project_list_for_user

from .health import health_report, public_report, report_as_json
from .metrics import metrics_token_ok


def _operator(request: HttpRequest) -> bool:
    """A signed-in staff member or the metrics bearer token: who may read the platform's internals."""
    user = request.user
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser)) or metrics_token_ok(
        request.headers.get("Authorization", "")
    )


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Up and ready: 200 ``{"status": "ok"}`` when database, graph store, broker, embedder and active
    release all answer and this process is warm (``arg_platform.health``), else 503 with the status
    ``starting`` (warming up) or ``degraded``. Which part failed and why
    (exception text, project slugs, versions, warm-up steps) only for operators: staff or
    ``Authorization: Bearer $ARG_METRICS_TOKEN``."""
    ok, results = health_report()
    body = report_as_json(ok, results) if _operator(request) else public_report(ok, results)
    return JsonResponse(body, status=200 if ok else 503)


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    projects = project_list_for_user(user=request.user)
    return render(request, "home.html", {"projects": projects})
