"""Step 5 — local expansion, anti-hub pruning, hard gates and the composite score (ARG v1 §2.5).

``expand_and_score`` returns the scored first-hop neighbourhood of the landing point;
``ScoringContext`` is the per-request machinery it shares with the traversal (step 7), which expands
node after node with the same rules.

**Candidate collection** from a node (``ScoringContext.expand``):

* its *out-edges* of the forward edge types (all ten by default: every edge is a directed move);
* its *in-edges* used backwards only for the symmetric relations ``RELATED_TO`` and
  ``ALTERNATIVE_TO`` (``ScoringParams.backward_edge_types``): "A related to B" also relates B to A,
  whereas walking ``LEADS_TO`` / ``REQUIRES`` / ``ESCALATES_TO`` / ``CLARIFIES`` / ``ELABORATES`` /
  ``SHORTCUT_TO`` / memory edges against their direction would invert the movement grammar (and turn
  an escalation hub into everybody's neighbour);
* from the landing point only, **semantic candidates**: the best embedding matches to the prompt among
  the nodes of the landing's clusters, of informational types only (Info, InfoStable, FAQ, Clarify),
  above a similarity floor. They are recorded with the pseudo edge type ``SEMANTIC``.

**Inhibitory edges** (weight below ``inhibitory_below``, i.e. negative) are a hard veto: the move
source → target they would license — directly, backwards, or as a semantic jump — is removed.

**Hard gates before scoring** (``NodeGate``): ACTIVE status, policy node types and labels, taxonomy
coherence with ``L_final``'s clusters and incompatibilities, and on a cold-start route no high-risk
Action / DirectAction.

**Anti-hub pruning**: when more than K admissible candidates remain (K = ``ScoringParams.k``, default
50, clamped to 30–80), the cheap pre-filter keeps the K best by (typology-preferred type rank, edge
weight, node_id) — deterministic, before any scoring.

**Composite score** ``α S_struct + β S_sem + γ S_taxo + δ S_typology + ε S_memory`` with the
typology's weights (alpha … epsilon), each component in [0, 1]:

* ``S_struct`` — SimRank and Jaccard to the landing point (the release's top-k lists; 0 outside them)
  and a same-Louvain-community bonus: ``0.5 SR + 0.3 J + 0.2 [same community]``, halved for hubs;
* ``S_sem`` — ``max(0, cos(prompt, node))``;
* ``S_taxo`` — the best match of the node's labels with ``L_final``: the same label 1, an ancestor or
  descendant 0.6, the same cluster 0.2 (each scaled by the ``L_final`` label's score relative to the
  best); an unlabelled node in a scope cluster 0.2;
* ``S_typology`` — the node type's rank in the typology's preferred types (first 1.0 … last 0.5,
  others 0), times ``0.5 ** (depth − max_depth)`` beyond the typology's depth budget;
* ``S_memory`` — the caller's usage signal for the node (time-decay it with
  ``memory_signal_decay``), clipped to ``[0, memory_cap]`` (cap 0.5) so history never dominates; 0 when
  no signal is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arg_platform.vocabulary import EDGE_TYPES, EdgeType, NodeType
from inference.contracts import Flag, Landing, PolicyDecision, ScoredNode, WeaverResult
from inference.steps.graph_index import (
    GraphRuntime,
    NodeGate,
    TypologyProfile,
    cosines,
    segment_reduce,
    type_mask,
)
from ontology.graph_arrays import EDGE_TYPE_CODE, EDGE_TYPE_NAMES, NODE_TYPE_CODE, NODE_TYPE_NAMES
from ontology.graph_snapshot import GraphSnapshot

SEMANTIC_EDGE = "SEMANTIC"  # the pseudo edge type of a semantic ("vector jump") candidate
SEMANTIC_CODE = -1

SEMANTIC_NODE_TYPES: frozenset[str] = frozenset(
    {NodeType.INFO, NodeType.INFO_STABLE, NodeType.FAQ, NodeType.CLARIFY}
)


@dataclass(frozen=True)
class ScoringParams:
    """Knobs of expansion and scoring; see the module docstring for what each one does."""

    k: int = 50
    k_min: int = 30
    k_max: int = 80
    forward_edge_types: frozenset[str] = EDGE_TYPES
    backward_edge_types: frozenset[str] = frozenset({EdgeType.RELATED_TO, EdgeType.ALTERNATIVE_TO})
    inhibitory_below: float = 0.0
    semantic_candidates: int = 20
    semantic_min_similarity: float = 0.3
    semantic_node_types: frozenset[str] = SEMANTIC_NODE_TYPES
    semantic_weight: float = 0.8  # pre-filter weight of a semantic candidate: cosine × this
    semantic_pool_max: int = 20_000  # most rows scored for semantic recall (else the labels' nodes)
    struct_simrank: float = 0.5
    struct_jaccard: float = 0.3
    struct_community: float = 0.2
    hub_struct_factor: float = 0.5
    taxo_exact: float = 1.0
    taxo_lineage: float = 0.6
    taxo_same_cluster: float = 0.2
    typology_rank_decay: float = 0.5
    typology_depth_decay: float = 0.5
    memory_cap: float = 0.5

    @property
    def effective_k(self) -> int:
        return max(self.k_min, min(self.k_max, self.k))


DEFAULT_SCORING_PARAMS = ScoringParams()


def memory_signal_decay(
    events: Iterable[tuple[str, float, float]], *, half_life_s: float = 7 * 86_400.0
) -> dict[str, float]:
    """``(node_id, weight, age_seconds)`` usage events → node_id → Σ weight · 2^(−age / half_life).

    The input of ``S_memory``: recent confirmed usage counts fully, old usage fades, so frequency is
    never mistaken for truth for long."""
    out: dict[str, float] = {}
    for node_id, weight, age in events:
        out[node_id] = out.get(node_id, 0.0) + float(weight) * 0.5 ** (max(0.0, float(age)) / half_life_s)
    return out


@dataclass(frozen=True, eq=False)
class Expansion:
    """Admissible moves out of one node after gates and pruning (arrays aligned by candidate)."""

    positions: np.ndarray
    edge_codes: np.ndarray  # EDGE_TYPE_CODE, or SEMANTIC_CODE for a semantic candidate
    weights: np.ndarray
    gated: int  # dropped by the hard gates or an inhibitory veto
    pruned: int  # dropped by anti-hub pruning

    @staticmethod
    def empty(gated: int = 0) -> Expansion:
        return Expansion(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), gated, 0)


def edge_type_name(code: int) -> str:
    return SEMANTIC_EDGE if code == SEMANTIC_CODE else EDGE_TYPE_NAMES[code]


def _edge_mask(names: Iterable[str]) -> np.ndarray:
    mask = np.zeros(len(EDGE_TYPE_NAMES), dtype=bool)
    for name in names:
        if name in EDGE_TYPE_CODE:
            mask[EDGE_TYPE_CODE[name]] = True
    return mask


@dataclass(eq=False)
class ScoringContext:
    """Everything one request needs to expand and score nodes around its landing point."""

    snapshot: GraphSnapshot
    runtime: GraphRuntime
    params: ScoringParams
    profile: TypologyProfile
    gate: NodeGate
    start: int
    prompt_vec: np.ndarray | None
    scope_clusters: tuple[str, ...]
    weights: np.ndarray
    type_pref: np.ndarray  # preference per node type code
    label_taxo: np.ndarray  # S_taxo per label code (+ sentinel)
    cluster_taxo: np.ndarray  # S_taxo of an unlabelled node per cluster code (+ sentinel)
    memory: dict[int, float]
    forward_mask: np.ndarray
    backward_mask: np.ndarray
    _semantic: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    @classmethod
    def build(
        cls,
        snapshot: GraphSnapshot,
        runtime: GraphRuntime,
        *,
        landing: Landing,
        weaver: WeaverResult,
        decision: PolicyDecision,
        typology: Mapping[str, Any] | str | None,
        prompt_vec: np.ndarray | None,
        memory_signal: Mapping[str, float] | None = None,
        params: ScoringParams = DEFAULT_SCORING_PARAMS,
    ) -> ScoringContext:
        if landing.node_start is None:
            raise ValueError("a scoring context needs a landing point")
        profile = runtime.typology(typology)
        final = {
            runtime.label_code[lid]: float(score)
            for lid, score in weaver.l_final.items()
            if lid in runtime.label_code and decision.constraints.admits_label(lid)
        }
        scope_clusters = landing.clusters or tuple(
            sorted({k for c in final if (k := runtime.label_cluster_key(c)) is not None})
        )
        gate = NodeGate.build(
            runtime,
            decision.constraints,
            scope_labels=[runtime.label_ids[c] for c in final],
            scope_clusters=scope_clusters,
            block_high_risk_actions=Flag.NEW_INTENT_CANDIDATE in landing.flags,
        )
        n_clusters = len(runtime.cluster_keys)
        cluster_scope = np.zeros(n_clusters + 1)
        cluster_scope[[runtime.cluster_code[k] for k in scope_clusters if k in runtime.cluster_code]] = (
            params.taxo_same_cluster
        )
        label_taxo = np.append(cluster_scope[runtime.label_cluster], 0.0)
        best = max(final.values(), default=0.0)
        for code, score in sorted(final.items()):
            rel = score / best if best > 0 else 1.0
            related = runtime.ancestors(code) + runtime.descendants(code)
            if related:
                label_taxo[related] = np.maximum(label_taxo[related], params.taxo_lineage * rel)
            label_taxo[code] = max(label_taxo[code], params.taxo_exact * rel)
        type_pref = np.zeros(len(NODE_TYPE_NAMES))
        preferred = [t for t in profile.preferred_node_types if t in NODE_TYPE_CODE]
        for rank, name in enumerate(preferred):
            step = params.typology_rank_decay * rank / max(1, len(preferred) - 1)
            type_pref[NODE_TYPE_CODE[name]] = max(type_pref[NODE_TYPE_CODE[name]], 1.0 - step)
        memory = {
            runtime_pos: min(max(float(value), 0.0), params.memory_cap)
            for node_id, value in (memory_signal or {}).items()
            if (runtime_pos := snapshot.position.get(node_id)) is not None
        }
        return cls(
            snapshot=snapshot,
            runtime=runtime,
            params=params,
            profile=profile,
            gate=gate,
            start=snapshot.position[landing.node_start],
            prompt_vec=None if prompt_vec is None else np.asarray(prompt_vec, dtype=np.float32),
            scope_clusters=scope_clusters,
            weights=np.asarray(profile.weights, dtype=np.float64),
            type_pref=type_pref,
            label_taxo=label_taxo,
            cluster_taxo=cluster_scope,
            memory=memory,
            forward_mask=_edge_mask(params.forward_edge_types),
            backward_mask=_edge_mask(params.backward_edge_types),
        )

    # --- candidates ---------------------------------------------------------------------------

    def semantic_candidates(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions and cosines of the best semantic matches in the scope (computed once)."""
        if self._semantic is None:
            self._semantic = self._compute_semantic()
        return self._semantic

    def _compute_semantic(self) -> tuple[np.ndarray, np.ndarray]:
        empty = (np.zeros(0, np.int64), np.zeros(0))
        snapshot, runtime, params = self.snapshot, self.runtime, self.params
        if snapshot.embeddings is None or self.prompt_vec is None or params.semantic_candidates <= 0:
            return empty
        parts = [snapshot.cluster_nodes[k] for k in self.scope_clusters if k in snapshot.cluster_nodes]
        if not parts:
            return empty
        pool = np.unique(np.concatenate(parts)).astype(np.int64)
        if pool.size > params.semantic_pool_max:
            pool = pool[np.isin(pool, self._label_pool())]
        pool = pool[type_mask(params.semantic_node_types)[runtime.node_type[pool]] & (pool != self.start)]
        pool = pool[self.gate.admit(runtime, pool)]
        if pool.size == 0:
            return empty
        cos = cosines(snapshot, pool, self.prompt_vec)
        keep = cos >= params.semantic_min_similarity
        pool, cos = pool[keep], cos[keep]
        order = np.lexsort((runtime.id_rank[pool], -cos))[: params.semantic_candidates]
        return pool[order], cos[order]

    def _label_pool(self) -> np.ndarray:
        """Nodes of the labels with a positive S_taxo (the fallback pool of an oversized cluster scope)."""
        codes = np.flatnonzero(self.label_taxo[:-1] > self.params.taxo_same_cluster)
        label_nodes = self.snapshot.label_nodes
        parts = [label_nodes[lid] for c in codes if (lid := self.runtime.label_ids[c]) in label_nodes]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)

    def expand(
        self, position: int, *, exclude: Iterable[int] | set[int], semantic: bool = False
    ) -> Expansion:
        """Admissible moves out of ``position``: collect, veto, gate, prune (see the module docstring)."""
        snapshot, runtime, params = self.snapshot, self.runtime, self.params
        o_idx, o_typ, o_w = snapshot.out_edges.row(position)
        i_idx, i_typ, i_w = snapshot.in_edges.row(position)
        inhibitory = params.inhibitory_below
        backward = self.backward_mask[i_typ]
        vetoed = np.concatenate([o_idx[o_w < inhibitory], i_idx[backward & (i_w < inhibitory)]])
        fwd = self.forward_mask[o_typ] & (o_w >= inhibitory)
        bwd = backward & (i_w >= inhibitory)
        positions = [o_idx[fwd].astype(np.int64), i_idx[bwd].astype(np.int64)]
        codes = [o_typ[fwd].astype(np.int64), i_typ[bwd].astype(np.int64)]
        weights = [o_w[fwd].astype(np.float64), i_w[bwd].astype(np.float64)]
        if semantic:
            sem_pos, sem_cos = self.semantic_candidates()
            positions.append(sem_pos)
            codes.append(np.full(sem_pos.size, SEMANTIC_CODE, dtype=np.int64))
            weights.append(sem_cos * params.semantic_weight)
        cand = np.concatenate(positions)
        if cand.size == 0:
            return Expansion.empty()
        code = np.concatenate(codes)
        weight = np.concatenate(weights)
        # one move per target: the heaviest, a real edge before a semantic one, then the edge type code
        order = np.lexsort((code, code < 0, -weight, cand))
        cand, code, weight = cand[order], code[order], weight[order]
        first = np.ones(cand.size, dtype=bool)
        first[1:] = cand[1:] != cand[:-1]
        cand, code, weight = cand[first], code[first], weight[first]
        excluded = set(exclude)
        excluded.add(position)
        unseen = np.fromiter((int(p) not in excluded for p in cand), dtype=bool, count=cand.size)
        veto = np.isin(cand, vetoed) if vetoed.size else np.zeros(cand.size, dtype=bool)
        candidate = unseen & ~veto
        admissible = candidate & self.gate.admit(runtime, cand)
        gated = int((unseen & veto).sum() + (candidate & ~admissible).sum())
        cand, code, weight = cand[admissible], code[admissible], weight[admissible]
        k = params.effective_k
        pruned = 0
        if cand.size > k:
            pref = self.type_pref[runtime.node_type[cand]]
            order = np.lexsort((runtime.id_rank[cand], -weight, -pref))[:k]
            pruned = int(cand.size - k)
            order.sort()
            cand, code, weight = cand[order], code[order], weight[order]
        return Expansion(cand, code, weight, gated, pruned)

    # --- scores -------------------------------------------------------------------------------

    def components(self, positions: np.ndarray, depth: int | np.ndarray) -> np.ndarray:
        """The five score components of each candidate, shape (len(positions), 5)."""
        runtime, params = self.runtime, self.params
        positions = np.asarray(positions, dtype=np.int64)
        out = np.zeros((positions.size, 5))
        if positions.size == 0:
            return out
        struct = params.struct_simrank * runtime.simrank.lookup(self.start, positions)
        struct += params.struct_jaccard * runtime.jaccard.lookup(self.start, positions)
        if runtime.community is not None:
            own = runtime.community[self.start]
            if own >= 0:
                struct += params.struct_community * (runtime.community[positions] == own)
        struct = np.where(runtime.is_hub(positions), struct * params.hub_struct_factor, struct)
        out[:, 0] = np.clip(struct, 0.0, 1.0)
        out[:, 1] = np.clip(cosines(self.snapshot, positions, self.prompt_vec), 0.0, 1.0)
        labelled = runtime.node_label_ptr[positions + 1] > runtime.node_label_ptr[positions]
        by_label = segment_reduce(runtime.node_label_ptr, runtime.node_label_idx, self.label_taxo, positions)
        by_cluster = segment_reduce(
            runtime.node_cluster_ptr, runtime.node_cluster_idx, self.cluster_taxo, positions
        )
        out[:, 2] = np.where(labelled, by_label, by_cluster)
        max_depth = self.profile.max_depth
        depth_arr = np.asarray(depth, dtype=np.float64)
        depth_factor = (
            np.ones_like(depth_arr)
            if max_depth is None
            else params.typology_depth_decay ** np.maximum(0.0, depth_arr - max_depth)
        )
        out[:, 3] = self.type_pref[runtime.node_type[positions]] * depth_factor
        if self.memory:
            out[:, 4] = np.fromiter((self.memory.get(int(p), 0.0) for p in positions), float, positions.size)
        return out

    def score(self, positions: np.ndarray, depth: int | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(composite scores, components) of the candidates at ``depth`` hops from the landing point."""
        parts = self.components(positions, depth)
        return parts @ self.weights, parts

    def scored_nodes(self, positions: np.ndarray, scores: np.ndarray, parts: np.ndarray) -> list[ScoredNode]:
        ids = self.snapshot.node_ids
        return [
            ScoredNode(
                node_id=ids[int(p)],
                score=round(float(s), 6),
                s_struct=round(float(c[0]), 6),
                s_sem=round(float(c[1]), 6),
                s_taxo=round(float(c[2]), 6),
                s_typology=round(float(c[3]), 6),
                s_memory=round(float(c[4]), 6),
            )
            for p, s, c in zip(positions.tolist(), scores.tolist(), parts, strict=True)
        ]


def expand_and_score(
    snapshot: GraphSnapshot,
    runtime: GraphRuntime,
    *,
    landing: Landing,
    weaver: WeaverResult,
    decision: PolicyDecision,
    typology: Mapping[str, Any] | str | None,
    prompt_vec: np.ndarray | None,
    memory_signal: Mapping[str, float] | None = None,
    params: ScoringParams = DEFAULT_SCORING_PARAMS,
) -> list[ScoredNode]:
    """The landing point's gated, pruned, scored neighbourhood, best first (ties by node_id).

    Empty when the landing has no node_start."""
    if landing.node_start is None:
        return []
    context = ScoringContext.build(
        snapshot,
        runtime,
        landing=landing,
        weaver=weaver,
        decision=decision,
        typology=typology,
        prompt_vec=prompt_vec,
        memory_signal=memory_signal,
        params=params,
    )
    expansion = context.expand(context.start, exclude=(), semantic=True)
    scores, parts = context.score(expansion.positions, 1)
    order = np.lexsort((runtime.id_rank[expansion.positions], -scores))
    return context.scored_nodes(expansion.positions[order], scores[order], parts[order])
