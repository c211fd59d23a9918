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
    assert body["ready"] is True
    assert set(body["components"]) == {"database", "graph_store", "broker", "embedder", "release", "warm_up"}
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
    # not warm: still nothing but the status
    health.readiness.begin()
    try:
        monkeypatch.setitem(health.CHECKS, "broker", health.check_broker)
        for caller in callers:
            resp = caller.get("/healthz")
            assert (resp.status_code, resp.json()) == (503, {"status": "starting"})
    finally:
        health.readiness.reset()


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


@pytest.fixture
def fresh_readiness():
    """This process's warm-up state, restored after the test (the test process itself never warms up)."""
    health.readiness.reset()
    yield health.readiness
    health.readiness.reset()


def test_healthz_is_not_ready_while_the_process_warms_up(operator, client, fresh_readiness):
    """A worker that has begun but not finished its warm-up answers 503 ``starting`` (anonymous callers
    too: a load balancer's probe sends no token), and 200 once every step ran."""
    fresh_readiness.begin()
    fresh_readiness.step_done("embedder", 12.5)
    resp = operator.get("/healthz")
    assert resp.status_code == 503
    body = resp.json()
    assert (body["status"], body["ready"], body["failing"]) == ("starting", False, ["warm_up"])
    assert body["components"]["warm_up"]["info"]["state"] == "warming"
    assert body["components"]["warm_up"]["info"]["steps_ms"] == {"embedder": 12.5}
    anonymous = type(client)()
    assert (anonymous.get("/healthz").status_code, anonymous.get("/healthz").json()) == (
        503,
        {"status": "starting"},
    )
    fresh_readiness.finish()
    resp = operator.get("/healthz")
    assert (resp.status_code, resp.json()["status"], resp.json()["ready"]) == (200, "ok", True)
    assert resp.json()["components"]["warm_up"]["info"]["state"] == "ready"


def test_a_failed_warm_up_step_is_degraded_and_names_the_step(operator, fresh_readiness):
    def broken() -> None:
        raise OSError("model folder unreadable")

    ran = []
    state = health.warm_up_run([("embedder", broken), ("releases", lambda: ran.append("releases"))])
    assert ran == ["releases"]  # the next steps still run
    assert state.state == "failed"
    resp = operator.get("/healthz")
    assert resp.status_code == 503
    body = resp.json()
    assert (body["status"], body["ready"], body["failing"]) == ("degraded", False, ["warm_up"])
    assert "embedder: OSError: model folder unreadable" in body["components"]["warm_up"]["detail"]


def test_warm_up_loads_what_the_first_request_would(operator, make_project, fresh_readiness, settings):
    """The real warm-up steps: afterwards the encoder is loaded, the active release's runtime is built
    and this process reports ready with each step's duration."""
    from arg_platform.embedder import get_embedder
    from inference import runtime as runtime_module
    from ontology.snapshot_registry import registry

    project = make_project("warm")
    release = release_publish(project=project, actor=None)
    registry.clear()
    runtime_module.runtime_cache_clear()
    state = health.warm_up_run(runtime_module.warm_up_steps())
    assert state.state == "ready", state.error
    assert get_embedder().info().loaded is True
    assert (project.pk, release.pk, release.checksum) in runtime_module._cache
    resp = operator.get("/healthz")
    assert resp.status_code == 200
    steps = resp.json()["components"]["warm_up"]["info"]["steps_ms"]
    assert list(steps) == [
        "urls",
        "embedder",
        "releases",
        "actions",
        "pii",
        "metrics",
        "lexicon",
    ]  # no labels


def test_warm_up_embeds_each_projects_routing_terms_for_the_curation_checks(fresh_readiness, monkeypatch):
    """A curator's first checked write compares its terms with every other label's: warm-up has put
    the draft taxonomy's terms in the encoder's cache, in chunks (a heartbeat after each)."""
    from pathlib import Path

    from arg_platform.embedder import content_hash, get_embedder
    from inference import runtime as runtime_module
    from taxonomy.packs import pack_import, pack_read
    from taxonomy.term_guard import routing_term_texts

    pack = Path(__file__).resolve().parents[1] / "taxonomy" / "fixtures" / "small_pack.yaml"
    project = pack_import(pack_read(pack)).project
    texts = routing_term_texts(project)
    assert len(texts) > 3
    monkeypatch.setattr(runtime_module, "TERM_WARM_UP_CHUNK", 3)
    embedder = get_embedder()
    monkeypatch.setattr(embedder, "cache", type(embedder.cache)(1000))  # an empty cache for this test
    steps = dict(runtime_module.warm_up_steps())
    names = [n for n in steps if n.startswith("terms:")]
    assert names == [f"terms:{project.slug}:{n}" for n in range((len(texts) + 2) // 3)]
    for name in names:
        steps[name]()
    assert all(embedder.cache.get(content_hash(t)) is not None for t in texts)
    assert len(embedder.cache) == len(texts)
