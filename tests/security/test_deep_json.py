"""A JSON body nested without bound is a 400, never a 500: the API's parser refuses more than
``MAX_JSON_DEPTH`` levels, before anything walks the value."""

from __future__ import annotations

from typing import Any

import pytest

from arg_platform.parsers import MAX_JSON_DEPTH, json_depth_exceeds
from inference.models import InferenceLog

pytestmark = pytest.mark.django_db


def _nested(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


@pytest.fixture
def expert_client(client: Any, make_project: Any, make_user: Any) -> Any:
    project = make_project("acme")
    client.force_login(make_user("erin", role="expert", project=project))
    return client


@pytest.mark.parametrize(
    "body",
    [
        '{"prompt": ' + "[" * 100_000 + "]" * 100_000 + "}",  # past the interpreter's stack
        '{"prompt": "resend my invoice", "parameters": ' + _nested(MAX_JSON_DEPTH + 1) + "}",
    ],
    ids=["stack-deep", "just-over-the-bound"],
)
def test_a_deeply_nested_infer_body_is_a_400_with_its_log_row(expert_client: Any, body: str) -> None:
    response = expert_client.post("/api/v1/infer?project=acme", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["rules"] == ["request.body"]
    assert InferenceLog.objects.filter(request_id=response.json()["request_id"]).count() == 1


def test_every_json_door_refuses_a_stack_deep_body(expert_client: Any) -> None:
    body = "[" * 100_000 + "]" * 100_000
    for path in ("/api/v1/feedback?project=acme", "/api/v1/projects/acme/labels/"):
        response = expert_client.post(path, body, content_type="application/json")
        assert response.status_code == 400, (path, response.content)
        assert "nests deeper than" in response.content.decode()


def test_the_depth_bound_counts_objects_and_arrays() -> None:
    assert not json_depth_exceeds({"a": [{"b": 1}]}, limit=3)
    assert json_depth_exceeds({"a": [{"b": []}]}, limit=3)
    assert not json_depth_exceeds("text", limit=0)
