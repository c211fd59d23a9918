"""Answers written for the asker, through the API door on the demo pack's release: an answer shows a
node's client text only — never its staff notes or internal description, never an instruction to staff —
memory outcomes tell the user what was found, and the ontology API shows the staff texts to curators
and reviewers only."""

from __future__ import annotations

import re
from typing import Any

import pytest
from rest_framework.test import APIClient

from ontology.client_text import staff_voice_sentences
from tests.review.queue_fixtures import user

pytestmark = pytest.mark.django_db

# realistic customer prompts that land on nodes whose text used to be written for staff (Clarify and
# Decision nodes, memory nodes), and the FAQ that answered another question with "No."
PROMPTS = [
    "upgrade my plan to Pro",
    "my deploy failed",
    "which charge is this on my bank statement",
    "I can't get into my account",
    "is acme cloud down or is it my app",
    "my webhook never arrived",
    "I want all my personal data deleted",
    "my card payment failed",
    "how do I roll back my app",
    "does a rollback revert my database migrations",
    "show me my recent payment attempts",
]


def internal_sentences(acme: Any) -> set[str]:
    """Every sentence of every node's staff notes and internal description in the active release."""
    from ontology.snapshot_registry import pin_snapshot

    snapshot = pin_snapshot(acme.pk)
    texts = [extra.get(key, "") for extra in snapshot.extras for key in ("staff_notes", "description")]
    return {s.strip() for text in texts for s in re.split(r"(?<=[.!?:])\s+", text) if len(s.strip()) > 20}


def infer(client: Any, prompt: str, **context: Any) -> dict[str, Any]:
    resp = client.post("/api/v1/infer", {"prompt": prompt, "context": context}, format="json")
    assert resp.status_code == 200, resp.content
    return resp.json()


def test_answers_never_show_staff_notes_or_internal_descriptions(acme, customer):
    internal = internal_sentences(acme)
    assert len(internal) > 40  # the demo pack keeps its staff texts, beside the client texts

    for prompt in PROMPTS:
        outcome = infer(customer, prompt, user_id="u-1")["outcome"]
        shown = " ".join([outcome["answer"] or "", *(c.get("excerpt", "") for c in outcome["citations"])])
        assert not [s for s in internal if s in shown], (prompt, shown)
        assert staff_voice_sentences(outcome["answer"] or "") == [], (prompt, outcome["answer"])


def test_upgrade_to_pro_is_not_answered_with_an_instruction_to_staff(customer):
    answer = infer(customer, "upgrade my plan to Pro")["outcome"]["answer"]

    assert "the customer" not in answer.lower() and not answer.startswith("Ask ")


def test_a_memory_read_tells_the_user_what_was_found(customer):
    saved = "My card ending 4242 was declined on 3 May for the 49 EUR Pro invoice."
    created = customer.post(
        "/api/v1/memory", {"text": saved, "scope": "USER", "user_id": "u-1"}, format="json"
    )
    assert created.status_code == 201, created.content

    outcome = infer(customer, "show me my recent payment attempts", user_id="u-1")["outcome"]
    nothing = infer(customer, "show me my recent payment attempts", user_id="u-2")["outcome"]

    assert outcome["kind"] == "MEMORY", outcome
    assert outcome["answer"] == f"Here is what I have on record about your recent payments:\n- {saved}"
    assert nothing["answer"] == "I have nothing saved about this yet."
    assert "Loads the last 12 charge attempts" not in outcome["answer"] + nothing["answer"]


def test_the_ontology_api_shows_staff_texts_to_curators_only(acme, customer):
    path = f"/api/v1/projects/{acme.slug}/nodes/N-billing-clarify-plan-target/"
    curator = APIClient()
    curator.force_login(user("ada-admin"))

    as_client = customer.get(path).json()
    as_curator = curator.get(path).json()

    assert as_client["chunk"].startswith("Which plan would you like to move to")
    assert "staff_notes" not in as_client and "description" not in as_client
    assert as_curator["staff_notes"].startswith("Ask which plan the customer wants")


def test_saving_a_staff_voiced_client_text_warns_and_saves(acme):
    curator = APIClient()
    curator.force_login(user("ada-admin"))
    path = f"/api/v1/projects/{acme.slug}/nodes/N-billing-clarify-plan-target/"

    resp = curator.patch(path, {"chunk": "Ask which plan the customer wants."}, format="json")
    fixed = curator.patch(
        path,
        {"chunk": "Which plan would you like?", "staff_notes": "Ask which plan the customer wants."},
        format="json",
    )
    draft = curator.get(path + "?source=draft").json()

    assert resp.status_code == 200, resp.content
    assert [w["rule"] for w in resp.json()["warnings"]] == ["graph.client_text_staff_voice"]
    assert fixed.status_code == 200 and fixed.json()["warnings"] == []
    assert (draft["chunk"], draft["staff_notes"]) == (
        "Which plan would you like?",
        "Ask which plan the customer wants.",
    )
