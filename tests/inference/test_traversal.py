"""Steps 6–7: fast path and deterministic best-first / beam traversal (ARG §2.6–2.7)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arg_platform.vocabulary import NODE_TYPES
from inference.contracts import (
    Flag,
    Landing,
    PolicyConstraints,
    PolicyDecision,
    PolicyState,
    ResponseMode,
    Route,
    WeaverResult,
)
from inference.steps.graph_index import PASS_THROUGH_TYPES, TERMINAL_TYPES, GraphRuntime, graph_runtime_for
from inference.steps.landing import land
from inference.steps.scoring import SEMANTIC_EDGE, ScoringParams, expand_and_score
from inference.steps.traversal import TraversalParams, route
from ontology.graph_snapshot import GraphSnapshot
from tests.inference.test_scoring import BILLING_LABELS, FAQ_FIRST, PROMPT, tiny_snapshot, unit

pytestmark = pytest.mark.django_db  # the demo tests read the session's published demo release

BACKWARD = {"RELATED_TO", "ALTERNATIVE_TO"}


def decision(**constraints: Any) -> PolicyDecision:
    return PolicyDecision(
        state=PolicyState.ALLOW,
        constraints=PolicyConstraints(**constraints),
        response_mode=ResponseMode.NORMAL,
    )


ALLOW = decision()


@pytest.fixture(scope="module")
def runtime(demo_snapshot: GraphSnapshot) -> GraphRuntime:
    return graph_runtime_for(demo_snapshot)


@pytest.fixture(scope="module")
def examples(demo_snapshot: GraphSnapshot) -> list[tuple[str, str, np.ndarray]]:
    from arg_platform.embedder import get_embedder

    pairs = [
        (label["id"], text)
        for label in demo_snapshot.documents["labels"]
        if label["status"] == "ACTIVE"
        for text in label["examples"]
    ]
    vectors = get_embedder().embed([text for _, text in pairs])
    return [(lid, text, vectors[i]) for i, (lid, text) in enumerate(pairs)]


@pytest.fixture(scope="module")
def typologies(demo_snapshot: GraphSnapshot) -> dict[str, dict[str, Any]]:
    return {t["key"]: t for t in demo_snapshot.documents["typologies"]}


def route_from(
    snapshot: GraphSnapshot,
    start: str,
    *,
    l_final: dict[str, float],
    typology: Any,
    prompt_vec: np.ndarray,
    **kw: Any,
) -> Route:
    node = snapshot.node(start)
    landing = kw.pop("landing", None) or Landing(
        node_start=start,
        reason="label_match",
        clusters=tuple(sorted(node.clusters)),
        flags=kw.pop("flags", frozenset()),
    )
    return route(
        snapshot,
        graph_runtime_for(snapshot),
        landing=landing,
        weaver=WeaverResult(l_final=l_final, confidence=kw.pop("confidence", 0.95)),
        decision=kw.pop("decision", ALLOW),
        typology=typology,
        prompt_vec=prompt_vec,
        **kw,
    )


def assert_well_formed(snapshot: GraphSnapshot, result: Route, max_hops: int) -> None:
    """A path: starts at the landing point, visits no node twice, follows real typed edges (or one semantic
    jump from the landing point), respects max hops, and ends at a terminal target."""
    nodes, edges = result.path_nodes, result.path_edges
    assert len(set(nodes)) == len(nodes)
    assert len(edges) == max(0, len(nodes) - 1)
    assert len(edges) <= max_hops
    for i, (source, target, edge_type) in enumerate(edges):
        assert (source, target) == (nodes[i], nodes[i + 1])
        if edge_type == SEMANTIC_EDGE:
            assert i == 0
            continue
        a, b = snapshot.position[source], snapshot.position[target]
        out_idx, out_typ, _ = snapshot.neighbours(a, direction="out")
        forward = {snapshot.edge_type_name(t) for p, t in zip(out_idx, out_typ, strict=True) if p == b}
        in_idx, in_typ, _ = snapshot.neighbours(a, direction="in")
        backward = {
            snapshot.edge_type_name(t) for p, t in zip(in_idx, in_typ, strict=True) if p == b
        } & BACKWARD
        assert edge_type in forward | backward
    if result.target is not None:
        assert result.target == nodes[-1]
        assert snapshot.node(result.target).type in TERMINAL_TYPES
        for middle in nodes[1:-1]:
            assert snapshot.node(middle).type in PASS_THROUGH_TYPES


# --- fast path ---------------------------------------------------------------------------------


def test_fast_path_resolves_a_shortcut_landing(demo_snapshot, examples, typologies) -> None:
    vec = next(v for lid, text, v in examples if lid == "L00002")

    result = route_from(
        demo_snapshot,
        "N-billing-shortcut-invoices",
        l_final={"L00002": 0.9},
        typology=typologies["quick-answer"],
        prompt_vec=vec,
    )

    assert result.fast_path is True
    assert result.reason == "fast_path"
    assert len(result.path_nodes) == 2
    assert result.path_edges[0][2] == "SHORTCUT_TO"
    assert_well_formed(demo_snapshot, result, 3)


def test_fast_path_on_a_stable_terminal_landing(demo_snapshot, typologies) -> None:
    vec = demo_snapshot.embeddings[demo_snapshot.position["N-billing-upgrade-plan"]]

    fast = route_from(
        demo_snapshot,
        "N-billing-upgrade-plan",
        l_final={"L00014": 0.9},
        typology=typologies["quick-answer"],
        prompt_vec=vec,
    )

    assert fast == Route(
        target="N-billing-upgrade-plan",
        path_nodes=("N-billing-upgrade-plan",),
        fast_path=True,
        reason="fast_path",
    )


@pytest.mark.parametrize(
    "change",
    [
        {"typology": "guided-troubleshooting"},  # not fast-path eligible
        {"confidence": 0.5},
        {"flags": frozenset({Flag.NEW_INTENT_CANDIDATE})},
    ],
    ids=["typology-not-eligible", "low-confidence", "cold-start"],
)
def test_fast_path_not_taken(demo_snapshot, examples, typologies, change) -> None:
    vec = next(v for lid, text, v in examples if lid == "L00002")
    typology = typologies[change.pop("typology", "quick-answer")]

    result = route_from(
        demo_snapshot,
        "N-billing-shortcut-invoices",
        l_final={"L00002": 0.9},
        typology=typology,
        prompt_vec=vec,
        **change,
    )

    assert result.fast_path is False
    assert result.reason == "beam"
    assert_well_formed(demo_snapshot, result, typology["max_hops"])


@pytest.fixture(scope="module")
def decision_graph() -> GraphSnapshot:
    """D-start → an FAQ, an Info and a Decision that leads to the Info closest to the prompt."""
    nodes = [
        {
            "id": "D-start",
            "type": "Decision",
            "labels": ["L1"],
            "clusters": ["billing"],
            "vec": unit(0, 0, 1),
        },
        {"id": "F-faq", "type": "FAQ", "labels": ["L1"], "clusters": ["billing"], "vec": unit(1, 0.4)},
        {"id": "I-info", "type": "Info", "labels": ["L1"], "clusters": ["billing"], "vec": unit(0.2, 1)},
        {"id": "D-mid", "type": "Decision", "labels": ["L1"], "clusters": ["billing"], "vec": unit(0.6, 1)},
        {"id": "I-best", "type": "Info", "labels": ["L2"], "clusters": ["billing"], "vec": unit(1)},
    ]
    edges = [
        ("D-start", "F-faq", "LEADS_TO", 0.5),
        ("D-start", "I-info", "LEADS_TO", 0.5),
        ("D-start", "D-mid", "LEADS_TO", 0.9),
        ("D-mid", "I-best", "LEADS_TO", 0.9),
    ]
    return tiny_snapshot(nodes, edges, labels=BILLING_LABELS, clusters=["billing"], typologies=[FAQ_FIRST])


def test_fast_path_from_a_decision_takes_its_best_stable_neighbour(decision_graph) -> None:
    no_jumps = TraversalParams(semantic_jumps=False)

    fast = route_from(
        decision_graph, "D-start", l_final={"L1": 0.9}, typology=FAQ_FIRST, prompt_vec=PROMPT, params=no_jumps
    )
    slow = route_from(
        decision_graph,
        "D-start",
        l_final={"L1": 0.9},
        typology=FAQ_FIRST,
        prompt_vec=PROMPT,
        confidence=0.5,
        params=no_jumps,
    )

    assert (fast.fast_path, fast.target, fast.path_edges) == (
        True,
        "F-faq",
        (("D-start", "F-faq", "LEADS_TO"),),
    )
    # without the fast path the same first move wins: the fast path only skips work
    assert (slow.fast_path, slow.target) == (False, "F-faq")


def test_best_first_passes_through_a_decision_to_a_better_terminal(decision_graph) -> None:
    guided = {
        **FAQ_FIRST,
        "preferred_node_types": ["Decision", "Info"],
        "fast_path_eligible": False,
        "weights": {"alpha": 0.1, "beta": 0.3, "gamma": 0.1, "delta": 0.5, "epsilon": 0.0},
    }

    result = route_from(
        decision_graph,
        "D-start",
        l_final={"L1": 0.9},
        typology=guided,
        prompt_vec=PROMPT,
        params=TraversalParams(semantic_jumps=False),
    )

    assert result.target == "I-best"
    assert result.path_nodes == ("D-start", "D-mid", "I-best")
    assert result.path_edges == (("D-start", "D-mid", "LEADS_TO"), ("D-mid", "I-best", "LEADS_TO"))
    assert result.reason == "beam"
    assert result.considered == 4
    assert [s.node_id for s in result.scored][:1] == ["D-mid"]


# --- hops, loops, dead ends -------------------------------------------------------------------


@pytest.fixture(scope="module")
def chain() -> GraphSnapshot:
    """D0 → D1 → D2 → D3 → I-end, with back edges D2 → D0 and D3 → D1 (loops never to close)."""
    nodes = [
        {"id": f"D{i}", "type": "Decision", "labels": ["L1"], "clusters": ["billing"], "vec": unit(1, i)}
        for i in range(4)
    ]
    nodes.append({"id": "I-end", "type": "Info", "labels": ["L1"], "clusters": ["billing"], "vec": unit(1)})
    edges = [
        ("D0", "D1", "LEADS_TO", 0.8),
        ("D1", "D2", "LEADS_TO", 0.8),
        ("D2", "D3", "LEADS_TO", 0.8),
        ("D3", "I-end", "LEADS_TO", 0.8),
        ("D2", "D0", "LEADS_TO", 0.9),
        ("D3", "D1", "LEADS_TO", 0.9),
    ]
    return tiny_snapshot(nodes, edges, labels=BILLING_LABELS, clusters=["billing"], typologies=[FAQ_FIRST])


@pytest.mark.parametrize(
    ("typology_hops", "policy_hops", "target"),
    [(6, None, "I-end"), (6, 4, "I-end"), (3, 6, None), (6, 3, None), (None, None, "I-end")],
)
def test_max_hops_is_the_smaller_of_typology_and_policy(chain, typology_hops, policy_hops, target) -> None:
    typology = {**FAQ_FIRST, "max_hops": typology_hops, "fast_path_eligible": False, "complexity_budget": 10}

    result = route_from(
        chain,
        "D0",
        l_final={"L1": 0.9},
        typology=typology,
        prompt_vec=PROMPT,
        decision=decision(max_hops=policy_hops),
        params=TraversalParams(semantic_jumps=False),
    )

    assert result.target == target
    if target is None:
        assert result.reason == "no_terminal"
        assert result.path_nodes == ("D0",)
    else:
        assert result.path_nodes == ("D0", "D1", "D2", "D3", "I-end")
    assert_well_formed(chain, result, min(h for h in (typology_hops, policy_hops, 6) if h is not None))


def test_inhibitory_edge_vetoes_the_move_and_the_vector_jump() -> None:
    nodes = [
        {"id": "D-start", "type": "Decision", "labels": ["L1"], "clusters": ["billing"], "vec": unit(0, 1)},
        {"id": "I-twin", "type": "Info", "labels": ["L1"], "clusters": ["billing"], "vec": unit(1)},
        {"id": "I-other", "type": "Info", "labels": ["L1"], "clusters": ["billing"], "vec": unit(0.5, 1)},
    ]
    base = [("D-start", "I-other", "LEADS_TO", 0.3)]
    open_graph = tiny_snapshot(
        nodes, [*base, ("D-start", "I-twin", "LEADS_TO", 0.9)], labels=BILLING_LABELS, clusters=["billing"]
    )
    vetoed = tiny_snapshot(
        nodes, [*base, ("D-start", "I-twin", "LEADS_TO", -0.2)], labels=BILLING_LABELS, clusters=["billing"]
    )
    related = tiny_snapshot(
        nodes, [*base, ("I-twin", "D-start", "RELATED_TO", -0.2)], labels=BILLING_LABELS, clusters=["billing"]
    )
    guided = {**FAQ_FIRST, "fast_path_eligible": False}

    results = {
        name: route_from(graph, "D-start", l_final={"L1": 0.9}, typology=guided, prompt_vec=PROMPT)
        for name, graph in [("open", open_graph), ("vetoed", vetoed), ("related", related)]
    }

    assert results["open"].target == "I-twin"
    assert results["vetoed"].target == "I-other"  # neither the edge nor a semantic jump reaches I-twin
    assert results["related"].target == "I-other"
    assert "I-twin" not in {s.node_id for s in results["vetoed"].scored}


def test_abstained_and_missing_landings(demo_snapshot, runtime) -> None:
    oos = Landing(node_start="N-global-oos-general", abstained=True, reason="ood")
    vec = demo_snapshot.embeddings[0]
    kwargs = {"weaver": WeaverResult(), "decision": ALLOW, "typology": "quick-answer", "prompt_vec": vec}

    assert route(demo_snapshot, runtime, landing=oos, **kwargs) == Route(
        target="N-global-oos-general", path_nodes=("N-global-oos-general",), reason="abstained"
    )
    assert route(demo_snapshot, runtime, landing=Landing(node_start=None, abstained=True), **kwargs) == Route(
        target=None, reason="no_start"
    )


def test_every_pass_through_start_gives_a_well_formed_bounded_route(
    demo_snapshot, runtime, typologies
) -> None:
    starts = [n for n in demo_snapshot.node_ids if demo_snapshot.node(n).type in PASS_THROUGH_TYPES]
    checked = 0
    for start in starts:
        node = demo_snapshot.node(start)
        vec = demo_snapshot.embeddings[node.position]
        for key, typology in typologies.items():
            for policy_hops in (1, 2, None):
                result = route_from(
                    demo_snapshot,
                    start,
                    l_final=dict.fromkeys(node.labels, 0.8),
                    typology=typology,
                    prompt_vec=vec,
                    decision=decision(max_hops=policy_hops),
                )
                caps = [h for h in (typology["max_hops"], policy_hops) if h is not None]
                assert_well_formed(demo_snapshot, result, min(caps))
                assert result.path_nodes[0] == start, (start, key)
                assert result.considered >= len(result.path_nodes) - 1
                checked += 1
    assert checked == len(starts) * len(typologies) * 3


def test_route_is_deterministic(demo_snapshot, runtime, examples, typologies) -> None:
    fresh = GraphRuntime.build(demo_snapshot)
    starts = [n for n in demo_snapshot.node_ids if demo_snapshot.node(n).type == "Decision"]
    for i, start in enumerate(starts):
        lid, _, vec = examples[i * 11 % len(examples)]
        node = demo_snapshot.node(start)
        landing = Landing(node_start=start, clusters=tuple(sorted(node.clusters)))
        weaver = WeaverResult(l_final={lid: 0.6, **dict.fromkeys(node.labels, 0.8)}, confidence=0.7)
        args = {
            "landing": landing,
            "weaver": weaver,
            "decision": ALLOW,
            "typology": typologies["operator-console"],
        }
        first = route(demo_snapshot, runtime, prompt_vec=vec, **args)
        assert route(demo_snapshot, runtime, prompt_vec=vec.copy(), **args) == first
        assert route(demo_snapshot, fresh, prompt_vec=vec.copy(), **args) == first


# --- policy is a hard gate everywhere ------------------------------------------------------------

NODE_TYPE_LIST = sorted(NODE_TYPES)


@pytest.fixture(scope="module")
def pass_through(demo_snapshot: GraphSnapshot) -> list[str]:
    return [n for n in demo_snapshot.node_ids if demo_snapshot.node(n).type in PASS_THROUGH_TYPES]


@settings(max_examples=1000, deadline=None)
@given(data=st.data())
def test_policy_forbidden_nodes_never_appear_in_candidates_or_routes(
    demo_snapshot, runtime, examples, typologies, pass_through, data
) -> None:
    label_ids = sorted({lid for lid, _, _ in examples})
    constraints = PolicyConstraints(
        forbidden_node_types=data.draw(st.frozensets(st.sampled_from(NODE_TYPE_LIST)), "forbidden types"),
        allowed_node_types=data.draw(
            st.none() | st.frozensets(st.sampled_from(NODE_TYPE_LIST), min_size=1), "allowed types"
        ),
        forbidden_labels=data.draw(
            st.frozensets(st.sampled_from(label_ids), max_size=30), "forbidden labels"
        ),
        allowed_labels=data.draw(
            st.none() | st.frozensets(st.sampled_from(label_ids), min_size=1, max_size=60), "allowed labels"
        ),
        max_hops=data.draw(st.none() | st.integers(0, 8), "max hops"),
    )
    policy = PolicyDecision(
        state=PolicyState.RESTRICT, constraints=constraints, response_mode=ResponseMode.CAUTIOUS
    )
    lid, _, vec = data.draw(st.sampled_from(examples), "example")
    weaver = WeaverResult(
        l_final={
            lid: 0.9,
            **data.draw(st.dictionaries(st.sampled_from(label_ids), st.floats(0.05, 1.0), max_size=2)),
        },
        top_k=((lid, 0.6),),
        confidence=data.draw(st.floats(0.0, 1.0), "confidence"),
        flags=data.draw(
            st.sampled_from([frozenset(), frozenset({Flag.NEW_INTENT_CANDIDATE}), frozenset({Flag.OOD})]),
            "flags",
        ),
    )
    typology = typologies[data.draw(st.sampled_from(sorted(typologies)), "typology")]
    backward = data.draw(
        st.sampled_from([frozenset(BACKWARD), frozenset({"ESCALATES_TO", *BACKWARD})]), "backward"
    )
    params = TraversalParams(scoring=ScoringParams(backward_edge_types=backward))

    landing = land(demo_snapshot, runtime, weaver=weaver, decision=policy, prompt_vec=vec)
    if data.draw(st.booleans(), "force a pass-through start"):  # exercise the search from routing nodes too
        start = data.draw(st.sampled_from(pass_through), "start")
        landing = Landing(node_start=start, clusters=tuple(sorted(demo_snapshot.node(start).clusters)))
    scored = expand_and_score(
        demo_snapshot,
        runtime,
        landing=landing,
        weaver=weaver,
        decision=policy,
        typology=typology,
        prompt_vec=vec,
        memory_signal=None,
        params=params.scoring,
    )
    result = route(
        demo_snapshot,
        runtime,
        landing=landing,
        weaver=weaver,
        decision=policy,
        typology=typology,
        prompt_vec=vec,
        params=params,
    )

    seen = [
        *(n for n, _ in landing.candidates),
        *(s.node_id for s in scored),
        *result.path_nodes,
        *(s.node_id for s in result.scored),
        *([result.target] if result.target else []),
    ]
    for node_id in seen:
        node = demo_snapshot.node(node_id)
        assert node.status == "ACTIVE"
        assert constraints.admits_node_type(node.type), (node_id, node.type)
        assert not node.labels or any(constraints.admits_label(label) for label in node.labels), node_id
    caps = [h for h in (typology["max_hops"], constraints.max_hops) if h is not None]
    assert len(result.path_edges) <= min(caps)
    assert len(set(result.path_nodes)) == len(result.path_nodes)
