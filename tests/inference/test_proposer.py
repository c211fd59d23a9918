"""The bounded label proposer through the API door (``inference.steps.proposer``), against a fake
OpenAI-compatible server on loopback: asked on escalation only, it must choose among the candidates or
ABSTAIN; a label outside them raises UNKNOWN_LABEL_CANDIDATE and is logged for the offline loop; garbage,
an HTTP error, a late answer or a spent budget leave the cascade's answer as it is without an LLM."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inference.models import InferenceLog
from inference.steps import proposer
from tests.inference.loopback import Reply, loopback_server

pytestmark = pytest.mark.django_db
AMBIGUOUS = "how do I set up single sign on"  # the demo's cascade hesitates: SSO (L00028) or 2FA (L00025)
CONFIDENT = "download my invoice"
SSO, TWO_FA = "L00028", "L00025"


@pytest.fixture(autouse=True)
def _fresh_budget() -> None:
    proposer.budget.reset()


def label_reply(label: Any) -> Reply:
    content = json.dumps({"label": label})
    return Reply(200, {"choices": [{"message": {"role": "assistant", "content": content}}]})


def asked(llm: Any) -> list[dict[str, Any]]:
    """The requests the proposer sent (an Info answer also asks the configured LLM to write it)."""
    return [r for r in llm.requests if r["json"]["messages"][0]["content"] == proposer.INSTRUCTIONS]


def infer(client: Any, prompt: str = AMBIGUOUS) -> dict[str, Any]:
    resp = client.post("/api/v1/infer", {"prompt": prompt}, format="json")
    assert resp.status_code == 200, resp.content
    return resp.json()


def logged_proposal(body: dict[str, Any]) -> Any:
    return InferenceLog.objects.get(request_id=body["request_id"]).weaver.get("proposal")


def test_without_an_llm_the_cascade_asks_and_nothing_is_proposed(customer):
    body = infer(customer)

    assert body["outcome"]["kind"] == "CLARIFY"
    assert {"LOW_MARGIN", "ABSTAIN_RECOMMENDED"} <= set(body["flags"])
    assert logged_proposal(body) is None


def test_on_escalation_the_llm_chooses_among_the_candidates_and_the_request_is_routed(customer, settings):
    with loopback_server(lambda request: label_reply(SSO)) as llm:
        settings.LLM_URL, settings.LLM_MODEL = llm.url, "tiny"
        body = infer(customer)

    (request,) = asked(llm)
    system, user = (m["content"] for m in request["json"]["messages"])
    assert "Choose only among the candidate labels" in system and "ABSTAIN" in system
    assert f"- {SSO}: SSO & SAML login" in user and f"- {TWO_FA}: Set up 2FA" in user
    assert user.endswith(f"Request: {AMBIGUOUS}")
    assert list(body["labels"]) == [SSO]
    assert "ABSTAIN_RECOMMENDED" not in body["flags"]
    assert (body["outcome"]["active_check"] or {}).get("kind") != "disambiguate"  # routed, not asked
    assert body["path"]["nodes"], body
    assert logged_proposal(body) == {"result": "chosen", "label": SSO}


def test_an_abstention_recommends_abstaining(customer, settings):
    with loopback_server(lambda request: label_reply("ABSTAIN")) as llm:
        settings.LLM_URL = llm.url
        body = infer(customer)

    assert len(asked(llm)) == 1
    assert "ABSTAIN_RECOMMENDED" in body["flags"] and body["outcome"]["kind"] == "CLARIFY"
    assert logged_proposal(body) == {"result": "abstained"}


def test_a_label_outside_the_candidates_is_an_unknown_label_candidate_logged_for_the_loop(customer, settings):
    with loopback_server(lambda request: label_reply("Okta directory sync for maria@example.com")) as llm:
        settings.LLM_URL = llm.url
        body = infer(customer)

    assert {"UNKNOWN_LABEL_CANDIDATE", "ABSTAIN_RECOMMENDED"} <= set(body["flags"])
    assert body["outcome"]["kind"] == "CLARIFY"
    # the proposed name is kept for the loop, scrubbed like every logged text
    assert logged_proposal(body) == {"result": "unknown", "proposed_name": "Okta directory sync for <EMAIL>"}


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply(500, {"error": "overloaded"}), "HTTPError"),
        (Reply(200, {"choices": [{"message": {"content": "SSO, I think"}}]}), "not JSON"),
        (label_reply(["L00028"]), 'not {"label"'),
        (
            Reply(200, {"choices": [{"message": {"content": '{"label": "L00028", "why": "x"}'}}]}),
            'not {"label"',
        ),
        (Reply(200, b"<html>bad gateway</html>"), "JSONDecodeError"),
    ],
)
def test_any_unusable_answer_leaves_the_cascade_as_without_an_llm(customer, settings, reply, error):
    without = infer(customer)
    with loopback_server(lambda request: reply) as llm:
        settings.LLM_URL = llm.url
        body = infer(customer)

    assert len(asked(llm)) == 1
    assert body["outcome"]["kind"] == without["outcome"]["kind"] == "CLARIFY"
    assert body["outcome"]["active_check"] == without["outcome"]["active_check"]
    assert set(body["flags"]) == set(without["flags"])
    proposal = logged_proposal(body)
    assert proposal["result"] == "error" and error in proposal["error"]


def test_a_late_answer_is_not_waited_for(customer, settings):
    settings.LLM_PROPOSER_TIMEOUT_MS = 300
    with loopback_server(lambda request: Reply(200, {}, delay_s=2.0)) as llm:
        settings.LLM_URL = llm.url
        body = infer(customer)

    assert body["outcome"]["kind"] == "CLARIFY"
    assert body["timings_ms"]["weaver"] < 1500
    proposal = logged_proposal(body)
    assert proposal["result"] == "error" and "Timeout" in proposal["error"]


def test_a_confident_request_is_not_escalated(customer, settings):
    with loopback_server(lambda request: label_reply(SSO)) as llm:
        settings.LLM_URL = llm.url
        body = infer(customer, CONFIDENT)

    assert asked(llm) == []
    assert logged_proposal(body) is None and body["outcome"]["kind"] != "CLARIFY"


def test_over_its_budget_the_proposer_is_not_asked(customer, settings):
    settings.LLM_PROPOSER_PER_MINUTE = 1
    with loopback_server(lambda request: label_reply(SSO)) as llm:
        settings.LLM_URL = llm.url
        first, second = infer(customer), infer(customer)

    assert len(asked(llm)) == 1
    assert logged_proposal(first) == {"result": "chosen", "label": SSO}
    assert logged_proposal(second) == {"result": "budget"}
    assert second["outcome"]["kind"] == "CLARIFY"


def test_a_budget_of_zero_turns_the_proposer_off(customer, settings):
    settings.LLM_PROPOSER_PER_MINUTE = 0
    with loopback_server(lambda request: label_reply(SSO)) as llm:
        settings.LLM_URL = llm.url
        body = infer(customer)

    assert asked(llm) == [] and logged_proposal(body) is None


def test_the_proposer_is_offered_only_labels_the_policy_admits_and_never_an_ood_request(
    demo_snapshot, demo, envelope_for
):
    from inference.contracts import Flag, LexicalCandidates
    from inference.steps.policy_manager import precheck
    from inference.steps.weaver import weave, weaver_index_for

    offered: list[list[str]] = []

    def fake(candidates: Any) -> proposer.Proposal:
        offered.append(list(candidates))
        return proposer.Proposal(proposer.Result.ABSTAINED)

    index = weaver_index_for(demo_snapshot, demo)
    lexical = LexicalCandidates(raw={}, filtered={}, blocked=())

    def woven(prompt: str, role: str) -> Any:
        decision = precheck(envelope_for(prompt, role=role), demo)
        return weave(
            index=index,
            prompt_vec=demo.encoder.embed_one(prompt),
            lexical=lexical,
            decision=decision,
            proposer=fake,
        )

    woven(AMBIGUOUS, "customer")
    assert SSO in offered[-1] and TWO_FA in offered[-1]
    woven(AMBIGUOUS, "anonymous-visitor")  # the visitor's policy does not admit SSO
    assert SSO not in offered[-1]
    calls = len(offered)
    ood = woven("what is the best recipe for banana bread", "customer")
    assert Flag.OOD in ood.flags and len(offered) == calls and not ood.proposer_used
