"""No raw PII in logs or what is derived from them, through the doors a customer and a reviewer use.

A customer pastes a card number and an e-mail address: the API answers the question and warns not to
share card numbers; the InferenceLog, the feedback comment, the action record and the reviewer's trace
page hold the Memory Guard's placeholders and the kinds found, never the values. Rows written before
the guard ran on logs are scrubbed by the migration that added it."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps

from inference.models import ActionExecution, Feedback, InferenceLog
from ontology.releases import release_publish
from taxonomy.models import Role
from taxonomy.packs import pack_import, pack_read
from tests.review.queue_fixtures import DEMO_PACK

pytestmark = pytest.mark.django_db

CARD = "4111 1111 1111 1111"
EMAIL = "maria.lopez@example.com"
PROMPT = f"my card {CARD} was charged twice this month, how do I get a refund? write to {EMAIL}"


@pytest.fixture
def demo(token_client: Any) -> tuple[Any, Any]:
    project = pack_import(pack_read(DEMO_PACK)).project
    release_publish(project=project, actor=None)
    customer = Role.objects.get(project=project, key="customer")
    return project, token_client(project, role=customer, name="shop")


def _infer(client: Any, body: dict[str, Any]) -> Any:
    response = client.post("/api/v1/infer", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_card_number_gets_an_answer_with_a_warning_and_the_log_keeps_placeholders(
    demo: tuple[Any, Any], make_user: Any, client: Any
) -> None:
    project, app = demo
    history = [f"earlier I wrote from {EMAIL}"]
    body = _infer(app, {"prompt": PROMPT, "context": {"user_id": "cust-77", "history": history}})

    outcome = body["outcome"]
    assert outcome["kind"] not in {"REFUSE", "REFOCUS"}, body
    answer, _, notice = outcome["answer"].rpartition("\n\n")
    assert answer.strip(), body  # the question is answered, not only warned about
    assert notice.startswith("For your safety, please don't share card numbers here"), notice
    assert CARD not in outcome["answer"]

    log = InferenceLog.objects.get(request_id=body["request_id"])
    assert log.prompt == (
        "my card <CARD> was charged twice this month, how do I get a refund? write to <EMAIL>"
    )
    assert log.pii == ["CARD", "EMAIL"]
    assert log.context["history"] == ["earlier I wrote from <EMAIL>"]
    assert log.context["user_id"] == "cust-77"  # the client's identifier: what erasure by user id finds
    stored = str(InferenceLog.objects.filter(pk=log.pk).values().get())
    assert "4111" not in stored and "maria" not in stored

    feedback = app.post(
        "/api/v1/feedback",
        {
            "request_id": log.request_id,
            "kind": "helpful",
            "helpful": False,
            "comment": f"call me back at {EMAIL}",
        },
        format="json",
    )
    assert feedback.status_code in {200, 201}, feedback.content
    assert Feedback.objects.get(log=log).comment == "call me back at <EMAIL>"

    reviewer = make_user("rita-reviewer", "reviewer", project)
    client.force_login(reviewer)
    page = client.get(f"/p/{project.slug}/traces/{log.request_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "&lt;CARD&gt;" in html and "4111" not in html and "maria" not in html


def test_a_prompt_without_pii_is_stored_as_sent(demo: tuple[Any, Any]) -> None:
    _, app = demo
    prompt = "how do I get a refund for a double charge on invoice INV-2024-004512?"
    body = _infer(app, {"prompt": prompt})
    log = InferenceLog.objects.get(request_id=body["request_id"])
    assert (log.prompt, log.pii) == (prompt, [])
    assert "don't share" not in body["outcome"]["answer"]


def test_action_parameters_are_stored_scrubbed(demo: tuple[Any, Any]) -> None:
    _, app = demo
    parameters = {"invoice_id": "INV-2024-004512", "recipient_email": EMAIL}
    body = _infer(
        app, {"prompt": "resend invoice please", "parameters": parameters, "idempotency_key": "pii-1"}
    )
    assert body["outcome"]["kind"] == "ACTION", body
    assert body["outcome"]["action"]["parameters"] == parameters  # the caller sees what it sent

    execution = ActionExecution.objects.get(request_id=body["request_id"])
    assert execution.parameters == {"invoice_id": "INV-2024-004512", "recipient_email": "<EMAIL>"}
    log = InferenceLog.objects.get(request_id=body["request_id"])
    assert log.action["parameters"]["recipient_email"] == "<EMAIL>"
    assert "EMAIL" in log.pii
    assert EMAIL not in str(InferenceLog.objects.filter(pk=log.pk).values().get())


def test_the_migration_scrubs_rows_written_before_it(demo: tuple[Any, Any]) -> None:
    project, _ = demo
    raw = InferenceLog.objects.create(
        project=project,
        request_id="r-before-guard",
        prompt=PROMPT,
        context={"user_id": "cust-1", "history": [f"from {EMAIL}"]},
        action={"parameters": {"recipient_email": EMAIL}},
        answer=f"We wrote to {EMAIL}.",
    )
    Feedback.objects.create(log=raw, kind=Feedback.Kind.HELPFUL, comment=f"card {CARD}")
    plain = InferenceLog.objects.create(project=project, request_id="r-plain", prompt="where is my invoice")

    migration = importlib.import_module("inference.migrations.0006_inferencelog_pii")
    migration.scrub_existing(apps, None)
    migration.scrub_existing(apps, None)  # a second run finds nothing left to change

    raw.refresh_from_db()
    assert raw.prompt.startswith("my card <CARD> was charged") and raw.prompt.endswith("write to <EMAIL>")
    assert raw.context == {"user_id": "cust-1", "history": ["from <EMAIL>"]}
    assert raw.action == {"parameters": {"recipient_email": "<EMAIL>"}}
    assert raw.answer == "We wrote to <EMAIL>." and raw.pii == ["CARD", "EMAIL"]
    assert Feedback.objects.get(log=raw).comment == "card <CARD>"
    plain.refresh_from_db()
    assert (plain.prompt, plain.pii) == ("where is my invoice", [])
