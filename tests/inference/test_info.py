"""Step 9 — ARG-Info on the demo pack's release: grounded answer, C_info, active check, status."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from arg_platform.llm import chat_completions_url
from inference.contracts import (
    ActiveCheck,
    Envelope,
    Flag,
    InfoStatus,
    OutcomeKind,
    PolicyConstraints,
    PolicyDecision,
    PolicyState,
    RequestContext,
    ResponseMode,
    Route,
    WeaverResult,
)
from inference.steps.info import (
    InfoParams,
    active_check_for,
    answer_info,
    info_index_for,
    nearby_branches,
    sampled,
    sentences,
    status_after_feedback,
)

from .loopback import Reply, loopback_server

pytestmark = pytest.mark.django_db  # the session's demo release is published in the test database

SETUP_2FA = "N-access-2fa-setup"  # Info, label L00025 "Set up 2FA"
LOST_2FA = "N-access-2fa-lost-decision"  # Decision, label L00026 "Lost 2FA device"
ALIGNED = "How do I enable two-factor authentication?"
UNRELATED = "my pizza is cold"


def vec(text: str) -> np.ndarray:
    from arg_platform.embedder import get_embedder

    return get_embedder().embed_one(text)


def envelope(prompt: str, *, typology: str | None = None, request_id: str = "r-info-1") -> Envelope:
    return Envelope(
        request_id=request_id,
        project_id=1,
        prompt_raw=prompt,
        prompt=prompt,
        language="en",
        language_confidence=1.0,
        context=RequestContext(role="customer"),
        role_key="customer",
        typology_key=typology,
    )


def decision(state: PolicyState = PolicyState.ALLOW, **constraints: Any) -> PolicyDecision:
    return PolicyDecision(
        state=state, constraints=PolicyConstraints(**constraints), response_mode=ResponseMode.NORMAL
    )


def weaver(*labels: str, flags: frozenset[Flag] = frozenset(), top_k: tuple[str, ...] = ()) -> WeaverResult:
    return WeaverResult(
        top_k=tuple((label, 0.8 - 0.01 * i) for i, label in enumerate(top_k or labels)),
        l_final={label: 0.9 for label in labels},
        confidence=0.9,
        flags=flags,
    )


def answer(snapshot: Any, prompt: str, target: str = SETUP_2FA, **kwargs: Any) -> Any:
    args: dict[str, Any] = {
        "snapshot": snapshot,
        "route": Route(target=target, path_nodes=(target,)),
        "envelope": envelope(prompt),
        "decision": decision(),
        "weaver": weaver("L00025"),
        "prompt_vec": vec(prompt),
        "sample_rate": 0.0,
    }
    args.update(kwargs)
    return answer_info(**args)


def one_hop(snapshot: Any, node_id: str) -> set[str]:
    position = snapshot.position[node_id]
    idx, _, _ = snapshot.neighbours(
        position, direction="both", edge_types=("ELABORATES", "RELATED_TO", "LEADS_TO")
    )
    return {snapshot.node_ids[i] for i in idx.tolist()}


# --- grounded extractive answer ----------------------------------------------------------------------


def test_extractive_answer_cites_the_target_first_and_only_its_allowed_neighbourhood(demo_snapshot):
    outcome = answer(demo_snapshot, ALIGNED)

    assert outcome.kind == OutcomeKind.INFO
    assert [c.node_id for c in outcome.citations] == [SETUP_2FA, "N-access-recovery-codes"]
    assert {c.node_id for c in outcome.citations} <= one_hop(demo_snapshot, SETUP_2FA) | {SETUP_2FA}
    assert outcome.details["mode"] == "extractive"
    assert outcome.details["context_nodes"] == [SETUP_2FA, "N-access-recovery-codes", "N-access-2fa-overview"]
    # grounded: the answer is made of the cited excerpts, each copied from its node's chunk
    assert outcome.answer == " ".join(c.excerpt for c in outcome.citations)
    for citation in outcome.citations:
        for sentence in sentences(citation.excerpt):
            assert sentence in demo_snapshot.node(citation.node_id).chunk
    assert outcome.citations[0].excerpt == demo_snapshot.node(SETUP_2FA).chunk


def test_policy_gates_the_neighbourhood_by_node_type_and_label(demo_snapshot):
    no_faq = answer(demo_snapshot, ALIGNED, decision=decision(forbidden_node_types=frozenset({"FAQ"})))
    no_label = answer(demo_snapshot, ALIGNED, decision=decision(forbidden_labels=frozenset({"L00026"})))

    assert no_faq.details["context_nodes"] == [SETUP_2FA, "N-access-2fa-overview"]
    assert no_label.details["context_nodes"] == [SETUP_2FA, "N-access-2fa-overview"]
    assert [c.node_id for c in no_faq.citations] == [SETUP_2FA]
    assert [c.node_id for c in no_label.citations] == [SETUP_2FA]


def test_a_target_the_policy_does_not_admit_is_refused_without_content(demo_snapshot):
    outcome = answer(demo_snapshot, ALIGNED, decision=decision(forbidden_node_types=frozenset({"Info"})))

    assert outcome.kind == OutcomeKind.REFUSE
    assert outcome.answer == "This information is not available under your access policy."
    assert outcome.citations == ()
    assert outcome.c_info is None


def test_the_neighbourhood_is_cut_to_the_typology_complexity_budget(demo_snapshot):
    prompt = "I lost my phone with the authenticator"
    quick = answer(demo_snapshot, prompt, target=LOST_2FA, weaver=weaver("L00026"))  # default: budget 2
    console = answer(
        demo_snapshot,
        prompt,
        target=LOST_2FA,
        weaver=weaver("L00026"),
        envelope=envelope(prompt, typology="operator-console"),  # budget 8
    )

    assert quick.details["context_nodes"] == [LOST_2FA, "N-access-recovery-codes", "N-access-2fa-overview"]
    assert console.details["context_nodes"] == [
        LOST_2FA,
        "N-access-recovery-codes",
        "N-access-2fa-overview",
        "N-access-identity-verification",
        "N-access-triage",
    ]


def test_a_memory_read_target_returns_its_chunk_as_a_memory_outcome(demo_snapshot):
    node = demo_snapshot.node("N-access-read-org-memberships")

    outcome = answer(demo_snapshot, "which orgs am I in", target=node.node_id, weaver=weaver("L00031"))

    assert outcome.kind == OutcomeKind.MEMORY
    assert outcome.answer == node.chunk
    assert [c.node_id for c in outcome.citations] == [node.node_id]
    assert outcome.details == {"note": "memory reads are not connected yet: this is what the node would read"}
    assert outcome.info_status is None


def test_an_action_target_is_a_caller_error(demo_snapshot):
    with pytest.raises(ValueError, match="N-billing-resend-invoice is a DirectAction"):
        answer(demo_snapshot, "resend my invoice", target="N-billing-resend-invoice")


def test_sentences_do_not_end_at_abbreviations():
    assert sentences("Use a number, e.g. INV-1. Then wait! Done?") == (
        "Use a number, e.g. INV-1.",
        "Then wait!",
        "Done?",
    )


# --- C_info ------------------------------------------------------------------------------------------


def test_c_info_stays_in_bounds_and_reports_its_components(demo_snapshot):
    prompts = [ALIGNED, UNRELATED, "2fa", "", "two factor two factor enable enable 2fa"]
    for prompt in prompts:
        outcome = answer(demo_snapshot, prompt or " ", envelope=envelope(prompt or " "))
        components = outcome.details["c_info_components"]

        assert 0.0 <= outcome.c_info <= 1.0
        assert set(components) == {"value", "lexical", "semantic", "taxonomy", "policy", "fallback"}
        assert all(0.0 <= v <= 1.0 for v in components.values())
        assert components["value"] == outcome.c_info


def test_a_more_aligned_prompt_gets_a_higher_c_info(demo_snapshot):
    aligned = answer(demo_snapshot, ALIGNED)
    unrelated = answer(demo_snapshot, UNRELATED)

    assert aligned.c_info > unrelated.c_info
    assert aligned.details["c_info_components"]["lexical"] > unrelated.details["c_info_components"]["lexical"]
    assert (
        aligned.details["c_info_components"]["semantic"] > unrelated.details["c_info_components"]["semantic"]
    )
    assert aligned.c_info >= 0.7
    assert unrelated.c_info < 0.45


def test_a_restricted_request_lowers_c_info(demo_snapshot):
    allowed = answer(demo_snapshot, ALIGNED)
    restricted = answer(demo_snapshot, ALIGNED, decision=decision(PolicyState.RESTRICT))

    assert restricted.details["c_info_components"]["policy"] == 0.3
    assert allowed.details["c_info_components"]["policy"] == 1.0
    assert restricted.c_info == pytest.approx(allowed.c_info - 0.1 * 0.7, abs=1e-4)


def test_the_fallback_path_lowers_c_info_and_ood_caps_it(demo_snapshot):
    plain = answer(demo_snapshot, ALIGNED)
    low_margin = answer(demo_snapshot, ALIGNED, weaver=weaver("L00025", flags=frozenset({Flag.LOW_MARGIN})))
    ood = answer(demo_snapshot, ALIGNED, weaver=weaver("L00025", flags=frozenset({Flag.OOD})))

    assert low_margin.details["c_info_components"]["fallback"] == 0.7
    assert low_margin.c_info < plain.c_info
    assert ood.c_info == 0.3
    assert ood.info_status == InfoStatus.LOW_CONFIDENCE


def test_taxonomy_stability_is_the_share_of_path_nodes_on_final_labels_or_their_clusters(demo_snapshot):
    off_cluster = "N-billing-invoice-download"  # billing, not accounts-access
    on_path = answer(demo_snapshot, ALIGNED, route=Route(target=SETUP_2FA, path_nodes=(LOST_2FA, SETUP_2FA)))
    mixed = answer(demo_snapshot, ALIGNED, route=Route(target=SETUP_2FA, path_nodes=(off_cluster, SETUP_2FA)))
    no_labels = answer(demo_snapshot, ALIGNED, weaver=WeaverResult())

    assert on_path.details["c_info_components"]["taxonomy"] == 1.0
    assert mixed.details["c_info_components"]["taxonomy"] == 0.5
    assert no_labels.details["c_info_components"]["taxonomy"] == 0.0
    assert no_labels.details["c_info_components"]["lexical"] == 0.0


# --- active check and outcome status -----------------------------------------------------------------


def test_active_check_triggers_on_low_and_mid_c_info_only():
    plain = weaver("L00025")

    low = active_check_for(value=0.3, weaver=plain, branches=[], seed="s", sample_rate=0.0)
    mid = active_check_for(value=0.6, weaver=plain, branches=[], seed="s", sample_rate=0.0)
    high = active_check_for(value=0.8, weaver=plain, branches=[], seed="s", sample_rate=0.0)

    assert low == ActiveCheck("helpful", "Did this help?", ("Yes", "No"), "low_c_info")
    assert mid == ActiveCheck("helpful", "Did this help?", ("Yes", "No"), "mid_c_info")
    assert high is None


def test_vector_ambiguity_asks_x_or_y_with_the_two_best_branches(demo_snapshot):
    ambiguous = weaver(
        "L00025", flags=frozenset({Flag.VECTOR_AMBIGUITY}), top_k=("L00025", "L00026", "L00024")
    )

    outcome = answer(demo_snapshot, ALIGNED, weaver=ambiguous)

    assert outcome.active_check == ActiveCheck(
        "disambiguate",
        "Do you mean Set up 2FA or Lost 2FA device?",
        ("Set up 2FA", "Lost 2FA device"),
        "vector_ambiguity",
    )
    # what a continuation answers against (inference.steps.clarification)
    assert outcome.details["disambiguate"]["options"] == [
        {"label_id": "L00025", "name": "Set up 2FA"},
        {"label_id": "L00026", "name": "Lost 2FA device"},
    ]


def test_vector_ambiguity_with_a_single_branch_asks_no_x_or_y(demo_snapshot):
    """One label in the top-K is no choice: the question falls back to the C_info checks (asking about
    graph nodes would offer the user something no continuation can route to)."""
    ambiguous = weaver("L00025", flags=frozenset({Flag.VECTOR_AMBIGUITY}))  # one label in the top-K

    outcome = answer(demo_snapshot, ALIGNED, weaver=ambiguous, sample_rate=1.0)

    assert outcome.active_check is not None and outcome.active_check.kind == "helpful"
    assert "disambiguate" not in outcome.details


def test_the_branches_asked_about_are_active_labels_the_policy_admits(demo_snapshot):
    """A SHADOW label is still under evaluation and a forbidden one is not for this caller: neither is
    offered as "X or Y?", and fewer than two branches is no question."""
    index = info_index_for(demo_snapshot)
    top = (("L00056", 0.72), ("L00025", 0.71), ("L00026", 0.70), ("L00028", 0.69))  # L00056 is SHADOW
    ambiguous = WeaverResult(top_k=top, flags=frozenset({Flag.VECTOR_AMBIGUITY}))

    def asked(policy: PolicyDecision) -> list[str]:
        return [option.label_id for option in nearby_branches(index, ambiguous, policy)]

    assert asked(decision()) == ["L00025", "L00026"]
    assert asked(decision(forbidden_labels=frozenset({"L00025"}))) == ["L00026", "L00028"]
    assert asked(decision(allowed_labels=frozenset({"L00028"}))) == []


def test_controlled_sampling_is_deterministic_and_close_to_its_rate(demo_snapshot):
    seeds = [f"req-{i}" for i in range(4000)]
    picked = [seed for seed in seeds if sampled(seed, 0.05)]

    assert 0.035 < len(picked) / len(seeds) < 0.065
    assert picked == [seed for seed in seeds if sampled(seed, 0.05)]
    assert not any(sampled(seed, 0.0) for seed in seeds[:100])
    assert all(sampled(seed, 1.0) for seed in seeds[:100])
    always = answer(demo_snapshot, ALIGNED, sample_rate=1.0)
    never = answer(demo_snapshot, ALIGNED, sample_rate=0.0)
    by_seed = answer(demo_snapshot, ALIGNED, sample_rate=0.05, rng_seed=picked[0])
    assert always.active_check == ActiveCheck("helpful", "Did this help?", ("Yes", "No"), "sampled")
    assert never.active_check is None
    assert by_seed.active_check.reason == "sampled"


def test_silence_never_confirms_an_answer(demo_snapshot):
    prompts = [ALIGNED, UNRELATED, "2fa", "recovery codes", "the invitation link expired"]
    statuses = {answer(demo_snapshot, p).info_status for p in prompts}

    assert statuses == {InfoStatus.UNCERTAIN, InfoStatus.LOW_CONFIDENCE}
    assert answer(demo_snapshot, ALIGNED).info_status == InfoStatus.UNCERTAIN
    assert answer(demo_snapshot, UNRELATED).info_status == InfoStatus.LOW_CONFIDENCE
    assert answer(demo_snapshot, ALIGNED).details["silent_outcome"] is True


def test_only_explicit_feedback_moves_the_status():
    for current in InfoStatus:
        assert status_after_feedback(current, helpful=None, c_info=0.9) == current
        assert status_after_feedback(current, helpful=True, c_info=0.2) == InfoStatus.CONFIRMED
        assert status_after_feedback(current, helpful=False, c_info=0.9) == InfoStatus.LOW_CONFIDENCE


def test_the_status_threshold_follows_the_params(demo_snapshot):
    strict = answer(demo_snapshot, ALIGNED, params=InfoParams(low_threshold=0.99, mid_threshold=0.995))

    assert strict.info_status == InfoStatus.LOW_CONFIDENCE
    assert strict.active_check.reason == "low_c_info"


# --- the optional LLM --------------------------------------------------------------------------------


def completion(content: str) -> Reply:
    return Reply(200, {"choices": [{"message": {"role": "assistant", "content": content}}]})


def test_with_an_llm_configured_the_answer_is_generated_from_the_context(demo_snapshot, settings):
    text = f"Open Account › Security › Two-factor authentication and scan the QR code [{SETUP_2FA}]."
    with loopback_server(lambda request: completion(text)) as llm:
        settings.LLM_URL, settings.LLM_MODEL, settings.LLM_API_KEY = llm.url, "tiny", "sk-test"
        outcome = answer(demo_snapshot, ALIGNED)

    assert outcome.details["mode"] == "llm"
    assert outcome.answer == text
    assert [c.node_id for c in outcome.citations] == [SETUP_2FA]
    assert 0.0 <= outcome.c_info <= 1.0
    (request,) = llm.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    body = request["json"]
    assert body["model"] == "tiny"
    assert "Answer only from the context" in body["messages"][0]["content"]
    user = body["messages"][1]["content"]
    assert f"[{SETUP_2FA}]" in user and "[N-access-recovery-codes]" in user
    assert "[N-access-2fa-overview]" not in user  # only the retrieved context is sent
    assert user.endswith(f"Question: {ALIGNED}")


def test_the_llm_provider_sees_the_question_with_its_pii_replaced(demo_snapshot, settings):
    question = (
        "How do I enable two-factor authentication? I'm at maria.lopez@example.com, card 4111 1111 1111 1111"
    )
    with loopback_server(lambda request: completion(f"Scan the QR code [{SETUP_2FA}].")) as llm:
        settings.LLM_URL, settings.LLM_MODEL = llm.url, "tiny"
        outcome = answer(demo_snapshot, question)

    assert outcome.details["mode"] == "llm"
    user = llm.requests[0]["json"]["messages"][1]["content"]
    assert user.endswith("Question: How do I enable two-factor authentication? I'm at <EMAIL>, card <CARD>")
    assert "maria" not in user and "4111" not in user


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply(500, {"error": "overloaded"}), "HTTPError"),
        (Reply(200, b"not json"), "JSONDecodeError"),
        (completion("You can enable it in the settings [N-elsewhere]."), "cites no context node"),
        (completion("   "), "empty answer"),
    ],
)
def test_any_llm_error_falls_back_to_the_extractive_answer(demo_snapshot, settings, reply, error):
    extractive = answer(demo_snapshot, ALIGNED)
    with loopback_server(lambda request: reply) as llm:
        settings.LLM_URL = llm.url
        outcome = answer(demo_snapshot, ALIGNED)

    assert len(llm.requests) == 1
    assert outcome.details["mode"] == "extractive"
    assert error in outcome.details["llm_error"]
    assert outcome.answer == extractive.answer
    assert outcome.citations == extractive.citations


def test_an_unreachable_llm_falls_back_to_the_extractive_answer(demo_snapshot, settings):
    with loopback_server(lambda request: completion("unused")) as llm:
        url = llm.url
    settings.LLM_URL = url  # the server is gone: connection refused

    outcome = answer(demo_snapshot, ALIGNED)

    assert outcome.details["mode"] == "extractive"
    assert "Outbound" in outcome.details["llm_error"]
    assert outcome.citations[0].node_id == SETUP_2FA


def test_chat_completions_url_accepts_the_usual_base_urls():
    assert chat_completions_url("http://h:1") == "http://h:1/v1/chat/completions"
    assert chat_completions_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert chat_completions_url("http://h:1/v1/chat/completions") == "http://h:1/v1/chat/completions"


def test_the_route_target_must_be_in_the_release(demo_snapshot):
    with pytest.raises(ValueError, match="N-nowhere"):
        answer(demo_snapshot, ALIGNED, route=replace(Route(target=SETUP_2FA), target="N-nowhere"))
