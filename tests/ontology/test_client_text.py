"""The validator's warning about client texts that read like staff instructions
(``graph.client_text_staff_voice``, ``ontology.client_text``), on real sentences of the demo pack."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from ontology.client_text import is_staff_voice, staff_voice_sentences
from ontology.store.port import GraphData, NodeData
from ontology.validator import STAFF_VOICE_RULE, client_text_warnings, graph_warnings, validate_graph

from .conftest import sample_graph

LABELS = {"L00001": "ACTIVE", "L00002": "ACTIVE", "L00003": "DEPRECATED", "L00004": "SHADOW"}
CLUSTERS = {"billing", "support"}
DEMO_PACK = Path(__file__).resolve().parents[2] / "packs" / "demo" / "pack.yaml"

# sentences the demo pack's client texts carried before they were moved to staff notes
STAFF_SENTENCES = [
    "Ask which plan the customer wants (Hobby, Pro, Team or Enterprise), whether monthly or annual billing, "
    "and for Pro and Team how many seats.",
    "Ask the user which area the question concerns: billing, signing in or team access, a deployment or "
    "running app, a suspected outage, privacy or compliance, or an integration.",
    "Ask for the invoice number (format INV-YYYY-NNNNNN), or the date and amount exactly as it appears on "
    "the bank statement.",
    "Determine whether the customer wants more capacity or features (upgrade), to pay less but keep using "
    "the platform (downgrade), or to stop paying altogether (cancel).",
    "Decide whether the user cannot sign in at all, signs in but lacks permission for something, wants to "
    "manage other members, or needs an API token.",
    "If an incident covers the customer's region and component, confirm and share it; if not, and only this "
    "customer's apps are affected, treat it as an app problem and route to deployments troubleshooting.",
    "If the customer only wants to know the consequences, explain the grace period.",
    "Check the customer's plan before offering a refund.",
]
# sentences written for the asker: instructions to them, or plain facts (some mention "users")
CLIENT_SENTENCES = [
    "Which plan would you like to move to — Hobby, Pro, Team or Enterprise?",
    "Open the last failing step of your build log.",
    "Ask your organization's Owner to invite you again.",
    "Check the status page for an active incident in your region.",
    "Hobby workspaces get community forum support only.",
    "The customer receives the ticket number by email.",
    "Closing an account signs the user out everywhere, revokes their tokens and removes them from all "
    "organizations.",
    "Tokens are either personal (act as the user) or organization tokens.",
    "If you only received a suspicious email, check that it really came from Acme Cloud before you act on it.",
]


@pytest.mark.parametrize("sentence", STAFF_SENTENCES)
def test_staff_instructions_are_recognised(sentence: str) -> None:
    assert is_staff_voice(sentence)


@pytest.mark.parametrize("sentence", CLIENT_SENTENCES)
def test_text_for_the_asker_is_not_flagged(sentence: str) -> None:
    assert not is_staff_voice(sentence)


def test_only_the_staff_sentences_of_a_text_are_quoted() -> None:
    text = "Plans are billed monthly or yearly. " + STAFF_SENTENCES[0] + " You can change plans at any time."
    assert staff_voice_sentences(text) == [STAFF_SENTENCES[0]]


def node(chunk: str, **fields: str) -> NodeData:
    return NodeData(node_id="N-x", type="Clarify", title="Which plan?", chunk=chunk, **fields)


def test_a_staff_voiced_client_text_is_a_warning_not_a_refusal() -> None:
    suspect = node(STAFF_SENTENCES[0], staff_notes="Ask which plan the customer wants.")
    graph = replace(sample_graph(), nodes=(*sample_graph().nodes, suspect))
    sample_warnings = graph_warnings(sample_graph())

    assert validate_graph(graph, labels=LABELS, clusters=CLUSTERS) == []  # never refused
    warnings = graph_warnings(graph, locations={"node:N-x": "nodes[9]"})[len(sample_warnings) :]
    assert [(w.rule, w.field, w.location) for w in warnings] == [(STAFF_VOICE_RULE, "chunk", "nodes[9]")]
    assert "Ask which plan the customer wants" in warnings[0].message
    # staff notes may say anything: only the client text is judged
    assert client_text_warnings(node("Which plan would you like?", staff_notes=STAFF_SENTENCES[0])) == []


def test_staff_notes_and_description_have_size_limits() -> None:
    graph = GraphData(nodes=(node("ok", staff_notes="x" * 10_001, description="y" * 2_001),))
    refused = {(v.rule, v.field) for v in validate_graph(graph, labels={}, clusters=set())}
    assert {("graph.field_size", "staff_notes"), ("graph.field_size", "description")} <= refused


def test_the_demo_pack_client_texts_are_written_for_the_asker() -> None:
    nodes = yaml.safe_load(DEMO_PACK.read_text())["nodes"]
    flagged = {n["id"]: staff_voice_sentences(n["chunk"]) for n in nodes if staff_voice_sentences(n["chunk"])}
    assert flagged == {}
    # the instructions that used to be client texts are kept, as staff notes the validator recognises
    notes = [n["staff_notes"] for n in nodes if n.get("staff_notes")]
    assert len(notes) >= 20
    assert sum(bool(staff_voice_sentences(text)) for text in notes) >= 20
