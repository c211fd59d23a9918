"""Low confidence asks, through the API door on the demo pack's release (issue 27, item 2).

Below the release's ask threshold — calibrated at publication on held-out label examples
(``inference.learning.calibration``) and shown on the releases page — and for vague prompts, the answer
is a CLARIFY offering two or three label names, never a node the request barely matches; the
accusing OutOfScope node (risk high: the one on attacks and other people's accounts) answers only on
strong evidence; the options can be chosen like any "Do you mean X or Y?"; and confident covered
prompts are still answered."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from inference.learning.calibration import CAP, FLOOR, threshold_for
from inference.models import InferenceLog
from tests.review.queue_fixtures import user

pytestmark = pytest.mark.django_db
AUP_TEXT = "Acceptable Use Policy"  # the accusing OutOfScope node's text (N-global-oos-offensive)
RECOVERY_TEXT = "recovery code"  # what "it's not working" was answered with before


def infer(client: Any, prompt: str, **extra: Any) -> dict[str, Any]:
    resp = client.post("/api/v1/infer", {"prompt": prompt, **extra}, format="json")
    assert resp.status_code == 200, resp.content
    return resp.json()


def calibration(acme: Any) -> dict[str, Any]:
    from ontology.snapshot_registry import pin_snapshot

    return dict(pin_snapshot(acme.pk).documents["low_confidence"])


def active_label_names(acme: Any) -> set[str]:
    from taxonomy.models import Label

    return set(Label.objects.filter(project=acme, status="ACTIVE").values_list("name", flat=True))


def assert_asked(body: dict[str, Any], acme: Any) -> list[str]:
    """A CLARIFY offering 2–3 ACTIVE label names, in words (no LabelIDs in the text); its options."""
    outcome = body["outcome"]
    assert outcome["kind"] == "CLARIFY", body
    options = outcome["active_check"]["options"]
    assert 2 <= len(options) <= 3 and len(set(options)) == len(options)
    assert set(options) <= active_label_names(acme)
    assert all(name in outcome["answer"] for name in options)
    assert "L0" not in outcome["answer"] and AUP_TEXT not in outcome["answer"]
    return options


def test_the_release_carries_an_ask_threshold_set_on_held_out_examples(acme):
    found = calibration(acme)

    assert found["method"] == "cross_validation" and found["folds"] >= 2
    assert FLOOR <= found["threshold"] <= CAP
    assert found["held_out"] > 100 and 0 < found["accuracy"] < 1
    # the rule: no band of held-out answers at or above the threshold is right less than half the time
    above = [b for b in found["reliability"] if b["from"] >= found["threshold"] and b["count"] >= 5]
    assert above and all(b["right"] >= found["break_even"] for b in above)


def test_the_threshold_rule_asks_below_the_last_band_that_is_more_often_wrong():
    confidence = np.array([0.05] * 10 + [0.25] * 10 + [0.45] * 10 + [0.85] * 10)
    right = np.array([False] * 10 + [True] * 3 + [False] * 7 + [True] * 6 + [False] * 4 + [True] * 10)
    assert threshold_for(confidence, right) == 0.3  # the 0.2 band is right 30 %: asked; 0.4 is 60 %
    assert threshold_for(confidence, np.ones(40, dtype=bool)) == FLOOR  # never wrong: the floor
    assert threshold_for(confidence, np.zeros(40, dtype=bool)) == CAP  # always wrong: capped


# "deploy": one word the weaver is sure of (Deployments, confidence ≈ 0.9) — still asked what about it
@pytest.mark.parametrize("prompt", ["it's not working", "access", "help", "problem", "deploy"])
def test_a_vague_prompt_is_asked_about_not_answered(acme, customer, prompt):
    body = infer(customer, prompt)

    assert_asked(body, acme)
    assert RECOVERY_TEXT not in body["outcome"]["answer"]
    row = InferenceLog.objects.get(project=acme, request_id=body["request_id"])
    assert len(row.outcome_details["disambiguate"]["options"]) == len(
        body["outcome"]["active_check"]["options"]
    )


def test_a_request_below_the_ask_threshold_is_asked_not_answered_by_a_node_it_barely_matches(acme, customer):
    # two content words, 0.27 on the demo (its classifier's best label, Platform outage, under the 0.3 threshold);
    # "nothing works", 0.28 before the demo's Incident reports label, now sits at 0.31, just above it
    prompt = "stuff is broken"
    body = infer(customer, prompt)

    assert body["confidence"] < calibration(acme)["threshold"]
    assert_asked(body, acme)
    row = InferenceLog.objects.get(project=acme, request_id=body["request_id"])
    assert row.landing["abstained"] and row.landing["reason"] == "low_confidence"


def test_the_accusing_out_of_scope_node_needs_strong_evidence(acme, customer):
    # 0.38 from the node on attacks and other people's accounts: near, not strong evidence
    for prompt in ("access", "give me access to my coworker's account"):
        body = infer(customer, prompt)
        assert AUP_TEXT not in body["outcome"]["answer"], body
        assert body["outcome"]["kind"] in ("CLARIFY", "OUT_OF_SCOPE", "REFOCUS")


def test_the_accusing_node_still_answers_on_strong_evidence_and_a_plain_one_on_proximity(acme):
    from inference.contracts import Flag, Landing, RequestContext, WeaverResult
    from inference.runtime import runtime_for
    from inference.steps.envelope import build_envelope
    from inference.steps.fallback import abstention_outcome
    from inference.steps.policy_manager import precheck
    from ontology.snapshot_registry import pin_snapshot

    snapshot = pin_snapshot(acme.pk)
    runtime = runtime_for(snapshot)
    envelope = build_envelope(
        request_id="r-1",
        project_id=acme.pk,
        prompt="anything at all",
        context=RequestContext(),
        default_role="customer",
        default_typology=None,
        runtime=runtime,
    )
    weaver = WeaverResult(flags=frozenset({Flag.OOD, Flag.ABSTAIN_RECOMMENDED}))
    kwargs = {
        "envelope": envelope,
        "runtime": runtime,
        "decision": precheck(envelope, runtime),
        "weaver": weaver,
        "snapshot": snapshot,
    }

    def landing(*candidates: tuple[str, float]) -> Landing:
        return Landing(node_start=candidates[0][0], candidates=candidates, abstained=True)

    offensive, general, legal = "N-global-oos-offensive", "N-global-oos-general", "N-global-oos-legal"
    assert snapshot.node(offensive).risk == "high" and snapshot.node(legal).risk == "low"
    assert abstention_outcome(**kwargs, landing=landing((offensive, 0.62), (general, 0.3))) is None
    near, _ = abstention_outcome(**kwargs, landing=landing((offensive, 0.4), (general, 0.2)))
    assert near.kind == "OUT_OF_SCOPE" and AUP_TEXT not in near.answer  # the neutral refocus
    close, _ = abstention_outcome(**kwargs, landing=landing((offensive, 0.55), (general, 0.5)))
    assert AUP_TEXT not in close.answer  # close, but no lead over the next OutOfScope node
    assert abstention_outcome(**kwargs, landing=landing((legal, 0.4), (general, 0.35))) is None


def test_choosing_an_offered_option_answers_for_that_label(acme, customer):
    asked = infer(customer, "access")
    options = assert_asked(asked, acme)
    stored = InferenceLog.objects.get(project=acme, request_id=asked["request_id"]).outcome_details
    chosen = stored["disambiguate"]["options"][-1]  # the last option, chosen by its name

    body = infer(
        customer,
        "access",
        disambiguation={"request_id": asked["request_id"], "choice": options[-1].upper()},
    )

    assert body["labels"] == {chosen["label_id"]: 1.0}
    assert body["outcome"]["kind"] != "CLARIFY" or not body["outcome"].get("active_check")


@pytest.mark.parametrize(
    "prompt",
    [
        "download my invoice as a pdf",
        "I need a copy of last month's invoice",
        "how do I download an invoice",
        "our accountant needs every invoice from last year in one file",
    ],
)
def test_confident_covered_prompts_are_still_answered(acme, customer, prompt):
    body = infer(customer, prompt)

    assert body["confidence"] >= calibration(acme)["threshold"]
    assert body["outcome"]["kind"] == "INFO", body
    assert "L00002" in body["labels"] or "L00001" in body["labels"]


def test_the_releases_page_shows_curators_the_ask_threshold(acme, client):
    client.force_login(user("erin-expert"))

    page = client.get(f"/p/{acme.slug}/graph/releases/").content.decode()

    found = calibration(acme)
    assert 'id="ask-threshold"' in page
    assert f'<strong id="ask-threshold-value">{found["threshold"]:.2f}</strong>' in page
    assert f"{found['held_out']} label examples held out" in page
