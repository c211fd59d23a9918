"""Action parameters through POST /api/v1/infer on the demo pack: taken from the prompt and shown,
only the missing ones asked, internal ids never asked in user words, top-level ``confirm``, and an
action that cannot run still answering with the information."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inference.models import ActionExecution, InferenceLog

pytestmark = pytest.mark.django_db
EMAIL = "ana@example.com"


def infer(client: Any, prompt: str, **body: Any) -> Any:
    return client.post("/api/v1/infer", {"prompt": prompt, **body}, format="json")


def outcome_of(resp: Any) -> dict[str, Any]:
    assert resp.status_code == 200, resp.content
    return resp.json()["outcome"]


def test_an_email_in_the_prompt_is_used_shown_and_never_logged_raw(customer):
    resp = infer(customer, f"I forgot my password, my email is {EMAIL}")
    outcome = outcome_of(resp)

    assert outcome["action"]["node_id"] == "N-access-password-reset"
    assert outcome["action"]["status"] == "SUCCEEDED"
    assert outcome["action"]["parameters"] == {"email": EMAIL}
    assert outcome["details"]["parameters_from_prompt"] == ["email"]
    assert f"From your message I used email={EMAIL}." in outcome["answer"]
    log = InferenceLog.objects.get(request_id=resp.json()["request_id"])
    stored = json.dumps([log.prompt, log.action, log.answer, log.outcome_details], ensure_ascii=False)
    assert EMAIL not in stored and "EMAIL" in log.pii
    assert log.outcome_details["parameters_from_prompt"] == ["email"]
    assert EMAIL not in json.dumps(ActionExecution.objects.get(request_id=log.request_id).parameters)


def test_the_caller_parameters_win_over_the_prompt(customer):
    outcome = outcome_of(
        infer(customer, f"I forgot my password, my email is {EMAIL}", parameters={"email": "bo@example.org"})
    )

    assert outcome["action"]["parameters"] == {"email": "bo@example.org"}
    assert "parameters_from_prompt" not in outcome["details"]
    assert "From your message" not in outcome["answer"]


def test_only_what_is_still_missing_is_asked_for(customer):
    outcome = outcome_of(infer(customer, "resend my invoice to billing@acme.example"))

    assert outcome["kind"] == "CLARIFY"
    assert outcome["action"]["status"] == "NEEDS_PARAMETERS"
    assert outcome["missing_parameters"] == ["invoice_id"]
    assert outcome["action"]["parameters"] == {"recipient_email": "billing@acme.example"}
    assert outcome["answer"] == (
        "To resend an invoice by email, please provide: invoice_id (Invoice number, e.g. INV-2024-004512)."
        " From your message I used recipient_email=billing@acme.example."
    )


def test_an_identifier_matching_its_pattern_is_taken_from_the_prompt(customer):
    outcome = outcome_of(infer(customer, "please resend invoice INV-2024-004512"))

    assert outcome["action"]["status"] == "SUCCEEDED"
    assert outcome["action"]["parameters"] == {"invoice_id": "INV-2024-004512"}
    assert outcome["details"]["parameters_from_prompt"] == ["invoice_id"]


def test_a_how_to_question_is_answered_not_turned_into_a_form_for_internal_ids(customer):
    outcome = outcome_of(infer(customer, "how do I delete an app"))

    assert outcome["action"]["node_id"] == "N-deploy-delete-app"
    assert outcome["action"]["status"] == "NEEDS_CONTEXT"
    assert outcome["action"]["missing_context"] == ["app_id"]
    assert outcome["missing_parameters"] == []
    assert outcome["answer"].startswith("Your app is deleted with its deployments, domains and environment")
    assert "please provide" not in outcome["answer"]


def test_an_action_that_cannot_run_answers_with_the_nearest_information(customer):
    outcome = outcome_of(infer(customer, "subscribe me to status updates"))

    assert outcome["action"]["node_id"] == "N-incident-subscribe-status"
    assert outcome["action"]["status"] == "PRECONDITION_FAILED"
    information, why = outcome["answer"].split("\n\n")
    assert outcome["citations"][0]["node_id"] == outcome["details"]["information_node"]
    assert information.startswith(outcome["citations"][0]["excerpt"][:60])
    assert why == (
        "I could not subscribe to status updates here: An email address or a webhook URL is given "
        "(neither was given)."
    )


def test_a_status_question_gets_the_status_information(customer):
    outcome = outcome_of(infer(customer, "is acme cloud down right now"))

    assert "was not run" not in outcome["answer"]
    assert outcome["citations"][0]["node_id"] in (
        "N-incident-outage-info",
        "N-incident-status-page",
    ), outcome
    assert outcome["answer"].startswith(outcome["citations"][0]["excerpt"][:60])


def test_top_level_confirm_counts_as_parameters_confirm(customer):
    prompt = "cancel my subscription immediately"
    asked = outcome_of(infer(customer, prompt))
    confirmed = outcome_of(infer(customer, prompt, confirm=True))
    both = outcome_of(infer(customer, prompt, confirm=True, parameters={"confirm": True}))

    assert asked["action"]["status"] == "NEEDS_CONFIRMATION"
    assert asked["action"]["parameters"] == {"effective": "immediately"}
    assert confirmed["action"]["status"] == "SUCCEEDED"
    assert both["action"]["status"] == "SUCCEEDED"


@pytest.mark.parametrize(
    "body",
    [
        {"confirm": True, "parameters": {"confirm": False}},
        {"confirm": False, "parameters": {"confirm": "yes"}},
        {"confirm": "maybe"},
    ],
)
def test_a_top_level_confirm_that_disagrees_or_is_no_boolean_is_a_400(customer, body):
    resp = infer(customer, "cancel my subscription immediately", **body)

    assert resp.status_code == 400, resp.content
    assert "confirm" in json.dumps(resp.json())
    assert ActionExecution.objects.count() == 0
