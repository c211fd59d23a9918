"""GET /healthz: JSON status of every part; 503 naming the failing part."""

from __future__ import annotations

import pytest

from arg_platform import health

pytestmark = pytest.mark.django_db


def test_healthz_ok(client):
    resp = client.get("/healthz")
    assert resp.status_code == 200
    body = resp.json()
    assert body["status"] == "ok"
    assert body["failing"] == []
    assert set(body["components"]) == {"database", "graph_store", "broker", "embedder", "release"}
    assert body["components"]["graph_store"]["info"]["backend"] == "sql"
    assert body["components"]["embedder"]["info"]["dim"] == 384
    assert resp["X-Request-ID"]


def test_healthz_names_the_failing_part(client, monkeypatch):
    def broken() -> tuple[bool, str, dict[str, object]]:
        raise ConnectionError("broker unreachable")

    monkeypatch.setitem(health.CHECKS, "broker", broken)
    resp = client.get("/healthz")
    assert resp.status_code == 503
    body = resp.json()
    assert body["failing"] == ["broker"]
    assert "broker unreachable" in body["components"]["broker"]["detail"]
    assert body["components"]["database"]["ok"] is True


def test_healthz_reports_unreachable_redis_broker(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    resp = client.get("/healthz")
    assert resp.status_code == 503
    assert resp.json()["failing"] == ["broker"]


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
