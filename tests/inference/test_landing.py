"""Step 4: the landing point by set rules, abstention to OutOfScope, cold start (ARG §2.4), on the demo release."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.contracts import (
    Flag,
    Landing,
    PolicyConstraints,
    PolicyDecision,
    PolicyState,
    ResponseMode,
    WeaverResult,
)
from inference.steps.graph_index import GraphRuntime, graph_runtime_for
from inference.steps.landing import COLD_START_NODE_TYPES, LandingParams, land
from inference.steps.traversal import route
from ontology.graph_snapshot import GraphSnapshot

pytestmark = pytest.mark.django_db  # the session fixture publishes the demo release once

OUT_OF_SCOPE = {"N-global-oos-general", "N-global-oos-legal", "N-global-oos-offensive"}


def decision(**constraints: Any) -> PolicyDecision:
    return PolicyDecision(
        state=PolicyState.ALLOW,
        constraints=PolicyConstraints(**constraints),
        response_mode=ResponseMode.NORMAL,
    )


ALLOW = decision()


@pytest.fixture(scope="module")
def embed() -> Any:
    from arg_platform.embedder import get_embedder

    return get_embedder().embed_one


@pytest.fixture(scope="module")
def runtime(demo_snapshot: GraphSnapshot) -> GraphRuntime:
    return graph_runtime_for(demo_snapshot)


@pytest.fixture(scope="module")
def examples(demo_snapshot: GraphSnapshot) -> list[tuple[str, str, np.ndarray]]:
    """(LabelID, example, embedding) of every validated example of the ACTIVE labels."""
    from arg_platform.embedder import get_embedder

    pairs = [
        (label["id"], text)
        for label in demo_snapshot.documents["labels"]
        if label["status"] == "ACTIVE"
        for text in label["examples"]
    ]
    vectors = get_embedder().embed([text for _, text in pairs])
    return [(lid, text, vectors[i]) for i, (lid, text) in enumerate(pairs)]


def landing_for(snapshot: GraphSnapshot, runtime: GraphRuntime, vec: np.ndarray, **weaver: Any) -> Landing:
    dec = weaver.pop("decision", ALLOW)
    params = weaver.pop("params", LandingParams())
    weaver.setdefault("confidence", 0.9)
    return land(snapshot, runtime, weaver=WeaverResult(**weaver), decision=dec, prompt_vec=vec, params=params)


def attached(snapshot: GraphSnapshot, node_id: str, label_id: str) -> bool:
    return label_id in snapshot.node_labels[snapshot.position[node_id]]


def test_single_label_lands_on_the_best_attached_node(demo_snapshot, runtime, embed) -> None:
    vec = embed("where can I download last month's invoice")

    landing = landing_for(demo_snapshot, runtime, vec, l_final={"L00002": 0.9})

    assert landing.node_start == "N-billing-invoice-download"
    assert landing.reason == "label_match"
    assert landing.abstained is False
    assert landing.clusters == ("billing",)
    assert all(attached(demo_snapshot, node_id, "L00002") for node_id, _ in landing.candidates)
    scores = [score for _, score in landing.candidates]
    assert scores == sorted(scores, reverse=True)
    # label score × cosine
    expected = (
        0.9
        * (1 + 0.05 * 1)
        * float(demo_snapshot.embeddings[demo_snapshot.position[landing.node_start]] @ vec)
    )
    assert landing.candidates[0][1] == pytest.approx(expected, abs=1e-5)


def test_multi_label_set_lands_in_the_intersection_first(demo_snapshot, runtime, embed) -> None:
    vec = embed("what severity should this incident be and how do we update the status page")

    landing = landing_for(demo_snapshot, runtime, vec, l_final={"L00066": 0.8, "L00067": 0.7})

    assert landing.reason == "label_intersection"
    assert landing.node_start == "N-incident-severity-matrix"
    assert {node_id for node_id, _ in landing.candidates} == {
        "N-incident-severity-matrix",
        "N-incident-write-timeline",
    }
    for node_id, _ in landing.candidates:
        assert attached(demo_snapshot, node_id, "L00066") and attached(demo_snapshot, node_id, "L00067")


def test_multi_label_set_without_a_common_node_lands_in_the_union(demo_snapshot, runtime, embed) -> None:
    vec = embed("the invoice pdf has the wrong company name")

    landing = landing_for(demo_snapshot, runtime, vec, l_final={"L00002": 0.8, "L00003": 0.7})

    assert landing.reason == "label_match"
    for node_id, _ in landing.candidates:
        assert attached(demo_snapshot, node_id, "L00002") or attached(demo_snapshot, node_id, "L00003")


def test_the_most_specific_label_wins_over_its_ancestor(demo_snapshot, runtime, embed) -> None:
    # L00002 (Invoice download) is a child of L00001 (Invoices): the parent is dropped, even with a higher score
    landing = landing_for(
        demo_snapshot, runtime, embed("invoice pdf"), l_final={"L00001": 0.9, "L00002": 0.5}
    )

    assert landing.reason == "label_match"
    assert all(attached(demo_snapshot, node_id, "L00002") for node_id, _ in landing.candidates)


def test_landing_skips_nodes_whose_type_the_policy_forbids(demo_snapshot, runtime, embed) -> None:
    vec = embed("where can I download last month's invoice")

    landing = landing_for(
        demo_snapshot,
        runtime,
        vec,
        l_final={"L00002": 0.9},
        decision=decision(forbidden_node_types=frozenset({"Info"})),
    )

    assert landing.node_start is not None
    assert {demo_snapshot.node(n).type for n, _ in landing.candidates}.isdisjoint({"Info"})
    assert all(attached(demo_snapshot, node_id, "L00002") for node_id, _ in landing.candidates)


def test_ood_lands_on_the_most_similar_out_of_scope_node(demo_snapshot, runtime, embed) -> None:
    vec = embed("I'd like a lawyer to sue you")
    similarity = {n: float(demo_snapshot.embeddings[demo_snapshot.position[n]] @ vec) for n in OUT_OF_SCOPE}

    landing = landing_for(demo_snapshot, runtime, vec, l_final={"L00002": 0.9}, flags=frozenset({Flag.OOD}))

    assert landing.abstained is True
    assert landing.reason == "ood"
    assert landing.node_start == max(similarity, key=similarity.get)
    assert landing.node_start == "N-global-oos-legal"
    assert {node_id for node_id, _ in landing.candidates} == OUT_OF_SCOPE
    assert Flag.ABSTAIN_RECOMMENDED in landing.flags


@pytest.mark.parametrize(
    "weaver",
    [
        {"l_final": {}},
        {"l_final": {"L00002": 0.9}, "flags": frozenset({Flag.ABSTAIN_RECOMMENDED})},
        {"l_final": {"L00002": 0.9}, "confidence": 0.1},
        {"l_final": {"L99999": 0.9}},  # unknown to the release
    ],
    ids=["empty-l-final", "abstain-recommended", "low-confidence", "unknown-label"],
)
def test_weak_or_empty_label_sets_abstain_to_out_of_scope(demo_snapshot, runtime, embed, weaver) -> None:
    landing = landing_for(demo_snapshot, runtime, embed("what's the weather in Paris tomorrow"), **weaver)

    assert landing.abstained is True
    assert landing.node_start in OUT_OF_SCOPE
    assert landing.reason in ("ood", "no_attachment", "low_confidence")


def test_abstention_threshold_is_a_parameter(demo_snapshot, runtime, embed) -> None:
    vec = embed("where can I download last month's invoice")

    strict = landing_for(
        demo_snapshot,
        runtime,
        vec,
        l_final={"L00002": 0.9},
        confidence=0.5,
        params=LandingParams(min_confidence=0.6),
    )
    lenient = landing_for(
        demo_snapshot,
        runtime,
        vec,
        l_final={"L00002": 0.9},
        confidence=0.5,
        params=LandingParams(min_confidence=0.4),
    )

    assert strict.abstained is True
    assert lenient.node_start == "N-billing-invoice-download"


def test_policy_contradicting_every_label_abstains_with_no_attachment(demo_snapshot, runtime, embed) -> None:
    landing = landing_for(
        demo_snapshot,
        runtime,
        embed("declare an incident"),
        l_final={"L00066": 0.9},
        decision=decision(forbidden_labels=frozenset({"L00065", "L00066", "L00067", "L00068"})),
    )

    assert landing.abstained is True
    assert landing.reason == "no_attachment"
    assert landing.node_start in OUT_OF_SCOPE


def test_without_an_admissible_out_of_scope_node_the_landing_falls_back(
    demo_snapshot, runtime, embed
) -> None:
    landing = landing_for(
        demo_snapshot,
        runtime,
        embed("tell me a joke"),
        flags=frozenset({Flag.OOD}),
        decision=decision(forbidden_node_types=frozenset({"OutOfScope"})),
    )

    assert landing == Landing(node_start=None, abstained=True, reason="fallback", flags=landing.flags)
    assert Flag.ABSTAIN_RECOMMENDED in landing.flags


def test_cold_start_lands_info_first_in_the_best_cluster(demo_snapshot, runtime, embed) -> None:
    vec = embed("can my invoices show the project code of each deployment")

    landing = landing_for(
        demo_snapshot,
        runtime,
        vec,
        top_k=(("L00001", 0.55), ("L00042", 0.3)),
        confidence=0.3,
        flags=frozenset({Flag.NEW_INTENT_CANDIDATE, Flag.ABSTAIN_RECOMMENDED}),
    )

    assert landing.reason == "cold_start"
    assert landing.abstained is False
    assert landing.flags == frozenset({Flag.NEW_INTENT_CANDIDATE})
    assert landing.clusters == ("billing",)
    node = demo_snapshot.node(landing.node_start)
    assert "billing" in node.clusters
    assert node.type in COLD_START_NODE_TYPES


def test_ood_wins_over_a_new_intent_candidate(demo_snapshot, runtime, embed) -> None:
    landing = landing_for(
        demo_snapshot,
        runtime,
        embed("recipe for lasagna"),
        flags=frozenset({Flag.NEW_INTENT_CANDIDATE, Flag.OOD}),
    )

    assert landing.abstained is True
    assert landing.node_start in OUT_OF_SCOPE


def test_cold_start_never_lands_on_a_high_risk_action_over_every_example(
    demo_snapshot, runtime, examples
) -> None:
    """Property over all validated examples (each as a novel pattern near its own label): the landing and
    the route after it never touch a high-risk Action / DirectAction."""
    typology = "operator-console"  # prefers Actions: the hardest case for the rule
    landed = 0
    for lid, _, vec in examples:
        weaver = WeaverResult(
            top_k=((lid, 0.6),), confidence=0.4, flags=frozenset({Flag.NEW_INTENT_CANDIDATE})
        )
        landing = land(demo_snapshot, runtime, weaver=weaver, decision=ALLOW, prompt_vec=vec)
        path = route(
            demo_snapshot,
            runtime,
            landing=landing,
            weaver=weaver,
            decision=ALLOW,
            typology=typology,
            prompt_vec=vec,
        )
        assert Flag.NEW_INTENT_CANDIDATE in landing.flags
        for node_id in (*(n for n, _ in landing.candidates), *path.path_nodes):
            node = demo_snapshot.node(node_id)
            assert not (node.type in ("Action", "DirectAction") and node.risk == "high"), (lid, node_id)
        if not landing.abstained:
            landed += 1
            assert demo_snapshot.node(landing.node_start).type in COLD_START_NODE_TYPES
    assert landed == len(examples)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_cold_start_property_over_random_weaver_outputs(demo_snapshot, runtime, examples, data) -> None:
    label_ids = sorted({lid for lid, _, _ in examples})
    _, _, vec = data.draw(st.sampled_from(examples))
    top_k = data.draw(
        st.lists(
            st.tuples(st.sampled_from(label_ids), st.floats(0.0, 1.0)), max_size=4, unique_by=lambda t: t[0]
        )
    )
    l_final = data.draw(st.dictionaries(st.sampled_from(label_ids), st.floats(0.0, 1.0), max_size=2))
    weaver = WeaverResult(
        top_k=tuple(top_k),
        l_final=l_final,
        confidence=data.draw(st.floats(0.0, 1.0)),
        flags=frozenset({Flag.NEW_INTENT_CANDIDATE})
        | data.draw(st.frozensets(st.sampled_from(list(Flag)))) - {Flag.OOD},
    )

    landing = land(demo_snapshot, runtime, weaver=weaver, decision=ALLOW, prompt_vec=vec)

    assert Flag.NEW_INTENT_CANDIDATE in landing.flags
    for node_id, _ in landing.candidates:
        node = demo_snapshot.node(node_id)
        assert node.type in COLD_START_NODE_TYPES | {"OutOfScope"}
        assert not (node.type in ("Action", "DirectAction") and node.risk == "high")


def test_every_example_lands_on_a_node_of_its_label(demo_snapshot, runtime, examples) -> None:
    for lid, text, vec in examples:
        landing = land(
            demo_snapshot,
            runtime,
            weaver=WeaverResult(l_final={lid: 0.9}, confidence=0.9),
            decision=ALLOW,
            prompt_vec=vec,
        )
        assert landing.abstained is False, text
        node = landing.node_start
        descendants = {runtime.label_ids[c] for c in runtime.descendants(runtime.label_code[lid])}
        assert attached(demo_snapshot, node, lid) or any(
            attached(demo_snapshot, node, d) for d in descendants
        ), text


def test_landing_is_deterministic(demo_snapshot, runtime, examples) -> None:
    fresh = GraphRuntime.build(demo_snapshot)
    for lid, _, vec in examples[::7]:
        weaver = WeaverResult(l_final={lid: 0.7}, top_k=((lid, 0.7),), confidence=0.9)
        first = land(demo_snapshot, runtime, weaver=weaver, decision=ALLOW, prompt_vec=vec)
        assert land(demo_snapshot, fresh, weaver=weaver, decision=ALLOW, prompt_vec=vec.copy()) == first
