"""Operator-facing views: ``GET /metrics`` for Prometheus and the per-project metrics dashboard.

``/metrics`` is open to ``Authorization: Bearer $ARG_METRICS_TOKEN`` (what a Prometheus scrape job
sends) or to a signed-in staff member (Django ``is_staff``/superuser); everyone else gets 401 (no
credentials) or 403. The platform's metrics span every project, so a project admin is not enough.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from arg_platform.ui import project_view, render_page
from projects.access import ProjectAccess

from .dashboard import WINDOWS, counter_rows, dashboard_series, svg_line_chart, top_series
from .metrics import metrics_payload, metrics_token_ok


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus exposition of every web and worker process (multiprocess mode) plus scrape-time gauges."""
    user = request.user
    if not metrics_token_ok(request.headers.get("Authorization", "")):
        if not user.is_authenticated:
            response = JsonResponse(
                {"detail": "send Authorization: Bearer <ARG_METRICS_TOKEN> or sign in as staff"}, status=401
            )
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
        if not (user.is_staff or user.is_superuser):
            return JsonResponse({"detail": "metrics are for staff (operators) only"}, status=403)
    payload, content_type = metrics_payload()
    return HttpResponse(payload, content_type=content_type)


@project_view("GET")
def dashboard(request: HttpRequest, access: ProjectAccess) -> HttpResponse:
    """Outcome kinds, flags, policy states and pipeline latency of the project over a time window."""
    window = request.GET.get("window", "24h")
    if window not in WINDOWS:
        window = "24h"
    data = dashboard_series(project=access.project, window=window)
    charts: list[tuple[str, str, Mapping[str, Sequence[float | None]], str]] = [
        ("outcomes", "Requests by outcome kind", top_series(data.outcomes), ""),
        ("flags", "Flags raised", top_series(data.flags), ""),
        ("policy", "Policy states", top_series(data.policy), ""),
        (
            "latency",
            "Pipeline latency (P50 / P95 per bucket)",
            {"P50": data.latency_p50, "P95": data.latency_p95},
            " ms",
        ),
    ]
    drawn = [
        (key, title, svg_line_chart(series, data.bucket_labels, title=title, unit=unit))
        for key, title, series, unit in charts
    ]
    return render_page(
        request,
        "dashboard/dashboard.html",
        {
            "nav": "dashboard",
            "data": data,
            "charts": drawn,
            "windows": list(WINDOWS),
            "outcome_rows": counter_rows(data.outcome_totals),
            "flag_rows": counter_rows(data.flag_totals, whole=data.total),
            "policy_rows": counter_rows(data.policy_totals),
        },
    )
