"""Evidence gathering for an Info answer: the *context* is the target node and its admitted one-hop
content neighbours (``neighbourhood``), and the *evidence* is the sentences of the context chosen by
cosine to the prompt (``retrieve``), never read outside the context.

A node is *admitted* when the request's policy lets it read the node (``node_admitted``): its type is
allowed, it carries no forbidden label, an allowed label if it carries any, and — when the request
names a declared product — no product tags, or that product among them (``inference.steps.products``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inference.contracts import PolicyDecision
from inference.steps.products import admits_node_product
from ontology.graph_snapshot import GraphSnapshot, NodeView

from .params import DEFAULT_PARAMS, InfoParams
from .sentence_index import InfoIndex


def node_admitted(node: NodeView, decision: PolicyDecision) -> bool:
    """May this request read ``node``: type admitted, no forbidden label, an admitted label if any,
    the request's product if the node names products."""
    constraints = decision.constraints
    if not constraints.admits_node_type(node.type):
        return False
    if not admits_node_product(constraints.product, node.extras):
        return False
    if not node.labels:
        return True
    if any(label in constraints.forbidden_labels for label in node.labels):
        return False
    return any(constraints.admits_label(label) for label in node.labels)


def neighbourhood(
    snapshot: GraphSnapshot,
    target: int,
    decision: PolicyDecision,
    prompt_vec: np.ndarray,
    *,
    budget: int,
    params: InfoParams = DEFAULT_PARAMS,
) -> list[int]:
    """The admitted one-hop content neighbours of ``target``, best cosine to the prompt first."""
    idx, _types, weights = snapshot.neighbours(target, direction="both", edge_types=params.context_edge_types)
    best_weight: dict[int, float] = {}
    for position, weight in zip(idx.tolist(), weights.tolist(), strict=True):
        if position != target:
            best_weight[position] = max(weight, best_weight.get(position, 0.0))
    allowed = [
        p
        for p in best_weight
        if (node := snapshot.node(p)).type in params.context_node_types
        and node.status == "ACTIVE"
        and node_admitted(node, decision)
    ]
    if snapshot.embeddings is not None and allowed:
        cosines = snapshot.embeddings[allowed] @ prompt_vec
        rank = {p: float(c) for p, c in zip(allowed, cosines, strict=True)}
    else:
        rank = best_weight
    allowed.sort(key=lambda p: (-rank[p], -best_weight[p], snapshot.node_ids[p]))
    return allowed[: max(0, budget)]


@dataclass(frozen=True)
class Retrieved:
    """The sentences chosen for the answer, grouped by node (target first)."""

    by_node: tuple[tuple[int, tuple[str, ...]], ...]
    best_cosine: float  # the best cosine of a used sentence
    context: tuple[int, ...]  # every node that was searched (target first)


def retrieve(
    snapshot: GraphSnapshot,
    index: InfoIndex,
    target: int,
    context: Sequence[int],
    prompt_vec: np.ndarray,
    *,
    params: InfoParams = DEFAULT_PARAMS,
) -> Retrieved:
    """Local vector retrieval over the neighbourhood's sentences (never outside it).

    The target chunk is the routed answer: its best ``max_target_sentences`` sentences are kept, in
    their order. A neighbour sentence joins only if it is about as close to the prompt as the target's
    best one (``neighbour_margin``) and above ``min_neighbour_cosine``; at most
    ``max_neighbour_sentences`` of them, best first.
    """
    nodes = [target, *context]
    cosines = [block @ prompt_vec for block in index.vectors_of(snapshot, nodes)]
    target_cos = cosines[0]
    keep = sorted(np.argsort(-target_cos, kind="stable")[: params.max_target_sentences].tolist())
    best_target = float(target_cos.max()) if target_cos.size else 0.0
    floor = max(params.min_neighbour_cosine, best_target - params.neighbour_margin)
    extra = sorted(
        (
            (-float(c), n, i)
            for n in range(1, len(nodes))
            for i, c in enumerate(cosines[n].tolist())
            if c >= floor
        )
    )[: params.max_neighbour_sentences]
    chosen: dict[int, list[int]] = {0: keep} if keep else {}
    for _, n, i in extra:
        chosen.setdefault(n, []).append(i)
    by_node = tuple(
        (nodes[n], tuple(index.sentences_of(snapshot, nodes[n])[i] for i in sorted(chosen[n])))
        for n in sorted(chosen)
    )
    used = [float(cosines[n][i]) for n, picked in chosen.items() for i in picked]
    return Retrieved(by_node, max(used, default=0.0), tuple(nodes))
