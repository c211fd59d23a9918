"""GET /metrics: who may scrape it, and what one inference request, one task and one 429 add to it —
summed over processes (prometheus_client multiprocess mode, as under gunicorn)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from arg_platform.tasks import heartbeat_task

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "m" * 40


def _value(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        match = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(match.group(3))
    return total


def _scrape(settings) -> str:
    settings.METRICS_TOKEN = TOKEN
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    return response.content.decode()


def test_metrics_need_the_bearer_secret_or_a_staff_session(settings, make_user):
    settings.METRICS_TOKEN = TOKEN
    anonymous = Client().get("/metrics")
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    person = Client()
    person.force_login(make_user("nina"))
    assert person.get("/metrics").status_code == 403
    staff = make_user("otto")
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    person.force_login(staff)
    assert person.get("/metrics").status_code == 200


def test_an_unset_metrics_token_never_matches(settings):
    settings.METRICS_TOKEN = ""
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401


def test_one_inference_request_shows_up_per_step_outcome_policy_and_release(published, settings):
    before = _scrape(settings)
    response = published["client"].post("/api/v1/infer", {"prompt": "where is my invoice"}, format="json")
    assert response.status_code == 200
    body = response.json()
    after = _scrape(settings)

    for step in body["timings_ms"]:
        assert (
            _value(after, "arg_inference_step_duration_seconds_count", step=step)
            == _value(before, "arg_inference_step_duration_seconds_count", step=step) + 1
        ), step
    kind = body["outcome"]["kind"]
    assert (
        _value(after, "arg_inference_outcomes_total", project="tiny", kind=kind)
        == _value(before, "arg_inference_outcomes_total", project="tiny", kind=kind) + 1
    )
    state = body["policy"]["state"]
    assert (
        _value(after, "arg_inference_policy_total", project="tiny", state=state)
        == _value(before, "arg_inference_policy_total", project="tiny", state=state) + 1
    )
    for flag in body["flags"]:
        assert _value(after, "arg_inference_flags_total", project="tiny", flag=flag) >= 1
    assert (
        _value(after, "arg_http_requests_total", view="infer", method="POST", status="200")
        == _value(before, "arg_http_requests_total", view="infer", method="POST", status="200") + 1
    )
    release_id = str(body["release"]["id"])
    assert _value(after, "arg_release_active", project="tiny", release_id=release_id) == 1.0
    assert _value(after, "arg_queue_depth", queue="celery") >= 0
    assert "arg_broker_up 1.0" in after


def test_task_durations_come_from_the_celery_signals(settings):
    before = _value(_scrape(settings), "arg_task_duration_seconds_count", task="platform.heartbeat")
    heartbeat_task.apply()
    after = _scrape(settings)
    assert _value(after, "arg_task_duration_seconds_count", task="platform.heartbeat", state="SUCCESS") >= 1
    assert _value(after, "arg_task_duration_seconds_count", task="platform.heartbeat") == before + 1
    assert _value(after, "arg_tasks_total", task="platform.heartbeat", state="SUCCESS") >= 1


def test_samples_of_other_processes_are_summed(settings):
    name = "drill-proc"
    before = _value(_scrape(settings), "arg_tasks_total", task=name)
    code = (
        "import django; django.setup();"
        "from arg_platform.metrics import task_observe;"
        f"[task_observe(task={name!r}, state='SUCCESS', seconds=0.2) for _ in range(3)]"
    )
    env = {
        "ARG_DATA_DIR": str(settings.DATA_DIR),
        "DJANGO_SETTINGS_MODULE": "arg_platform.settings",
        "PATH": "/usr/bin:/bin",
        "HF_HUB_OFFLINE": "1",
    }
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, timeout=120)
    assert _value(_scrape(settings), "arg_tasks_total", task=name) == before + 3
