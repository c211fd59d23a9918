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


def test_a_client_token_without_a_role_cannot_pick_one(tiny, token_client):
    """A client token's role is fixed by the token: without one it may name no role (the hole this
    closes: any caller could pick the most permissive policy), and in a project whose release
    governs by role it must be given one."""
    client = token_client(tiny, name="no-role")
    picked = client.post(
        "/api/v1/infer", {"prompt": "download my invoice", "context": {"role": "customer"}}, format="json"
    )
    assert picked.status_code == 400
    assert picked.json()["rules"] == ["request.role_forbidden"]
    assert "carries no role" in json.dumps(picked.json())
    unnamed = client.post("/api/v1/infer", {"prompt": "download my invoice"}, format="json")
    assert unnamed.status_code == 400 and unnamed.json()["rules"] == ["request.role_required"]
    assert InferenceLog.objects.filter(error__contains="role").count() == 2  # both refusals are logged


def test_a_curator_may_name_a_role_to_test_its_policy(tiny):
    """A person who may edit the project's policies (an expert) may call as any of the release's
    roles, as the browser's "Try a request" does; an unknown role is still refused."""
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from projects.models import Membership, PlatformRole
    from projects.services import api_token_create

    expert = get_user_model().objects.create_user("eve-expert", password="pw-eve-expert-1")
    Membership.objects.create(user=expert, project=tiny, role=PlatformRole.EXPERT)
    _, key = api_token_create(project=tiny, name="eve-personal", user=expert)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    ok = client.post(
        "/api/v1/infer", {"prompt": "download my invoice", "context": {"role": "customer"}}, format="json"
    )
    assert ok.status_code == 200, ok.content
    ghost = client.post("/api/v1/infer", {"prompt": "invoice", "context": {"role": "ghost"}}, format="json")
    assert ghost.status_code == 400 and ghost.json()["rules"] == ["request.role_unknown"]


def test_a_reused_client_request_id_costs_no_log_row_and_no_5xx(
    tiny, client_app, token_client, make_user, client
):
    """Any client may send any X-Request-ID, as often as it likes, in any project: each request gets
    its own server-minted id and log row, the client's id is kept (not unique) and echoed."""
    elsewhere = pack_import(pack_read(SMALL), project_slug="tiny-elsewhere").project
    release_publish(project=elsewhere, actor=None)
    other = token_client(elsewhere, role=Role.objects.get(project=elsewhere, key="customer"), name="stranger")
    before = InferenceLog.objects.count()
    answers = [
        caller.post(
            "/api/v1/infer", {"prompt": "download my invoice"}, format="json", HTTP_X_REQUEST_ID="order-42"
        )
        for caller in (client_app, client_app, other)
    ]
    bad = client_app.post("/api/v1/infer", {"prompt": ""}, format="json", HTTP_X_REQUEST_ID="order-42")
    assert [a.status_code for a in answers] == [200, 200, 200] and bad.status_code == 400
    ids = [a.json()["request_id"] for a in [*answers, bad]]
    assert len(set(ids)) == 4 and "order-42" not in ids
    assert all(
        a["X-Correlation-ID"] == "order-42" and a["X-Request-ID"] == a.json()["request_id"] for a in answers
    )
    assert InferenceLog.objects.count() == before + 4
    rows = InferenceLog.objects.filter(request_id__in=ids)
    assert {row.correlation_id for row in rows} == {"order-42"} and rows.count() == 4
    assert {row.project_id for row in rows} == {tiny.pk, elsewhere.pk}
    client.force_login(make_user("erin", "expert", tiny))
    trace = client.get(f"/p/tiny/traces/{ids[0]}/").content.decode()
    assert 'id="trace-correlation"' in trace and "order-42" in trace


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
