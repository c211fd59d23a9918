"""POST /api/v1/infer and /api/v1/feedback through the API door: one log row per request, policy
first, clear 4xx for bad input, explicit feedback only."""

from __future__ import annotations

import json

import pytest

from inference.models import InferenceLog
from ontology.releases import release_publish
from taxonomy.models import Role
from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db


@pytest.fixture
def tiny():
    project = pack_import(pack_read(SMALL)).project
    release_publish(project=project, actor=None)
    return project


@pytest.fixture
def client_app(tiny, token_client):
    return token_client(tiny, role=Role.objects.get(project=tiny, key="customer"))


def test_infer_routes_an_info_request_and_logs_it(client_app):
    resp = client_app.post(
        "/api/v1/infer",
        {"prompt": "where can I download my invoice pdf", "context": {"session_id": "s-1", "channel": "web"}},
        format="json",
    )
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["outcome"]["kind"] == "INFO"
    assert body["labels"] == {"L00002": pytest.approx(body["labels"]["L00002"])}
    assert body["release"]["version"] == 1
    assert body["outcome"]["info_status"] in ("INFO_UNCERTAIN_SUCCESS", "INFO_LOW_CONFIDENCE")
    assert body["outcome"]["citations"][0]["node_id"] == "N-invoice-download"
    assert body["path"]["nodes"][0]["node_id"] == "N-invoice-download"
    log = InferenceLog.objects.get(request_id=body["request_id"])
    assert log.outcome_kind == "INFO" and log.silent_outcome is True
    assert log.session_id == "s-1" and log.release_version == 1
    assert set(log.timings_ms) >= {"envelope", "policy", "lexical", "weaver", "landing", "total"}
    assert 0.0 <= log.outcome_details["c_info_components"]["semantic"] <= 1.0


def test_blocked_prompt_never_reaches_retrieval(client_app):
    resp = client_app.post("/api/v1/infer", {"prompt": "you idiot, fix my invoice"}, format="json")
    assert resp.status_code == 200
    assert resp.json()["outcome"]["kind"] == "REFUSE"
    log = InferenceLog.objects.get(request_id=resp.json()["request_id"])
    assert log.policy_state == "BLOCK"
    assert "lexical" not in log.timings_ms and "weaver" not in log.timings_ms and log.labels_raw == {}


@pytest.mark.parametrize(
    "payload,rule",
    [
        ({"prompt": ""}, "request.prompt_empty"),
        ({"prompt": "x" * 5000}, "request.prompt_size"),
        ({"prompt": "hello\x00world"}, "request.prompt_binary"),
        ('{"prompt": "hello \\ud800 world"}', "request.prompt"),  # a lone surrogate, as JSON sends it
        (
            {"prompt": "hello\x00world", "context": {"history": "no"}},
            "request.context",
        ),  # the serializer path
        ({"prompt": "invoice", "context": {"role": "ghost"}}, "request.role_forbidden"),
        ({"prompt": "invoice", "context": {"typology": "nope"}}, "request.typology_unknown"),
        ({"prompt": "invoice", "context": {"history": "not a list"}}, "request.context"),
        ({"prompt": "invoice", "parameters": {"invoice_number": "4\x002"}}, "request.parameters"),
        ({"prompt": "invoice", "parameters": {"n": [{"deep\x00key": 1}]}}, "request.parameters"),
        ({"nothing": 1}, "request.prompt"),
    ],
)
def test_bad_input_is_a_clear_400_and_still_one_log_row(client_app, payload, rule):
    before = InferenceLog.objects.count()
    if isinstance(payload, str):  # a raw JSON body
        resp = client_app.post("/api/v1/infer", data=payload, content_type="application/json")
        payload = json.loads(payload)
    else:
        resp = client_app.post("/api/v1/infer", payload, format="json")
    assert resp.status_code == 400, resp.content
    assert rule in resp.json()["rules"]
    assert InferenceLog.objects.count() == before + 1
    log = InferenceLog.objects.latest("created_at")
    assert log.error
    # what no database stores (PostgreSQL refuses NUL in text; no encoding carries a lone surrogate)
    # is logged as U+FFFD, the rest of the prompt as sent
    if "prompt" in payload:
        assert log.prompt == payload["prompt"].replace("\x00", "\ufffd").replace("\ud800", "\ufffd")


def test_a_token_without_role_must_name_a_known_role(tiny, token_client):
    client = token_client(tiny, name="no-role")
    resp = client.post("/api/v1/infer", {"prompt": "invoice", "context": {"role": "ghost"}}, format="json")
    assert resp.status_code == 400
    assert resp.json()["rules"] == ["request.role_unknown"]
    ok = client.post(
        "/api/v1/infer", {"prompt": "download my invoice", "context": {"role": "customer"}}, format="json"
    )
    assert ok.status_code == 200


def test_malformed_json_body_is_400_and_logged(client_app):
    resp = client_app.post("/api/v1/infer", data="{not json", content_type="application/json")
    assert resp.status_code == 400
    assert InferenceLog.objects.filter(error__contains="JSON").count() == 1


def test_project_without_release_gets_409_and_a_log_row(token_client, make_project):
    other = make_project("empty")
    resp = token_client(other).post("/api/v1/infer", {"prompt": "hello"}, format="json")
    assert resp.status_code == 409
    assert "no active release" in resp.json()["detail"]
    assert InferenceLog.objects.filter(project=other).count() == 1


def test_anonymous_callers_leave_no_row(tiny):
    from rest_framework.test import APIClient

    resp = APIClient().post("/api/v1/infer", {"prompt": "invoice"}, format="json")
    assert resp.status_code in (401, 403)
    assert InferenceLog.objects.count() == 0


def test_feedback_turns_uncertain_into_confirmed_only_on_explicit_signal(client_app):
    body = client_app.post(
        "/api/v1/infer", {"prompt": "where can I download my invoice pdf"}, format="json"
    ).json()
    rid = body["request_id"]
    assert InferenceLog.objects.get(request_id=rid).outcome_status != "INFO_CONFIRMED_SUCCESS"
    resp = client_app.post(
        "/api/v1/feedback",
        {"request_id": rid, "kind": "helpful", "helpful": True, "idempotency_key": "fb-1"},
        format="json",
    )
    assert resp.status_code == 200
    assert resp.json() == {
        "request_id": rid,
        "outcome_status": "INFO_CONFIRMED_SUCCESS",
        "silent_outcome": False,
    }
    again = client_app.post(
        "/api/v1/feedback",
        {"request_id": rid, "kind": "helpful", "helpful": True, "idempotency_key": "fb-1"},
        format="json",
    )
    assert again.status_code == 200
    assert InferenceLog.objects.get(request_id=rid).feedback.count() == 1
    bad = client_app.post("/api/v1/feedback", {"request_id": rid, "kind": "helpful"}, format="json")
    assert bad.status_code == 400 and "helpful" in bad.json()
    missing = client_app.post(
        "/api/v1/feedback", {"request_id": "nope", "kind": "helpful", "helpful": False}, format="json"
    )
    assert missing.status_code == 404


def test_feedback_cannot_reach_another_projects_request(client_app, token_client, make_project):
    rid = client_app.post("/api/v1/infer", {"prompt": "download my invoice"}, format="json").json()[
        "request_id"
    ]
    stranger = token_client(make_project("stranger"))
    resp = stranger.post(
        "/api/v1/feedback", {"request_id": rid, "kind": "helpful", "helpful": False}, format="json"
    )
    assert resp.status_code == 404
    assert InferenceLog.objects.get(request_id=rid).silent_outcome is True
