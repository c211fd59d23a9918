"""Broker down: the API keeps serving, feedback and request logs are written, /healthz says so.

The broker is pointed at a Redis port nothing listens on — both the settings the health check reads
and the Celery app every ``.delay`` in this process would publish through.
"""

from __future__ import annotations

import socket

import pytest
from django.test import Client

from arg_platform.celery import app as celery_app
from inference.models import Feedback, InferenceLog

OPERATOR_TOKEN = "operator-" + "o" * 32

pytestmark = pytest.mark.django_db


def _dead_redis_url() -> str:
    with socket.socket() as s:  # a port that was free a moment ago: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


def _point_celery_at(url: str, transport_options: dict) -> None:
    """Re-point this process's Celery app (and drop its cached connection and producer pools)."""
    if celery_app._pool is not None:
        celery_app._pool.force_close_all()
    celery_app._pool = None
    celery_app.amqp._producer_pool = None
    celery_app.conf.broker_url = url
    celery_app.conf.broker_transport_options = transport_options


@pytest.fixture
def broker_down(settings):
    url = _dead_redis_url()
    previous = (celery_app.conf.broker_url, dict(celery_app.conf.broker_transport_options or {}))
    settings.CELERY_BROKER_URL = url
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    _point_celery_at(url, {"max_retries": 1})
    yield url
    _point_celery_at(*previous)


def test_infer_and_feedback_keep_working_and_write_their_rows(published, broker_down):
    client = published["client"]
    before = InferenceLog.objects.count()

    answer = client.post("/api/v1/infer", {"prompt": "where is my invoice"}, format="json")
    assert answer.status_code == 200, answer.content
    request_id = answer.json()["request_id"]
    feedback = client.post(
        "/api/v1/feedback", {"request_id": request_id, "kind": "helpful", "helpful": True}, format="json"
    )

    assert feedback.status_code == 200, feedback.content
    assert InferenceLog.objects.count() == before + 1
    log = InferenceLog.objects.get(request_id=request_id)
    assert log.silent_outcome is False
    assert Feedback.objects.filter(log=log, kind="helpful", helpful=True).count() == 1


def test_queueing_a_task_fails_fast_and_the_request_side_survives(broker_down):
    from arg_platform.tasks import heartbeat_task

    with pytest.raises(Exception) as failed:  # noqa: PT011 - kombu wraps the redis error
        heartbeat_task.apply_async(retry=False)
    assert "Connection refused" in str(failed.value) or "Error 111" in str(failed.value)


def test_healthz_names_the_broker_as_down(published, broker_down, settings):
    settings.METRICS_TOKEN = OPERATOR_TOKEN
    assert Client().get("/healthz").json() == {"status": "degraded"}  # anonymous: no details
    response = Client().get("/healthz", HTTP_AUTHORIZATION=f"Bearer {OPERATOR_TOKEN}")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "degraded"
    assert body["failing"] == ["broker"]
    assert body["components"]["broker"]["ok"] is False
    assert (
        "Connection refused" in body["components"]["broker"]["detail"]
        or "Error" in body["components"]["broker"]["detail"]
    )
    assert body["components"]["database"]["ok"] is True


def test_metrics_report_the_broker_down_instead_of_failing(published, broker_down, admin_member):
    admin_member.is_staff = True
    admin_member.save(update_fields=["is_staff"])
    client = Client()
    client.force_login(admin_member)
    response = client.get("/metrics")
    assert response.status_code == 200
    assert "arg_broker_up 0.0" in response.content.decode()
