"""The active context typology's ``response_style`` shapes the answer (``inference.steps.style``),
through the API door on the demo pack's release, and the text functions on their own."""

from __future__ import annotations

from typing import Any

import pytest

from inference.steps.info import sentences
from inference.steps.style import CONCISE_SENTENCES, concise, detailed, formal, steps

pytestmark = pytest.mark.django_db

PROMPT = "How do I enable two-factor authentication?"  # an Info answer: N-access-2fa-setup
TARGET = "N-access-2fa-setup"


def infer(client: Any, typology: str | None = None, prompt: str = PROMPT) -> dict[str, Any]:
    context: dict[str, Any] = {"channel": "web"}
    if typology:
        context["typology"] = typology
    resp = client.post("/api/v1/infer", {"prompt": prompt, "context": context}, format="json")
    assert resp.status_code == 200, resp.content
    return resp.json()


def chunk_of(acme: Any, node_id: str) -> str:
    from ontology.snapshot_registry import pin_snapshot

    return pin_snapshot(acme.pk).node(node_id).chunk


def test_each_style_shapes_the_same_info_answer_differently(customer, acme, monkeypatch):
    from inference.runtime import runtime_for
    from ontology.snapshot_registry import pin_snapshot

    by_style: dict[str, dict[str, Any]] = {
        "concise": infer(customer, "quick-answer"),
        "step_by_step": infer(customer, "guided-troubleshooting"),
        "formal": infer(customer, "compliance-careful"),
    }
    # the demo has no "detailed" typology: the default one's style is switched for this request
    runtime = runtime_for(pin_snapshot(acme.pk))
    monkeypatch.setitem(runtime.typologies["quick-answer"], "response_style", "detailed")
    by_style["detailed"] = infer(customer, "quick-answer")

    chunk = chunk_of(acme, TARGET)
    for style, body in by_style.items():
        outcome = body["outcome"]
        assert outcome["kind"] == "INFO" and body["path"]["nodes"][-1]["node_id"] == TARGET, style
        assert outcome["response_style"] == style
    answers = {style: body["outcome"]["answer"] for style, body in by_style.items()}
    assert len({answers["concise"], answers["detailed"], answers["step_by_step"]}) == 3, answers

    assert len(sentences(answers["concise"])) <= CONCISE_SENTENCES
    assert answers["detailed"].startswith(chunk.strip())  # the whole chunk, then neighbours' sentences
    assert len(sentences(answers["detailed"])) > len(sentences(answers["concise"]))
    numbered = answers["step_by_step"].splitlines()
    assert len(numbered) == len(sentences(answers["detailed"]))
    assert all(line.startswith(f"{i}. ") for i, line in enumerate(numbered, 1))
    assert numbered[0].removeprefix("1. ") == sentences(chunk)[0]
    # formal: the composed answer, neither cut nor numbered, written out (the demo's text has no
    # contractions to expand: ``test_formal_writes_out_contractions…`` shows that part)
    assert answers["formal"] == formal(answers["formal"])
    assert answers["formal"] not in (answers["concise"], answers["step_by_step"])
    assert answers["concise"] in answers["formal"]


def test_the_default_typology_shapes_an_answer_without_a_typology_hint(customer):
    from inference.models import InferenceLog

    body = infer(customer)  # the release's default typology, quick-answer: concise
    assert body["outcome"]["response_style"] == "concise"
    assert len(sentences(body["outcome"]["answer"])) <= CONCISE_SENTENCES
    log = InferenceLog.objects.get(request_id=body["request_id"])
    assert log.outcome_details["response_style"] == "concise"  # the trace shows how it was shaped


def test_an_action_message_takes_formal_only(customer, acme, monkeypatch):
    """An Action message is never cut or numbered: under step_by_step it is left as it is; formal shapes it."""
    from inference.runtime import runtime_for
    from ontology.snapshot_registry import pin_snapshot

    prompt = "invite a teammate to my org"  # N-access-invite-member, a DirectAction
    plain = infer(customer, "guided-troubleshooting", prompt)
    assert plain["outcome"]["kind"] == "ACTION", plain["outcome"]
    assert len(sentences(plain["outcome"]["answer"])) > 1
    assert plain["outcome"]["response_style"] is None
    runtime = runtime_for(pin_snapshot(acme.pk))
    monkeypatch.setitem(runtime.typologies["guided-troubleshooting"], "response_style", "formal")
    shaped = infer(customer, "guided-troubleshooting", prompt)
    assert shaped["outcome"]["response_style"] == "formal"
    assert shaped["outcome"]["answer"] == formal(plain["outcome"]["answer"])


def test_the_fallback_question_is_written_out_under_formal_only(customer):
    """A vague prompt is asked about ("I'm not sure what you need. Do you mean …?"): the formal typology
    writes the question out; another style leaves it as it is."""
    formal_body = infer(customer, "compliance-careful", "access")
    plain_body = infer(customer, "guided-troubleshooting", "access")
    for body in (formal_body, plain_body):
        assert body["outcome"]["kind"] == "CLARIFY", body["outcome"]
    assert plain_body["outcome"]["answer"].startswith("I'm not sure what you need.")
    assert plain_body["outcome"]["response_style"] is None
    assert formal_body["outcome"]["answer"].startswith("I am not sure what you need.")
    assert formal_body["outcome"]["response_style"] == "formal"


def test_formal_writes_out_contractions_and_drops_casual_openers():
    text = "Sure! You can't change it, but you'll see it's there. Don't worry. Won't hurt."
    assert formal(text) == "You cannot change it, but you will see it is there. Do not worry. Will not hurt."
    assert formal("Sure you can.") == "Sure you can."  # an opener is set off by punctuation
    assert formal("Okay.") == "Okay."  # nothing but an opener: kept
    # possessives and names stay
    assert formal("The account's owner uses Let's Encrypt.") == "The account's owner uses Let's Encrypt."


def test_steps_number_list_items_else_sentences():
    assert steps("Open Settings. Click Billing. Download the PDF.") == (
        "1. Open Settings.\n2. Click Billing.\n3. Download the PDF."
    )
    assert steps("Do this:\n- sign in\n- open Billing") == "1. sign in\n2. open Billing"
    assert steps("One sentence only.") == "One sentence only."


def test_concise_and_detailed():
    assert concise("A one. B two. C three.") == "A one. B two."
    assert detailed("Two. From a neighbour.", "One. Two. Three.") == "One. Two. Three. From a neighbour."


def test_the_api_schema_documents_the_style_and_the_product(client):
    import yaml

    schema = yaml.safe_load(client.get("/api/v1/schema/").content)
    outcome = schema["components"]["schemas"]["Outcome"]["properties"]["response_style"]
    assert outcome["nullable"] is True and "typology" in outcome["description"]
    product = schema["components"]["schemas"]["ContextRequest"]["properties"]["product"]
    assert "request.product_unknown" in product["description"]
