"""Cross-cutting pages: health and the home page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from projects.selectors import project_list_for_user

from .health import health_report, report_as_json


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """JSON status of database, graph store, broker, embedder and active release; 503 when one is down."""
    ok, results = health_report()
    return JsonResponse(report_as_json(ok, results), status=200 if ok else 503)


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    projects = project_list_for_user(user=request.user)
    return render(request, "home.html", {"projects": projects})
