"""Action idempotency keys through the API door: a key belongs to its caller and node. Another client
reusing a key gets its own execution (never the first client's parameters or result); the same client
reusing its key for other parameters gets a 409 naming the rule, and its request still leaves its one
log row."""

from __future__ import annotations

from typing import Any

import pytest

from inference.models import ActionExecution, InferenceLog
from ontology.releases import release_publish
from taxonomy.models import Role
from taxonomy.packs import pack_import, pack_read
from tests.review.queue_fixtures import DEMO_PACK

pytestmark = pytest.mark.django_db

PROMPT = "resend invoice please"
MINE = {"invoice_id": "INV-2024-004512"}
THEIRS = {"invoice_id": "INV-2024-009999", "recipient_email": "stranger@example.com"}


@pytest.fixture
def clients(token_client: Any) -> tuple[Any, Any]:
    project = pack_import(pack_read(DEMO_PACK)).project
    release_publish(project=project, actor=None)
    customer = Role.objects.get(project=project, key="customer")
    return token_client(project, role=customer, name="app-a"), token_client(
        project, role=customer, name="app-b"
    )


def _infer(client: Any, parameters: dict[str, str], key: str) -> Any:
    body = {"prompt": PROMPT, "parameters": parameters, "idempotency_key": key, "context": {"user_id": "u-1"}}
    return client.post("/api/v1/infer", body, format="json")


def test_a_key_belongs_to_its_caller_over_http(clients: tuple[Any, Any]) -> None:
    app_a, app_b = clients
    first = _infer(app_a, MINE, "k-shared")
    assert first.status_code == 200, first.content
    action = first.json()["outcome"]["action"]
    assert first.json()["outcome"]["kind"] == "ACTION" and action["status"] == "SUCCEEDED", first.content

    theirs = _infer(app_b, THEIRS, "k-shared")  # another client, the same key: simply another key
    assert theirs.status_code == 200, theirs.content
    other = theirs.json()["outcome"]["action"]
    assert other["replayed"] is False and other["parameters"] == THEIRS
    assert "stranger@example.com" not in first.content.decode()

    reused = _infer(app_a, THEIRS, "k-shared")  # the same client, other parameters
    assert reused.status_code == 409, reused.content
    assert reused.json()["rules"] == ["action.idempotency_key_reused"]
    assert InferenceLog.objects.filter(request_id=reused.json()["request_id"]).count() == 1
    assert "stranger@example.com" not in reused.content.decode()

    retried = _infer(app_a, MINE, "k-shared")  # the original request, retried: its stored result
    assert retried.status_code == 200, retried.content
    assert retried.json()["outcome"]["action"]["replayed"] is True
    assert ActionExecution.objects.filter(idempotency_key="k-shared").count() == 2
