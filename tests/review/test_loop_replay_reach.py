"""Where a replayed request may land (``landing_reach``), the distribution the geDIG gauge's ΔH reads:
the landing candidates, plus the nodes of labels the weaver was unsure against its top label. Duplicate
nodes behind two near-tied labels then compete for the request as duplicates behind one label do, and
a merge that puts both labels on one node shows as the entropy it removes."""

from __future__ import annotations

import numpy as np
import pytest

from ontology.graph_arrays import graph_to_arrays
from ontology.graph_snapshot import snapshot_build
from ontology.store.port import GraphData, NodeData
from review.loop.gauge import delta_h_norm
from review.loop.replay import landing_reach

LOW_MARGIN = 0.15


def _snapshot(nodes: list[NodeData], vectors: dict[str, np.ndarray]):  # type: ignore[no-untyped-def]
    arrays = graph_to_arrays(GraphData(nodes=tuple(nodes), edges=()))
    embeddings = np.stack([vectors[n.node_id] for n in nodes]).astype(np.float32)
    return snapshot_build(
        arrays, project_id=1, release_id=None, version=1, checksum="x", embeddings=embeddings
    )


def _node(node_id: str, labels: tuple[str, ...], status: str = "ACTIVE") -> NodeData:
    return NodeData(node_id, "Info", node_id, f"{node_id}.", labels=labels, clusters=("c",), status=status)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


PROMPT = _unit(np.array([1.0, 0.2, 0.0, 0.0]))
VECTORS = {
    "A": _unit(np.array([1.0, 0.25, 0.0, 0.0])),  # A and its copy B say the same thing
    "B": _unit(np.array([1.0, 0.15, 0.0, 0.0])),
    "C": _unit(np.array([0.0, 0.0, 1.0, 0.0])),
    "OLD": _unit(np.array([1.0, 0.2, 0.0, 0.0])),
}


def test_a_label_within_the_weavers_margin_adds_its_active_nodes_scored_as_landing_candidates():
    before = _snapshot(
        [_node("A", ("L1",)), _node("B", ("L2",)), _node("C", ("L3",)), _node("OLD", ("L2",), "DEPRECATED")],
        VECTORS,
    )
    classifier = (("L1", 0.5), ("L2", 0.4), ("oos", 0.05), ("L3", 0.05))
    reach = landing_reach(before, (("A", 0.49),), classifier, PROMPT, LOW_MARGIN)

    # A keeps its landing score; B comes in through L2 (0.4 × cos); L3 is far behind; OLD is not ACTIVE
    assert reach == pytest.approx((0.49, 0.4 * float(VECTORS["B"] @ PROMPT)))
    # a runner-up the weaver was sure against adds nothing
    assert landing_reach(before, (("A", 0.8),), (("L1", 0.8), ("L2", 0.1)), PROMPT, LOW_MARGIN) == (0.8,)
    # the landing abstained: no reach
    assert landing_reach(before, (), classifier, PROMPT, LOW_MARGIN) == ()


def test_merging_duplicates_behind_two_near_tied_labels_lowers_the_entropy_the_gauge_sees():
    before = _snapshot([_node("A", ("L1",)), _node("B", ("L2",)), _node("C", ("L3",))], VECTORS)
    after = _snapshot(
        [_node("A", ("L1", "L2")), _node("B", ("L2",), "DEPRECATED"), _node("C", ("L3",))], VECTORS
    )
    classifier = (("L1", 0.45), ("L2", 0.42), ("L3", 0.05))
    landing = (("A", 0.45 * float(VECTORS["A"] @ PROMPT)),)

    reach_before = landing_reach(before, landing, classifier, PROMPT, LOW_MARGIN)
    reach_after = landing_reach(after, landing, classifier, PROMPT, LOW_MARGIN)

    assert len(reach_before) == 2 and len(reach_after) == 1
    # the two candidates nearly tie at the gauge's temperature: most of one bit of entropy is removed
    assert delta_h_norm([reach_before], [reach_after], 0.1) > 0.9
    # the landing candidates alone (one node either way) would see no change at all
    assert delta_h_norm([[landing[0][1]]], [[landing[0][1]]], 0.1) == 0.0
