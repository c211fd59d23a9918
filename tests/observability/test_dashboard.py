"""The per-project metrics dashboard: outcomes, flags, policy states and latency over time, as inline
SVG drawn on the server from the request log."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from arg_platform.dashboard import dashboard_series, svg_line_chart
from inference.models import InferenceLog

pytestmark = pytest.mark.django_db

PROMPTS = [
    "where is my invoice",
    "get invoice pdf",
    "I cannot log in",
    "tell me a joke about whales",
    "idiot",
]


@pytest.fixture
def logged(published):
    client = published["client"]
    ids = [client.post("/api/v1/infer", {"prompt": p}, format="json").json()["request_id"] for p in PROMPTS]
    # spread them over the last day: two requests 5 hours ago, the others now
    InferenceLog.objects.filter(request_id__in=ids[:2]).update(created_at=timezone.now() - timedelta(hours=5))
    return published


def test_series_count_each_request_once_in_its_hour(logged):
    data = dashboard_series(project=logged["project"], window="24h")
    assert data.total == len(PROMPTS)
    assert len(data.bucket_labels) == 24
    assert sum(sum(counts) for counts in data.outcomes.values()) == len(PROMPTS)
    assert sum(sum(counts) for counts in data.policy.values()) == len(PROMPTS)
    per_bucket = [sum(counts[i] for counts in data.outcomes.values()) for i in range(24)]
    assert per_bucket[-1] == 3 and per_bucket[-6] == 2 and sum(per_bucket) == 5
    logs = InferenceLog.objects.filter(project=logged["project"])
    assert dict(data.outcome_totals) == {
        kind: logs.filter(outcome_kind=kind).count()
        for kind in set(logs.values_list("outcome_kind", flat=True))
    }
    assert dict(data.policy_totals)["BLOCK"] == 1  # "idiot" is a blocked term of the customer policy
    flags_in_log = sorted(f for row in logs.values_list("flags", flat=True) for f in row)
    assert sorted(f for f, n in data.flag_totals for _ in range(n)) == flags_in_log
    assert data.p95_ms is not None and data.p95_ms >= data.p50_ms > 0


def test_the_page_draws_the_charts_and_tables_for_a_reviewer(logged, make_user):
    client = Client()
    client.force_login(make_user("ria", "reviewer", logged["project"]))
    page = client.get(f"/p/{logged['project'].slug}/dashboard/?window=7d")
    assert page.status_code == 200
    html = page.content.decode()
    for chart in ("outcomes", "flags", "policy", "latency"):
        assert f'id="chart-{chart}"' in html
    assert html.count("<svg") == 4
    assert 'data-series="BLOCK"' in html and 'data-series="P95"' in html
    assert '<strong id="stat-total">5</strong>' in html
    assert '<option value="7d" selected>' in html
    assert "<script" not in html.split('id="chart-outcomes"')[1].split("</section>")[0]


def test_an_unknown_window_falls_back_to_a_day_and_an_empty_project_draws_empty_charts(project, make_user):
    client = Client()
    client.force_login(make_user("eve", "expert", project))
    page = client.get(f"/p/{project.slug}/dashboard/?window=forever")
    assert page.status_code == 200
    assert page.content.decode().count("no requests in this window") == 4


def test_svg_escapes_series_names():
    svg = svg_line_chart({"<script>x</script>": [1.0, 2.0]}, ["a", "b"], title="t & u")
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "t &amp; u" in svg
