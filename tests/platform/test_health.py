"""GET /healthz: JSON status of every part; 503 naming the failing part."""

from __future__ import annotations

import pytest

from arg_platform import health
from ontology.releases import release_publish

pytestmark = pytest.mark.django_db


OPERATOR_TOKEN = "operator-" + "o" * 32


@pytest.fixture
def operator(client, settings):
    """A client sending the metrics bearer token, as a monitoring probe of the operators would."""
    settings.METRICS_TOKEN = OPERATOR_TOKEN
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {OPERATOR_TOKEN}"
    return client


def test_healthz_ok(operator):
    resp = operator.get("/healthz")
    assert resp.status_code == 200
    body = resp.json()
    assert body["status"] == "ok"
    assert body["failing"] == []
    assert set(body["components"]) == {"database", "graph_store", "broker", "embedder", "release"}
    assert body["components"]["graph_store"]["info"]["backend"] == "sql"
    assert body["components"]["embedder"]["info"]["dim"] == 384
    assert resp["X-Request-ID"]


def test_healthz_names_the_failing_part(operator, monkeypatch):
    def broken() -> tuple[bool, str, dict[str, object]]:
        raise ConnectionError("broker unreachable")

    monkeypatch.setitem(health.CHECKS, "broker", broken)
    resp = operator.get("/healthz")
    assert resp.status_code == 503
    body = resp.json()
    assert body["failing"] == ["broker"]
    assert "broker unreachable" in body["components"]["broker"]["detail"]
    assert body["components"]["database"]["ok"] is True


def test_healthz_reports_unreachable_redis_broker(operator, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    resp = operator.get("/healthz")
    assert resp.status_code == 503
    assert resp.json()["failing"] == ["broker"]


def test_anonymous_healthz_says_only_up_or_down(client, make_project, make_user, monkeypatch, settings):
    """No project slug, version, component name or exception text for a caller who is not an operator:
    anonymous, a signed-in person who is not staff, or a wrong bearer token."""
    settings.METRICS_TOKEN = OPERATOR_TOKEN
    project = make_project("secret-customer")
    release_publish(project=project, actor=None)
    member = make_user("member")
    signed_in = type(client)()
    signed_in.force_login(member)
    callers = [
        client,
        signed_in,
        type(client)(HTTP_AUTHORIZATION="Bearer " + "x" * 40),
    ]
    for caller in callers:
        resp = caller.get("/healthz")
        assert (resp.status_code, resp.json()) == (200, {"status": "ok"})

    def broken() -> tuple[bool, str, dict[str, object]]:
        raise ConnectionError("redis at 10.0.0.7:6379 refused")

    monkeypatch.setitem(health.CHECKS, "broker", broken)
    for caller in callers:
        resp = caller.get("/healthz")
        assert (resp.status_code, resp.json()) == (503, {"status": "degraded"})
        assert b"10.0.0.7" not in resp.content and b"secret-customer" not in resp.content
    staff = type(client)()
    ops = make_user("ops")
    ops.is_staff = True
    ops.save()
    staff.force_login(ops)
    details = staff.get("/healthz")
    assert details.status_code == 503 and details.json()["failing"] == ["broker"]
    assert b"secret-customer" in details.content  # the active release names its project


def test_schema_is_openapi3(client):
    resp = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert resp.status_code == 200
    schema = resp.json()
    assert schema["openapi"].startswith("3.")
    assert "/api/v1/projects/{project}/labels/" in schema["paths"]


def test_the_server_mints_the_request_id_and_keeps_the_clients_as_correlation_id(client, caplog):
    import logging

    from arg_platform.request_id import RequestIdLogFilter

    caplog.handler.addFilter(RequestIdLogFilter())
    with caplog.at_level(logging.WARNING):
        resp = client.get("/api/v1/projects/", HTTP_X_REQUEST_ID="req-abc-123")
    minted = resp["X-Request-ID"]
    assert minted != "req-abc-123" and len(minted) == 32
    assert resp["X-Correlation-ID"] == "req-abc-123"
    assert resp.status_code in (401, 403)
    assert any(
        getattr(r, "request_id", None) == minted and getattr(r, "correlation_id", None) == "req-abc-123"
        for r in caplog.records
    )


def test_an_invalid_client_request_id_is_ignored(client):
    resp = client.get("/healthz", HTTP_X_REQUEST_ID="bad id with spaces")
    assert resp["X-Request-ID"] != "bad id with spaces"
    assert len(resp["X-Request-ID"]) == 32
    assert "X-Correlation-ID" not in resp


def test_json_log_format_carries_request_id():
    import json
    import logging

    from arg_platform.logs import JsonFormatter

    record = logging.LogRecord("arg", logging.INFO, __file__, 1, "hello %s", ("world",), None)
    record.request_id = "rid-1"
    record.step = "landing"
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "hello world"
    assert line["request_id"] == "rid-1"
    assert line["step"] == "landing"
    assert line["level"] == "INFO"
