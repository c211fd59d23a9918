"""The request's mood (``inference.steps.mood``): a request to act prefers an Action at the landing, a
question prefers an answer — read from English grammar, used only among the nodes the gates admit."""

from __future__ import annotations

from typing import Any

import pytest

from inference.steps.mood import Mood, request_mood


@pytest.mark.parametrize(
    "prompt",
    [
        "scale my app to 4 instances",
        "make Sarah an admin in our org",
        "a customer thinks their account was compromised, lock it",
        "please reset the password of bob@example.com",
        "can you cancel my subscription?",
        "I want to cancel my subscription",
        "I'd like to move my project to eu-central",
        "don't charge me again",
        "subscribe ops@example.org to your status updates",
    ],
)
def test_a_request_to_act_has_the_act_mood(prompt: str) -> None:
    assert request_mood(prompt) is Mood.ACT


@pytest.mark.parametrize(
    "prompt",
    [
        "how much does the Team plan cost",
        "what's the difference between the admin and member roles",
        "why is my bill $412 this month",
        "is acme cloud down right now",
        "do you accept paypal",
        "can you explain the overage on my invoice?",
        "I want to know who can see my invoices",
        "tell me why the build failed",
    ],
)
def test_a_question_has_the_ask_mood(prompt: str) -> None:
    assert request_mood(prompt) is Mood.ASK


@pytest.mark.parametrize(
    "prompt",
    [
        "billing",
        "my account got locked after too many attempts",  # a statement: -ed, then no object
        "invoice emails not arriving",  # a noun phrase, not an imperative
        "can I extend my trial?",  # permission or polite request: undecided
        "how do I roll back my app",  # the user's own doing: the action or the how-to
        "update my card, and why was it declined?",  # both moods: nothing preferred
    ],
)
def test_no_mood_or_a_mixed_one_prefers_nothing(prompt: str) -> None:
    assert request_mood(prompt) is None


def test_the_envelope_reads_the_mood_of_english_prompts_only(envelope_for: Any) -> None:
    assert envelope_for("scale my app to 4 instances").mood == "act"
    assert envelope_for("how many instances can I run").mood == "ask"
    # German grammar is not read: capitalized nouns would look like an English object
    assert envelope_for("Ist Acme Cloud gerade down?", language="de").mood is None


# --- through the API door, on the demo pack's release ------------------------------------------------


def infer(client: Any, prompt: str) -> dict[str, Any]:
    resp = client.post("/api/v1/infer", {"prompt": prompt, "context": {"user_id": "u-1"}}, format="json")
    assert resp.status_code == 200, resp.content
    return resp.json()


@pytest.mark.django_db
def test_a_request_to_act_lands_on_the_action_and_a_question_on_the_answer(customer: Any) -> None:
    act = infer(customer, "scale my app to 4 instances")
    ask = infer(customer, "how many instances can I scale my app to")

    # the label (scaling) holds both the limits (InfoStable) and the action; the prompt's words are
    # closer to the limits, the mood decides
    assert act["path"]["nodes"][-1] == {
        "node_id": "N-deploy-scale-now",
        "title": "Change instance count or size",
        "type": "Action",
    }, act
    assert act["outcome"]["kind"] != "INFO", act  # the action runs, or asks for its parameters
    assert ask["path"]["nodes"][-1]["node_id"] == "N-deploy-scale-limits", ask
    assert ask["outcome"]["kind"] == "INFO", ask


@pytest.mark.django_db
def test_the_mood_never_admits_an_action_the_policy_forbids(acme: Any, token_client: Any) -> None:
    from taxonomy.models import Role

    visitor = token_client(acme, role=Role.objects.get(project=acme, key="anonymous-visitor"))
    body = infer(visitor, "scale my app to 4 instances")

    assert "N-deploy-scale-now" not in [n["node_id"] for n in body["path"]["nodes"]], body
    assert body["outcome"]["kind"] != "ACTION", body
