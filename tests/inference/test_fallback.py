"""The controlled fallback of an abstained landing (``inference.steps.fallback``), through the real pipeline on
the demo pack's release: a greeting is not answered with the text on attacks, an ambiguous in-domain
request is asked "X or Y?", a request about labels the role may not use gets its policy's refocus
message, and a request an OutOfScope node is about still gets that node's text."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from inference.contracts import Flag, Landing, RequestContext, WeaverResult
from inference.pipeline import InferenceRequest, run_inference
from inference.steps.clarification import Option
from inference.steps.fallback import (
    DEFAULT_FALLBACK_PARAMS,
    FallbackParams,
    abstention_outcome,
    clarify_options,
)
from inference.steps.policy_manager import precheck

pytestmark = pytest.mark.django_db  # the session fixture publishes the demo release once
ATTACKS_TEXT = "Requests to access someone else's account"


def infer(snapshot: Any, prompt: str, role: str = "customer") -> Any:
    project = SimpleNamespace(pk=snapshot.project_id, slug="acme-support")
    request = InferenceRequest(
        "r-fallback", project, prompt, RequestContext(), default_role=role, snapshot=snapshot
    )
    return run_inference(request)


def refocus(demo: Any, role: str) -> str:
    return demo.policy_for_role(role).refocus_message


# "hello" and "help" are vague: asked about (tests/inference/test_low_confidence.py)
@pytest.mark.parametrize("prompt", ["write me a sorting algorithm in java"])
def test_a_prompt_near_no_out_of_scope_topic_gets_the_policys_generic_decline(demo_snapshot, demo, prompt):
    result = infer(demo_snapshot, prompt)

    assert result.landing.abstained  # where the landing step says it landed is unchanged
    nearest = result.landing.candidates[0]
    assert nearest[1] < DEFAULT_FALLBACK_PARAMS.specific_out_of_scope
    assert result.outcome.kind == "OUT_OF_SCOPE"
    assert result.outcome.answer == refocus(demo, "customer")
    assert ATTACKS_TEXT not in result.outcome.answer
    assert result.explanation.startswith("No label of this project fits the request")


def test_an_ambiguous_in_domain_request_is_asked_which_of_two_labels(demo_snapshot):
    result = infer(demo_snapshot, "how do I set up single sign on")

    assert result.landing.abstained and Flag.OOD not in result.weaver.flags
    # the classifier ranks SSO behind 2FA setup and Sign-in (third or fourth, 0.07, tied with Domains & TLS);
    # the label vectors and the lexical step put it first: fused, it leads
    ranked = [lid for lid, _ in result.weaver.classifier]
    assert ranked[:2] == ["L00025", "L00022"] and "L00028" in ranked[2:4]
    assert result.weaver.top_k[0][0] == "L00028"
    assert max(result.lexical.filtered, key=result.lexical.filtered.get) == "L00028"
    assert result.outcome.kind == "CLARIFY"
    check = result.outcome.active_check
    assert check.kind == "disambiguate" and check.options == ("SSO & SAML login", "Set up 2FA")
    assert result.outcome.answer == "I'm not sure what you need. Do you mean SSO & SAML login or Set up 2FA?"
    assert result.outcome.details["disambiguate"]["options"] == [
        {"label_id": "L00028", "name": "SSO & SAML login"},
        {"label_id": "L00025", "name": "Set up 2FA"},
    ]


def test_a_request_about_labels_the_role_may_not_use_gets_its_policys_refocus_message(demo_snapshot, demo):
    result = infer(demo_snapshot, "I need a copy of last month's invoice", role="anonymous-visitor")

    assert result.weaver.policy_gated
    assert (result.outcome.kind, result.outcome.answer) == ("REFOCUS", refocus(demo, "anonymous-visitor"))
    answered = infer(demo_snapshot, "I need a copy of last month's invoice", role="customer")
    assert answered.outcome.kind == "INFO" and "L00002" in answered.weaver.l_final


def _weaver(**values: Any) -> WeaverResult:
    return WeaverResult(**values)


def test_a_close_out_of_scope_node_still_answers_and_clarify_options_obey_the_policy(
    envelope_for, demo, demo_snapshot
):
    envelope = envelope_for("anything", role="anonymous-visitor")
    decision = precheck(envelope, demo)
    close = Landing(
        node_start="N-global-oos-legal", candidates=(("N-global-oos-legal", 0.5),), abstained=True
    )
    unsure = _weaver(
        classifier=(("L00002", 0.3), ("L00013", 0.2), ("L00060", 0.1)),
        top_k=(("L00002", 0.4), ("L00013", 0.35), ("L00060", 0.3)),
        flags=frozenset({Flag.LOW_MARGIN, Flag.ABSTAIN_RECOMMENDED}),
    )
    kwargs = {
        "envelope": envelope,
        "runtime": demo,
        "decision": decision,
        "weaver": unsure,
        "snapshot": demo_snapshot,
    }
    assert abstention_outcome(**kwargs, landing=close) is None  # the landing's node answers

    # invoices (L00002) are not the visitor's: the options skip it
    assert clarify_options(demo, decision, unsure) == [
        Option("L00013", "Plans & subscription"),
        Option("L00060", "Service status"),
    ]
    far = Landing(node_start="N-global-oos-legal", candidates=(("N-global-oos-legal", 0.1),), abstained=True)
    outcome, _ = abstention_outcome(**kwargs, landing=far)
    assert outcome.kind == "CLARIFY" and outcome.active_check.options == (
        "Plans & subscription",
        "Service status",
    )
    assert (
        abstention_outcome(**kwargs, landing=far, params=FallbackParams(specific_out_of_scope=0.05)) is None
    )
