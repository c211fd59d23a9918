"""Merge candidates (ARG §3.2.2): duplicate nodes that split one intent's traffic.

A pair (A, B) of ACTIVE nodes of the same type family is proposed when

* **content proximity** — the cosine of their node embeddings (title + chunk) ≥ ``min_content_cosine``;
* **usage similarity** — the requests landing on them look alike (prompt-centroid cosine ≥
  ``min_usage_cosine`` when both have traffic) or they compete for the same requests at least
  ``min_competitions`` times: both among a request's top landing candidates, or — when each copy has
  its own label, so the classifier divides the traffic between them and one copy rarely even becomes
  a candidate — a label only A carries and a label only B carries both among the request's top
  ``COMPETING_LABELS`` weaver labels;
* **taxonomy safety** — the survivor's merged attachments create no parent/child pair that neither
  node had and no explicitly incompatible pair of labels, and the two nodes share a cluster (the union
  of the attachments then keeps every label inside the survivor's clusters);
* **security** — the integrity test (``review.integrity``) finds no shortcut that would bypass a
  required check, no lowered risk, no Action fused with a non-Action, no policy exposure;
* **structure preservation** — the fused Gromov–Wasserstein distance between the merged
  pair's neighbourhood (A, B and their one-hop neighbours) and its fused version (B folded into A) is
  ≤ ``fgw_epsilon``. Node features are the node embeddings (content cost ``C_ij = ‖χ_i − χ_j‖²``),
  structure matrices the unit shortest-path distances inside the neighbourhood (unreachable pairs one
  past the farthest, then normalised by the largest), uniform node masses with the fused node carrying
  the mass of both (fusion conserves mass), trade-off ``fgw_alpha`` (POT ``fused_gromov_wasserstein2``).
  Structure weighs in only where there is structure: the trade-off applied is ``fgw_alpha`` times the
  neighbourhood's edge density relative to a tree (``min(1, edges / (nodes − 1))``). Two nodes without
  any edge have no structure to preserve — their "distance" would only be the convention for
  unreachable pairs, a floor of ``fgw_alpha / 2`` whatever their content — so their check is the
  content term alone (the Wasserstein cost of folding one embedding onto the other).

The *survivor* is the node with more landings (then more in-edges, then the smaller id); the other is
the *duplicate*. The survivor only orders the merged content: the changeset (§3.5.2 "A + B → AB")
creates a new node **AB** and retires both —

1. ``node_add`` AB (``merged_node``): id ``<survivor id>.m1`` (made as a split child's id; ``.m1a``,
   ``.m1b``… when taken); the survivor's type and title; chunk, description and staff notes each the
   survivor's text followed by the duplicate's sentences it does not already contain (case and
   spacing ignored; a sentence that no longer fits the field's limit is left out); the union of the
   labels, clusters and preconditions (survivor's first); the highest risk; an Action's parameters
   united by name and the survivor's handler (the duplicate's when the survivor has none);
2. ``edge_add`` for every edge of A or B re-pointed to AB (``merged_edges``): an edge between A and B
   becomes a self-loop and is dropped; edges that collapse onto the same (source, target, type) keep
   the highest weight — unless one of them is inhibitory, then the most inhibitory (a veto is never
   lost); the survivor's edge wins a tie;
3. ``node_status`` A and B → DEPRECATED (observation window; their own edges stay, unused);
4. ``alias_set`` A → (AB,) and B → (AB,): MemoryRead and old references follow them.

The proposal stores this changeset — AB's full content included — and approval applies exactly it;
nothing is recomputed at apply time. The FGW check compares the pair's neighbourhood with the
neighbourhood where A and B are one node whose feature is the unit centroid of their embeddings (AB
carries both contents).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from arg_platform.errors import Violation
from ontology.store.port import EdgeData, GraphData, NodeData
from review.changeset import RISK_ORDER, AliasSet, EdgeAdd, NodeAdd, NodeStatusSet, Op
from review.changeset_apply import ChangesetConflict, changeset_apply
from review.integrity import ACTION_TYPES, integrity_violations
from review.loop.generators.base import (
    Candidate,
    GeneratorContext,
    derived_node_id,
    sentence_key,
    sentences,
    unit,
)

NAME = "merge"
VERSION = "3"
COMPETING_LABELS = 3
MERGEABLE_EXCLUDED = frozenset({"OutOfScope"})


MERGED_SUFFIX = ".m1"
TEXT_LIMITS = {"chunk": 10_000, "description": 2_000, "staff_notes": 10_000}  # the ontology's field limits


def merged_node_id(survivor: str, taken: Collection[str]) -> str:
    """AB's node id: the survivor's id + ``.m1``, made as a split child's id (``derived_node_id``)."""
    return derived_node_id(survivor, MERGED_SUFFIX, set(taken))


def _taken(graph: GraphData) -> set[str]:
    return {n.node_id for n in graph.nodes} | {a.source for a in graph.aliases}


def merged_text(first: str, second: str, limit: int) -> str:
    """``first``, then each sentence of ``second`` that ``first`` does not contain (case and spacing
    ignored), in order, as long as the result stays within ``limit`` characters."""
    out = first.strip()
    seen = {sentence_key(x) for x in sentences(out)}
    for sentence in sentences(second):
        key = sentence_key(sentence)
        if not key or key in seen:
            continue
        joined = f"{out} {sentence}" if out else sentence
        if len(joined) > limit:
            continue
        out = joined
        seen.add(key)
    return out[:limit]


def merged_node(survivor: NodeData, duplicate: NodeData, node_id: str) -> NodeData:
    """AB: the content of ``survivor`` and ``duplicate`` merged (see the module doc, step 1)."""
    risk = max(survivor.risk, duplicate.risk, key=lambda r: RISK_ORDER.get(r, 0))
    parameters = {p.name: p for p in duplicate.parameters} | {p.name: p for p in survivor.parameters}
    names = list(
        dict.fromkeys([*(p.name for p in survivor.parameters), *(p.name for p in duplicate.parameters)])
    )
    return NodeData(
        node_id=node_id,
        type=survivor.type,
        title=survivor.title,
        chunk=merged_text(survivor.chunk, duplicate.chunk, TEXT_LIMITS["chunk"]),
        description=merged_text(survivor.description, duplicate.description, TEXT_LIMITS["description"]),
        staff_notes=merged_text(survivor.staff_notes, duplicate.staff_notes, TEXT_LIMITS["staff_notes"]),
        risk=risk,
        labels=tuple(dict.fromkeys([*survivor.labels, *duplicate.labels])),
        clusters=tuple(dict.fromkeys([*survivor.clusters, *duplicate.clusters])),
        preconditions=tuple(dict.fromkeys([*survivor.preconditions, *duplicate.preconditions])),
        parameters=tuple(parameters[name] for name in names),
        handler=survivor.handler or duplicate.handler,
    )


def _stronger(kept: EdgeData, other: EdgeData) -> EdgeData:
    """Of two edges collapsing onto one key: the most inhibitory when either is a veto, else the
    highest weight; ``kept`` on a tie."""
    if min(kept.weight, other.weight) <= -0.01:
        return other if other.weight < kept.weight else kept
    return other if other.weight > kept.weight else kept


def merged_edges(graph: GraphData, survivor: str, duplicate: str, node_id: str) -> list[EdgeData]:
    """Every edge of ``survivor`` or ``duplicate`` re-pointed to ``node_id`` (module doc, step 2)."""
    pair = (survivor, duplicate)
    out: dict[tuple[str, str, str], EdgeData] = {}
    for owner in pair:  # the survivor's edges first: they win ties
        for e in sorted(graph.edges, key=lambda e: e.key):
            if owner not in (e.source, e.target) or (owner == duplicate and survivor in (e.source, e.target)):
                continue
            source = node_id if e.source in pair else e.source
            target = node_id if e.target in pair else e.target
            if source == target:
                continue
            moved = EdgeData(source, target, e.type, e.weight, e.semantics)
            out[moved.key] = _stronger(out[moved.key], moved) if moved.key in out else moved
    return [out[key] for key in sorted(out)]


def merge_changeset(
    graph: GraphData, survivor: str, duplicate: str, *, reason: str, merged_id: str | None = None
) -> tuple[Op, ...]:
    """The lifecycle of a merge A + B → AB (§3.5.2; see the module doc): AB created with the merged
    content, A's and B's edges re-pointed to it, A and B DEPRECATED, aliases A → AB and B → AB.

    ``merged_id`` defaults to ``merged_node_id`` over the graph's node ids and alias sources."""
    nodes = {n.node_id: n for n in graph.nodes}
    if merged_id is None:
        merged_id = merged_node_id(survivor, _taken(graph))
    ab = merged_node(nodes[survivor], nodes[duplicate], merged_id)
    ops: list[Op] = [
        NodeAdd(
            node_id=ab.node_id,
            type=ab.type,
            title=ab.title,
            chunk=ab.chunk,
            risk=ab.risk,
            labels=ab.labels,
            clusters=ab.clusters,
            preconditions=ab.preconditions,
            parameters=ab.parameters,
            handler=ab.handler,
            description=ab.description,
            staff_notes=ab.staff_notes,
        )
    ]
    ops += [
        EdgeAdd(e.source, e.target, e.type, e.weight, e.semantics)
        for e in merged_edges(graph, survivor, duplicate, merged_id)
    ]
    ops += [NodeStatusSet(node, "DEPRECATED", reason) for node in (survivor, duplicate)]
    ops += [AliasSet(node, (merged_id,), reason) for node in (survivor, duplicate)]
    return tuple(ops)


def taxonomy_violations(a: NodeData, b: NodeData, documents: dict) -> list[Violation]:
    """§3.2.2 rule: the merged attachments must not create parent/child or cluster↔label incoherence."""
    labels = {label["id"]: label for label in documents.get("labels", [])}
    incompatible = {tuple(sorted(i["labels"])) for i in documents.get("incompatibilities", [])}

    def ancestors(label_id: str) -> set[str]:
        out, current = set(), labels.get(label_id)
        while current is not None and current.get("parent") and current["parent"] not in out:
            out.add(current["parent"])
            current = labels.get(current["parent"])
        return out

    def pairs(node: NodeData) -> set[tuple[str, str]]:
        return {(x, y) for x in node.labels for y in node.labels if y in ancestors(x)}

    merged = tuple(dict.fromkeys([*a.labels, *b.labels]))
    out: list[Violation] = []
    new_pairs = {(x, y) for x in merged for y in merged if y in ancestors(x)} - pairs(a) - pairs(b)
    for child, parent in sorted(new_pairs):
        out.append(
            Violation(
                "merge.parent_child", f"the merge would attach both {parent} and its descendant {child}"
            )
        )
    if a.clusters and b.clusters and not set(a.clusters) & set(b.clusters):
        out.append(
            Violation("merge.cluster_disjoint", f"{a.node_id} and {b.node_id} live in unrelated clusters")
        )
    for x in merged:
        for y in merged:
            if x < y and (x, y) in incompatible:
                out.append(Violation("merge.incompatible", f"{x} and {y} are incompatible labels"))
    return out


def fgw_distance(
    graph: GraphData,
    vectors: dict[str, np.ndarray],
    survivor: str,
    duplicate: str,
    *,
    alpha: float,
    merged_vector: np.ndarray | None = None,
) -> tuple[float, int, float]:
    """FGW distance between the pair's neighbourhood and its fused version, where the two are one node
    with the feature ``merged_vector`` (default: the survivor's embedding).

    Returns (distance, neighbourhood size, structure weight applied = ``alpha`` × edge density).
    """
    import networkx as nx
    import ot

    neighbourhood = {survivor, duplicate}
    for e in graph.edges:
        if e.source in (survivor, duplicate):
            neighbourhood.add(e.target)
        if e.target in (survivor, duplicate):
            neighbourhood.add(e.source)
    nodes = sorted(n for n in neighbourhood if n in vectors)
    g1 = nx.Graph()
    g1.add_nodes_from(nodes)
    g1.add_edges_from(
        (e.source, e.target)
        for e in graph.edges
        if e.source in g1 and e.target in g1 and e.source != e.target
    )
    g2 = nx.relabel_nodes(g1, {duplicate: survivor}, copy=True)
    g2.remove_edges_from(nx.selfloop_edges(g2))
    nodes2 = sorted(g2.nodes)

    def distances(g: nx.Graph, order: list[str]) -> np.ndarray:
        n = len(order)
        index = {v: i for i, v in enumerate(order)}
        d = np.full((n, n), np.nan)
        for source, lengths in nx.all_pairs_shortest_path_length(g):
            for target, length in lengths.items():
                d[index[source], index[target]] = length
        finite = d[np.isfinite(d)]
        d = np.where(
            np.isnan(d), (finite.max() if finite.size else 0.0) + 1.0, d
        )  # unreachable: one past the farthest
        return d / max(1.0, float(d.max()))

    c1, c2 = distances(g1, nodes), distances(g2, nodes2)
    x1 = np.array([vectors[n] for n in nodes], dtype=np.float64)
    fused = vectors[survivor] if merged_vector is None else merged_vector
    x2 = np.array([fused if n == survivor else vectors[n] for n in nodes2], dtype=np.float64)
    m = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1)
    p = ot.unif(len(nodes))
    q = np.array([2.0 if n == survivor else 1.0 for n in nodes2])  # the fused node carries both masses
    q /= q.sum()
    weight = alpha * min(1.0, g1.number_of_edges() / max(1, len(nodes) - 1))
    if weight == 0.0:  # no structure: the content term alone (FGW at alpha 0, without its 0/0)
        value = ot.emd2(p, q, m)
    else:
        value = ot.gromov.fused_gromov_wasserstein2(m, c1, c2, p, q, loss_fun="square_loss", alpha=weight)
    return float(value), len(nodes), weight


def generate(context: GeneratorContext) -> list[Candidate]:
    params = context.params.merge
    base, collection = context.base, context.collection
    snapshot = base.snapshot
    if snapshot.embeddings is None or snapshot.node_count < 2:
        return []
    nodes = base.nodes
    eligible = [
        i
        for i, node_id in enumerate(snapshot.node_ids)
        if nodes[node_id].status == "ACTIVE" and nodes[node_id].type not in MERGEABLE_EXCLUDED
    ]
    emb = snapshot.embeddings[eligible]
    pairs: list[tuple[float, str, str]] = []
    block = 2048
    for start in range(0, len(eligible), block):
        sims = emb[start : start + block] @ emb.T
        rows, cols = np.nonzero(sims >= params.min_content_cosine)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            i, j = eligible[start + r], eligible[c]
            if i < j:
                pairs.append((float(sims[r, c]), snapshot.node_ids[i], snapshot.node_ids[j]))
    pairs.sort(key=lambda t: (-t[0], t[1], t[2]))
    vectors = {snapshot.node_ids[i]: snapshot.embeddings[i] for i in range(snapshot.node_count)}
    competitions = _competitions(collection)
    in_degree: dict[str, int] = {}
    for e in base.graph.edges:
        in_degree[e.target] = in_degree.get(e.target, 0) + 1
    used: set[str] = set()
    out: list[Candidate] = []
    for content_cos, x, y in pairs[: params.max_pairs]:
        if x in used or y in used:
            continue
        a, b = nodes[x], nodes[y]
        if (a.type in ACTION_TYPES) != (b.type in ACTION_TYPES):
            continue
        candidate = _consider(context, a, b, content_cos, competitions, in_degree, vectors)
        if candidate is not None:
            out.append(candidate)
            used |= {x, y}
    return out


@dataclass(frozen=True)
class Competitions:
    """How often two nodes, or two labels, were among the top candidates of the same request."""

    nodes: dict[tuple[str, str], int]
    labels: dict[tuple[str, str], int]

    def between(self, a: NodeData, b: NodeData) -> tuple[int, int]:
        """(node competitions, label competitions) of ``a`` and ``b`` (labels only one of them carries)."""
        node_count = self.nodes.get((min(a.node_id, b.node_id), max(a.node_id, b.node_id)), 0)
        only_a = set(a.labels) - set(b.labels)
        only_b = set(b.labels) - set(a.labels)
        label_count = max(
            (self.labels.get((min(x, y), max(x, y)), 0) for x in only_a for y in only_b), default=0
        )
        return node_count, label_count


def _pairs(ids: list[str], counts: dict[tuple[str, str], int]) -> None:
    for i, x in enumerate(ids):
        for y in ids[i + 1 :]:
            counts[(x, y)] = counts.get((x, y), 0) + 1


def _competitions(collection) -> Competitions:  # type: ignore[no-untyped-def]
    nodes: dict[tuple[str, str], int] = {}
    labels: dict[tuple[str, str], int] = {}
    for candidates in collection.landing_candidates:
        _pairs(sorted({n for n, _ in candidates[:3]}), nodes)
    for top in collection.top_labels:
        _pairs(sorted({lid for lid, _ in top[:COMPETING_LABELS]}), labels)
    return Competitions(nodes=nodes, labels=labels)


def _usage(
    context: GeneratorContext, a: NodeData, b: NodeData, competitions: Competitions
) -> tuple[bool, dict]:
    params = context.params.merge
    collection = context.collection
    rows_a = context.sample(
        collection.rows_at(a.node_id, by="landing"), params.max_prompts, f"merge:{a.node_id}"
    )
    rows_b = context.sample(
        collection.rows_at(b.node_id, by="landing"), params.max_prompts, f"merge:{b.node_id}"
    )
    facts: dict = {"landings": [int(rows_a.shape[0]), int(rows_b.shape[0])]}
    node_count, label_count = competitions.between(a, b)
    facts["competitions"] = max(node_count, label_count)
    facts["label_competitions"] = label_count
    similar = facts["competitions"] >= params.min_competitions
    if rows_a.shape[0] >= params.min_landings and rows_b.shape[0] >= params.min_landings:
        ca = unit(context.prompt_vectors(rows_a.tolist()).mean(axis=0))
        cb = unit(context.prompt_vectors(rows_b.tolist()).mean(axis=0))
        facts["usage_cosine"] = round(float(ca @ cb), 4)
        similar = similar or facts["usage_cosine"] >= params.min_usage_cosine
    return similar, facts


def _consider(context, a, b, content_cos, competitions, in_degree, vectors) -> Candidate | None:  # type: ignore[no-untyped-def]
    params = context.params.merge
    base, collection = context.base, context.collection
    similar, usage = _usage(context, a, b, competitions)
    if not similar:
        return None
    if taxonomy_violations(a, b, base.documents):
        return None

    def rank(n: NodeData) -> tuple:
        metrics = collection.node_metrics.get(n.node_id)
        return (-(metrics.landings if metrics else 0), -in_degree.get(n.node_id, 0), n.node_id)

    survivor, duplicate = sorted([a, b], key=rank)
    merged_id = merged_node_id(survivor.node_id, _taken(base.graph))
    reason = (
        f"merged by the offline loop: {survivor.node_id} + {duplicate.node_id} → {merged_id} "
        "(duplicate content and usage)"
    )
    ops = merge_changeset(base.graph, survivor.node_id, duplicate.node_id, reason=reason, merged_id=merged_id)
    try:
        applied = changeset_apply(base.state, ops)
    except ChangesetConflict:
        return None
    violations = integrity_violations(base.graph, applied.graph, ops, documents=base.documents)
    if violations:
        return None
    fgw, size, weight = fgw_distance(
        base.graph,
        vectors,
        survivor.node_id,
        duplicate.node_id,
        alpha=params.fgw_alpha,
        merged_vector=unit(vectors[survivor.node_id] + vectors[duplicate.node_id]),
    )
    if fgw > params.fgw_epsilon:
        return None
    zone = np.concatenate(
        [
            collection.rows_at(survivor.node_id, by="landing"),
            collection.rows_at(duplicate.node_id, by="landing"),
        ]
    )
    return Candidate(
        kind="MERGE",
        title=f"Merge {survivor.node_id} and {duplicate.node_id} into {merged_id}",
        summary=(
            f"{duplicate.title!r} duplicates {survivor.title!r} (content cosine {content_cos:.2f}); "
            f"FGW structure distance {fgw:.4f} ≤ {params.fgw_epsilon}; both are replaced by {merged_id}"
        ),
        ops=ops,
        evidence={
            "survivor": survivor.node_id,
            "duplicate": duplicate.node_id,
            "merged_node": merged_id,
            "content_cosine": round(content_cos, 4),
            **usage,
            "fgw": {
                "distance": round(fgw, 6),
                "epsilon": params.fgw_epsilon,
                "alpha": params.fgw_alpha,
                "alpha_applied": round(weight, 4),
                "nodes": size,
            },
            "integrity": "passed",
            "log_ids": context.log_refs(zone),
        },
        generator={"name": NAME, "version": VERSION, "params": params.as_json()},
        zone_rows=tuple(int(r) for r in np.sort(zone)),
        lineage={merged_id: (survivor.node_id, duplicate.node_id)},
    )
