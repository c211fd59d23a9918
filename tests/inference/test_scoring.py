"""Step 5: local expansion, hard gates, anti-hub pruning and the composite score (ARG §2.5).

Hand-built graphs pin exact behaviour (``tiny_snapshot``); the demo pack's release checks the same rules
on a real graph with real embeddings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pytest

from arg_platform.vocabulary import EDGE_TYPES
from inference.contracts import (
    Flag,
    Landing,
    PolicyConstraints,
    PolicyDecision,
    PolicyState,
    ResponseMode,
    WeaverResult,
)
from inference.steps.graph_index import GraphRuntime, NodeGate, graph_runtime_for
from inference.steps.scoring import (
    SEMANTIC_EDGE,
    ScoringContext,
    ScoringParams,
    edge_type_name,
    expand_and_score,
    memory_signal_decay,
)
from ontology.graph_arrays import EDGE_TYPE_CODE, NODE_TYPE_CODE, RISK_CODE, STATUS_CODE, GraphArrays
from ontology.graph_snapshot import GraphSnapshot, snapshot_build

pytestmark = pytest.mark.django_db  # the demo tests read the session's published demo release

DIM = 8


def unit(*weights: float) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[: len(weights)] = weights
    return vector / np.linalg.norm(vector)


def tiny_snapshot(
    nodes: Sequence[dict[str, Any]],
    edges: Iterable[tuple[str, str, str, float]],
    *,
    labels: Sequence[dict[str, Any]] = (),
    clusters: Sequence[str] = (),
    incompatibilities: Sequence[tuple[str, str]] = (),
    typologies: Sequence[dict[str, Any]] = (),
) -> GraphSnapshot:
    """A frozen snapshot of a hand-written graph. A node: ``{"id", "type", "labels", "clusters", "risk",
    "status", "vec"}`` (all but id and type optional); an edge: (source, target, type, weight)."""
    nodes = sorted(nodes, key=lambda n: n["id"])
    index = {n["id"]: i for i, n in enumerate(nodes)}
    edges = sorted(edges, key=lambda e: (e[0], e[1], e[2]))
    arrays = GraphArrays(
        node_ids=tuple(n["id"] for n in nodes),
        node_type=np.array([NODE_TYPE_CODE[n["type"]] for n in nodes], dtype=np.int8),
        risk=np.array([RISK_CODE[n.get("risk", "low")] for n in nodes], dtype=np.int8),
        status=np.array([STATUS_CODE[n.get("status", "ACTIVE")] for n in nodes], dtype=np.int8),
        titles=tuple(n["id"] for n in nodes),
        chunks=tuple(n["id"] for n in nodes),
        labels=tuple(tuple(n.get("labels", ())) for n in nodes),
        clusters=tuple(tuple(n.get("clusters", ())) for n in nodes),
        extras=tuple({} for _ in nodes),
        edge_src=np.array([index[e[0]] for e in edges], dtype=np.int32),
        edge_dst=np.array([index[e[1]] for e in edges], dtype=np.int32),
        edge_type=np.array([EDGE_TYPE_CODE[e[2]] for e in edges], dtype=np.int8),
        edge_weight=np.array([e[3] for e in edges], dtype=np.float32),
        edge_semantics=tuple("" for _ in edges),
        aliases=(),
    )
    embeddings = np.stack([n.get("vec", unit(0, 0, 0, 0, 0, 0, 0, 1)) for n in nodes]).astype(np.float32)
    documents = {
        "labels": [
            {
                "id": lab["id"],
                "name": lab["id"],
                "cluster": lab["cluster"],
                "parent": lab.get("parent"),
                "status": "ACTIVE",
            }
            for lab in labels
        ],
        "clusters": [{"key": key, "name": key} for key in clusters],
        "incompatibilities": [{"labels": list(pair)} for pair in incompatibilities],
        "typologies": list(typologies),
    }
    return snapshot_build(
        arrays,
        project_id=1,
        release_id=None,
        version=1,
        checksum="tiny",
        embeddings=embeddings,
        documents=documents,
    )


def decision(**constraints: Any) -> PolicyDecision:
    return PolicyDecision(
        state=PolicyState.ALLOW,
        constraints=PolicyConstraints(**constraints),
        response_mode=ResponseMode.NORMAL,
    )


ALLOW = decision()
PROMPT = unit(1)  # "download an invoice"
FAQ_FIRST = {
    "key": "faq-first",
    "preferred_node_types": ["FAQ", "Info"],
    "max_hops": 3,
    "max_depth": 2,
    "beam_width": 3,
    "complexity_budget": 3,
    "fast_path_eligible": True,
    "weights": {"alpha": 0.2, "beta": 0.4, "gamma": 0.2, "delta": 0.1, "epsilon": 0.1},
}
BILLING_LABELS = [
    {"id": "L1", "cluster": "billing"},  # Invoices
    {"id": "L2", "cluster": "billing", "parent": "L1"},  # Invoice download
    {"id": "L3", "cluster": "billing"},  # Refunds
    {"id": "L4", "cluster": "billing"},  # Upgrade plan
    {"id": "L5", "cluster": "billing"},  # Cancel plan (incompatible with L4)
    {"id": "L6", "cluster": "access"},  # Login
]


@pytest.fixture(scope="module")
def billing() -> GraphSnapshot:
    """A Decision node with one neighbour per gate: coherent, incoherent, deprecated, vetoed, …"""
    nodes = [
        {"id": "D-start", "type": "Decision", "labels": ["L1"], "clusters": ["billing"], "vec": unit(1, 1)},
        {"id": "I-download", "type": "Info", "labels": ["L2"], "clusters": ["billing"], "vec": unit(1, 0.3)},
        {"id": "I-refund", "type": "Info", "labels": ["L3"], "clusters": ["billing"], "vec": unit(0, 1)},
        {"id": "F-invoices", "type": "FAQ", "labels": ["L1"], "clusters": ["billing"], "vec": unit(1, 0, 1)},
        {
            "id": "A-cancel",
            "type": "Action",
            "risk": "high",
            "labels": ["L5"],
            "clusters": ["billing"],
            "vec": unit(0, 0, 0, 1),
        },
        {
            "id": "I-login",
            "type": "Info",
            "labels": ["L6"],
            "clusters": ["access"],
            "vec": unit(1, 0, 0, 0, 1),
        },
        {
            "id": "I-old",
            "type": "Info",
            "labels": ["L1"],
            "clusters": ["billing"],
            "status": "DEPRECATED",
            "vec": unit(1),
        },
        {"id": "I-vetoed", "type": "Info", "labels": ["L2"], "clusters": ["billing"], "vec": unit(1)},
        {"id": "O-out", "type": "OutOfScope", "vec": unit(0, 0, 0, 0, 0, 1)},
    ]
    edges = [
        ("D-start", "I-download", "LEADS_TO", 0.5),
        ("D-start", "I-refund", "LEADS_TO", 0.5),
        ("D-start", "F-invoices", "ELABORATES", 0.5),
        ("D-start", "A-cancel", "LEADS_TO", 0.9),
        ("D-start", "I-login", "LEADS_TO", 0.5),
        ("D-start", "I-old", "LEADS_TO", 0.5),
        ("D-start", "I-vetoed", "LEADS_TO", -0.5),  # inhibitory
        ("I-refund", "D-start", "ESCALATES_TO", 0.5),  # an in-edge not walked backwards
    ]
    return tiny_snapshot(
        nodes,
        edges,
        labels=BILLING_LABELS,
        clusters=["billing", "access"],
        incompatibilities=[("L4", "L5")],
        typologies=[FAQ_FIRST],
    )


def scored_ids(snapshot: GraphSnapshot, l_final: dict[str, float], **kwargs: Any) -> dict[str, Any]:
    runtime = graph_runtime_for(snapshot)
    landing = Landing(node_start="D-start", reason="label_match", clusters=("billing",))
    scored = expand_and_score(
        snapshot,
        runtime,
        landing=kwargs.pop("landing", landing),
        weaver=WeaverResult(l_final=l_final, confidence=0.9),
        decision=kwargs.pop("decision", ALLOW),
        typology=kwargs.pop("typology", FAQ_FIRST),
        prompt_vec=kwargs.pop("prompt_vec", PROMPT),
        **kwargs,
    )
    return {s.node_id: s for s in scored}


def test_hard_gates_exclude_incoherent_deprecated_and_vetoed_neighbours(billing: GraphSnapshot) -> None:
    scored = scored_ids(billing, {"L1": 0.9})

    # I-login: only an access label; I-old: DEPRECATED; I-vetoed: inhibitory edge (and semantic twin of
    # the prompt, so the veto also blocks the vector jump); I-refund's ESCALATES_TO in-edge is not walked.
    assert sorted(scored) == ["A-cancel", "F-invoices", "I-download", "I-refund"]


def test_incompatible_labels_are_a_hard_gate(billing: GraphSnapshot) -> None:
    # L5 (the only label of A-cancel) is incompatible with L4
    assert "A-cancel" not in scored_ids(billing, {"L4": 0.9})
    assert "A-cancel" in scored_ids(billing, {"L3": 0.9})


def test_policy_forbidden_node_types_and_labels_are_excluded_before_scoring(billing: GraphSnapshot) -> None:
    by_type = scored_ids(billing, {"L1": 0.9}, decision=decision(forbidden_node_types=frozenset({"Action"})))
    by_allowed_type = scored_ids(
        billing, {"L1": 0.9}, decision=decision(allowed_node_types=frozenset({"FAQ"}))
    )
    by_label = scored_ids(billing, {"L1": 0.9}, decision=decision(forbidden_labels=frozenset({"L2", "L3"})))
    by_allowed_label = scored_ids(
        billing, {"L1": 0.9}, decision=decision(allowed_labels=frozenset({"L1", "L5"}))
    )

    assert sorted(by_type) == ["F-invoices", "I-download", "I-refund"]
    assert sorted(by_allowed_type) == ["F-invoices"]
    assert sorted(by_label) == ["A-cancel", "F-invoices"]
    assert sorted(by_allowed_label) == ["A-cancel", "F-invoices"]


def test_cold_start_routes_exclude_high_risk_actions(billing: GraphSnapshot) -> None:
    landing = Landing(
        node_start="D-start",
        reason="cold_start",
        flags=frozenset({Flag.NEW_INTENT_CANDIDATE}),
        clusters=("billing",),
    )

    assert "A-cancel" not in scored_ids(billing, {"L1": 0.9}, landing=landing)


def test_s_taxo_exact_lineage_and_same_cluster(billing: GraphSnapshot) -> None:
    scored = scored_ids(billing, {"L1": 0.9})

    assert scored["F-invoices"].s_taxo == 1.0  # the label of L_final itself
    assert scored["I-download"].s_taxo == 0.6  # a child of an L_final label
    assert scored["I-refund"].s_taxo == 0.2  # same cluster only


def test_s_typology_follows_preferred_types_and_the_depth_budget(billing: GraphSnapshot) -> None:
    scored = scored_ids(billing, {"L1": 0.9})
    runtime = graph_runtime_for(billing)
    context = ScoringContext.build(
        billing,
        runtime,
        landing=Landing(node_start="D-start", clusters=("billing",)),
        weaver=WeaverResult(l_final={"L1": 0.9}, confidence=0.9),
        decision=ALLOW,
        typology=FAQ_FIRST,
        prompt_vec=PROMPT,
    )
    faq = np.array([billing.position["F-invoices"]])

    assert scored["F-invoices"].s_typology == 1.0  # first preferred type
    assert scored["I-download"].s_typology == 0.5  # last preferred type
    assert scored["A-cancel"].s_typology == 0.0  # not preferred
    assert context.components(faq, 3)[0, 3] == 0.5  # one hop beyond max_depth 2: halved
    assert context.components(faq, 4)[0, 3] == 0.25


def test_composite_is_the_typology_weighted_sum_and_s_sem_the_cosine(billing: GraphSnapshot) -> None:
    scored = scored_ids(billing, {"L1": 0.9})
    alpha, beta, gamma, delta, epsilon = 0.2, 0.4, 0.2, 0.1, 0.1

    for node in scored.values():
        expected = (
            alpha * node.s_struct
            + beta * node.s_sem
            + gamma * node.s_taxo
            + delta * node.s_typology
            + epsilon * node.s_memory
        )
        assert node.score == pytest.approx(expected, abs=1e-5)
    cosine = float(billing.embeddings[billing.position["I-download"]] @ PROMPT)
    assert scored["I-download"].s_sem == pytest.approx(cosine, abs=1e-6)
    assert scored["A-cancel"].s_sem == 0.0  # orthogonal
    assert list(scored) == sorted(scored, key=lambda n: (-scored[n].score, n))


def test_s_memory_is_capped_and_zero_without_a_signal(billing: GraphSnapshot) -> None:
    without = scored_ids(billing, {"L1": 0.9})
    capped = scored_ids(
        billing, {"L1": 0.9}, memory_signal={"I-refund": 40.0, "F-invoices": 0.1, "I-login": 9.0}
    )

    assert {n.s_memory for n in without.values()} == {0.0}
    assert capped["I-refund"].s_memory == 0.5  # capped
    assert capped["F-invoices"].s_memory == 0.1
    assert capped["I-refund"].score - without["I-refund"].score == pytest.approx(0.1 * 0.5, abs=1e-6)


def test_memory_signal_decay_halves_at_the_half_life() -> None:
    signal = memory_signal_decay(
        [("N1", 1.0, 0.0), ("N1", 1.0, 3600.0), ("N2", 2.0, 7200.0)], half_life_s=3600.0
    )

    assert signal == {"N1": pytest.approx(1.5), "N2": pytest.approx(0.5)}


def test_semantic_candidates_come_from_the_landing_clusters_only() -> None:
    nodes = [
        {"id": "D-start", "type": "Decision", "labels": ["L1"], "clusters": ["billing"], "vec": unit(0, 1)},
        {"id": "I-near", "type": "Info", "labels": ["L3"], "clusters": ["billing"], "vec": unit(1, 0.2)},
        {"id": "I-far-cluster", "type": "Info", "labels": ["L6"], "clusters": ["access"], "vec": unit(1)},
        {"id": "A-near", "type": "Action", "labels": ["L3"], "clusters": ["billing"], "vec": unit(1)},
        {"id": "I-weak", "type": "Info", "labels": ["L3"], "clusters": ["billing"], "vec": unit(0.1, 1)},
    ]
    snapshot = tiny_snapshot(nodes, [], labels=BILLING_LABELS, clusters=["billing", "access"])
    runtime = graph_runtime_for(snapshot)
    context = ScoringContext.build(
        snapshot,
        runtime,
        landing=Landing(node_start="D-start", clusters=("billing",)),
        weaver=WeaverResult(l_final={"L1": 0.9}, confidence=0.9),
        decision=ALLOW,
        typology=FAQ_FIRST,
        prompt_vec=PROMPT,
    )

    expansion = context.expand(context.start, exclude=(), semantic=True)

    # only informational types, in the scope cluster, above the similarity floor
    assert [snapshot.node_ids[p] for p in expansion.positions] == ["I-near"]
    assert [edge_type_name(c) for c in expansion.edge_codes] == [SEMANTIC_EDGE]


@pytest.fixture(scope="module")
def hub() -> GraphSnapshot:
    """A Decision hub with 120 out-neighbours of two types and many weights."""
    nodes = [{"id": "H-hub", "type": "Decision", "labels": ["L1"], "clusters": ["billing"]}]
    edges = []
    for i in range(120):
        node_id = f"N-{i:03d}"
        nodes.append(
            {
                "id": node_id,
                "type": "FAQ" if i % 3 == 0 else "Info",
                "labels": ["L1"],
                "clusters": ["billing"],
            }
        )
        edges.append(("H-hub", node_id, "LEADS_TO", round(0.05 + (i * 7 % 10) / 10, 2)))
    return tiny_snapshot(nodes, edges, labels=BILLING_LABELS, clusters=["billing"], typologies=[FAQ_FIRST])


def hub_expansion(snapshot: GraphSnapshot, params: ScoringParams) -> Any:
    context = ScoringContext.build(
        snapshot,
        graph_runtime_for(snapshot),
        landing=Landing(node_start="H-hub", clusters=("billing",)),
        weaver=WeaverResult(l_final={"L1": 0.9}, confidence=0.9),
        decision=ALLOW,
        typology=FAQ_FIRST,
        prompt_vec=PROMPT,
        params=params,
    )
    return context.expand(context.start, exclude=(), semantic=False)


def test_anti_hub_pruning_keeps_the_k_best_by_type_preference_weight_and_id(hub: GraphSnapshot) -> None:
    expansion = hub_expansion(hub, ScoringParams())
    weights = {f"N-{i:03d}": round(0.05 + (i * 7 % 10) / 10, 2) for i in range(120)}
    preference = {node_id: 1.0 if int(node_id[2:]) % 3 == 0 else 0.5 for node_id in weights}
    expected = sorted(weights, key=lambda n: (-preference[n], -weights[n], n))[:50]

    assert sorted(hub.node_ids[p] for p in expansion.positions) == sorted(expected)
    assert expansion.pruned == 70
    assert expansion.gated == 0


def test_anti_hub_k_is_bounded_between_30_and_80(hub: GraphSnapshot) -> None:
    assert hub_expansion(hub, ScoringParams(k=5)).positions.size == 30
    assert hub_expansion(hub, ScoringParams(k=64)).positions.size == 64
    assert hub_expansion(hub, ScoringParams(k=500)).positions.size == 80


def test_anti_hub_pruning_on_the_demo_support_hub_is_bounded_and_deterministic(
    demo_snapshot: GraphSnapshot,
) -> None:
    runtime = graph_runtime_for(demo_snapshot)
    hub_position = demo_snapshot.position["N-global-contact-support"]
    # walk every in-edge backwards too, so the hub's whole neighbourhood (60+ nodes) is collected
    params = ScoringParams(k=30, backward_edge_types=EDGE_TYPES)
    clusters = tuple(demo_snapshot.node_clusters[hub_position])
    l_final = dict.fromkeys(demo_snapshot.node_labels[hub_position], 0.5)

    def expand() -> Any:
        context = ScoringContext.build(
            demo_snapshot,
            runtime,
            landing=Landing(node_start="N-global-contact-support", clusters=clusters),
            weaver=WeaverResult(l_final=l_final, confidence=0.9),
            decision=ALLOW,
            typology="quick-answer",
            prompt_vec=demo_snapshot.embeddings[hub_position],
            params=params,
        )
        return context.expand(context.start, exclude=(), semantic=True)

    first, second = expand(), expand()
    raw = {int(p) for p in demo_snapshot.neighbours(hub_position, direction="both")[0]}

    assert runtime.is_hub(np.array([hub_position]))[0]
    assert len(raw) >= 60
    assert first.positions.size == 30
    assert first.pruned > 0
    assert first.positions.tolist() == second.positions.tolist()
    assert first.edge_codes.tolist() == second.edge_codes.tolist()


def test_node_gate_on_the_demo_release_matches_a_per_node_reading(demo_snapshot: GraphSnapshot) -> None:
    runtime = GraphRuntime.build(demo_snapshot)
    constraints = PolicyConstraints(
        forbidden_node_types=frozenset({"Action", "MemoryWrite"}),
        forbidden_labels=frozenset({"L00066", "L00002"}),
    )
    gate = NodeGate.build(runtime, constraints, scope_labels=["L00001"], scope_clusters=["billing"])
    positions = np.arange(demo_snapshot.node_count)
    labels = {label["id"]: label for label in demo_snapshot.documents["labels"]}

    def expected(i: int) -> bool:
        node = demo_snapshot.node(i)
        if node.status != "ACTIVE" or not constraints.admits_node_type(node.type):
            return False
        if not node.labels:
            return not node.clusters or "billing" in node.clusters
        return any(
            constraints.admits_label(lid) and labels[lid]["cluster"] == "billing" for lid in node.labels
        )

    assert gate.admit(runtime, positions).tolist() == [expected(i) for i in range(demo_snapshot.node_count)]
