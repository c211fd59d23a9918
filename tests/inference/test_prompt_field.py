"""The prompt of ``POST /api/v1/infer`` through the API door: one length limit (4,000 characters) in the
published schema, the serializer, the envelope and the browser's form; anything but a JSON string is a
400 naming the field — and the refused request still leaves its one log row."""

from __future__ import annotations

import pytest

from inference.models import InferenceLog
from inference.steps.envelope import MAX_PROMPT_CHARS
from inference.views import TryForm
from ontology.releases import release_publish
from taxonomy.models import Role
from taxonomy.packs import pack_import, pack_read
from tests.taxonomy.test_packs import SMALL

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_app(token_client):
    project = pack_import(pack_read(SMALL)).project
    release_publish(project=project, actor=None)
    return token_client(project, role=Role.objects.get(project=project, key="customer"))


@pytest.mark.parametrize(
    "prompt,kind",
    [
        (42, "a number"),
        (3.5, "a number"),
        (["invoice"], "a list"),
        ({"text": "invoice"}, "an object"),
        (True, "a boolean"),
    ],
)
def test_a_prompt_that_is_not_a_string_is_a_400_with_a_field_message(client_app, prompt, kind):
    before = InferenceLog.objects.count()
    resp = client_app.post("/api/v1/infer", {"prompt": prompt}, format="json")
    assert resp.status_code == 400, resp.content
    body = resp.json()
    assert body["rules"] == ["request.prompt"]
    assert f"the prompt must be text (a JSON string), not {kind}" in str(body)
    assert InferenceLog.objects.count() == before + 1
    assert InferenceLog.objects.latest("created_at").outcome_status == "REJECTED"


def test_the_limit_is_the_same_in_the_schema_the_api_and_the_form(client_app):
    schema = client_app.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    prompt_schema = schema["components"]["schemas"]["InferRequestRequest"]["properties"]["prompt"]
    assert prompt_schema["maxLength"] == MAX_PROMPT_CHARS == 4000
    assert TryForm.base_fields["prompt"].max_length == MAX_PROMPT_CHARS

    at_limit = client_app.post("/api/v1/infer", {"prompt": "x" * MAX_PROMPT_CHARS}, format="json")
    assert at_limit.status_code == 200, at_limit.content
    for too_long in ("x" * (MAX_PROMPT_CHARS + 1), "invoice " + " " * MAX_PROMPT_CHARS):
        resp = client_app.post("/api/v1/infer", {"prompt": too_long}, format="json")
        assert resp.status_code == 400
        assert resp.json()["rules"] == ["request.prompt_size"]
        assert f"at most {MAX_PROMPT_CHARS} are accepted" in str(resp.json())
