"""Step 4 — the landing point (ARG v1 §2.4): project ``L_final`` onto the graph by set rules.

``land`` reads only the frozen snapshot, its ``GraphRuntime`` and the request's values; it decides in
this order:

1. **OOD** (the weaver flagged the prompt out of domain) → abstain: land on the OutOfScope node most
   similar to the prompt (``abstained=True``, reason ``"ood"``), or, when the release has no admissible
   OutOfScope node, ``node_start=None`` with reason ``"fallback"``.
2. **Low confidence** (``confidence_global`` below the *ask threshold*, ``ask_threshold``; a user's
   choice has confidence 1 and never is) → abstain with reason ``"low_confidence"``: the request is
   asked about (``inference.steps.fallback``), never answered by a node it barely matches. The ask
   threshold is the release's: calibrated at publication on held-out examples
   (``inference.learning.calibration``) or set by a curator (``ontology.ask_threshold``), unless
   ``LandingParams.min_confidence`` sets one.
3. **Cold start** (NEW_INTENT_CANDIDATE without OOD: in-domain vocabulary, novel pattern) → a
   conservative approximate landing by embedding similarity inside the best cluster, restricted to
   Info-first / Clarify-first node types and never on a high-risk Action / DirectAction (v1.1 safety
   rule); reason ``"cold_start"``, flag NEW_INTENT_CANDIDATE. NEW_INTENT_CANDIDATE takes precedence
   over ABSTAIN_RECOMMENDED, a low confidence or an empty ``L_final``, which are what a novel pattern
   looks like; OOD does not.
4. **Abstention** when ``L_final`` is empty or the weaver recommends abstaining → as in 1, reason
   ``"ood"``.
5. **Set rules** over node ↔ label attachments: labels of ``L_final`` the policy admits; a label that
   is an ancestor of another label in the set is dropped in favour of the more specific one; then the
   first non-empty tier of admissible (ACTIVE, policy-admitted, taxonomy-coherent) nodes wins —
   the *intersection* of the specific labels' attachments (multi-label sets; reason
   ``"label_intersection"``), their *union* (``"label_match"``), the dropped ancestors' attachments,
   the specific labels' subtrees (``"label_subtree"``), the scope clusters' attachments
   (``"cluster_match"``). Candidates rank by ``label score × (1 + specificity_bonus × depth) ×
   max(0, cos(prompt, node)) × mood preference``, ties by node_id. The *mood preference* is
   ``1 + mood_bonus`` for a node whose type the request's mood prefers (``inference.steps.mood``: a
   request to act prefers Action / DirectAction, a question Info / InfoStable / FAQ), else
   1: a preference among admissible nodes only — the gates (policy, taxonomy, high-risk rules) run
   first and the action step's own checks still apply. When no tier has an admissible node (a strong
   contradiction between the labels and policy/taxonomy) → abstain with reason ``"no_attachment"``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from arg_platform.vocabulary import NodeType
from inference.contracts import Flag, Landing, PolicyDecision, WeaverResult
from inference.steps.graph_index import GraphRuntime, NodeGate, cosines, matvec, rank_desc, type_mask
from inference.steps.mood import MOOD_NODE_TYPES
from ontology.ask_threshold import DEFAULT_THRESHOLD, threshold_in_force
from ontology.graph_snapshot import GraphSnapshot

# Where a cold-start landing may put the request: nodes that inform or ask, never act (§2.4 v1.1).
COLD_START_NODE_TYPES: frozenset[str] = frozenset(
    {NodeType.INFO, NodeType.INFO_STABLE, NodeType.FAQ, NodeType.CLARIFY, NodeType.DECISION}
)

CLARIFY_MASK = type_mask([NodeType.CLARIFY])
MOOD_MASKS: dict[str, np.ndarray] = {mood.value: type_mask(types) for mood, types in MOOD_NODE_TYPES.items()}


@dataclass(frozen=True)
class LandingParams:
    """Thresholds of the landing step (defaults in parentheses are the documented defaults).

    * ``top_n`` (5) — landing candidates kept for the trace;
    * ``min_confidence`` (``None``) — the ask threshold: below this ``confidence_global`` the landing
      abstains. ``None`` reads the release's (``ask_threshold``); a number overrides it (a benchmark
      calibrating its own threshold passes 0);
    * ``abstain_flags`` (OOD, ABSTAIN_RECOMMENDED) — weaver flags that make the landing abstain;
    * ``specificity_bonus`` (0.05) — weight added per tree level, so deeper labels win ties;
    * ``cold_start_node_types`` (Info, InfoStable, FAQ, Clarify, Decision) — the only types a
      cold-start landing may pick; high-risk Actions / DirectActions are excluded whatever this says;
    * ``pool_max`` (20,000) — most rows scored by embedding for a cluster-wide tier; a larger cluster
      is narrowed to the nodes of the request's labels (bounded work on any graph size);
    * ``answered`` (False) — the request answers "Do you mean X or Y?": a tier lands on a Clarify node
      only when it has nothing else, so the user is not asked again;
    * ``mood_bonus`` (0.5) — the weight a label-tier candidate gains when its node type is one the
      request's mood prefers (0 turns the preference off): a preferred node wins when its score is at
      least two thirds of the best other one's.
    """

    top_n: int = 5
    min_confidence: float | None = None
    abstain_flags: frozenset[Flag] = frozenset({Flag.OOD, Flag.ABSTAIN_RECOMMENDED})
    specificity_bonus: float = 0.05
    cold_start_node_types: frozenset[str] = COLD_START_NODE_TYPES
    pool_max: int = 20_000
    answered: bool = False
    mood_bonus: float = 0.5


DEFAULT_LANDING_PARAMS = LandingParams()
DEFAULT_MIN_CONFIDENCE = DEFAULT_THRESHOLD  # the ask threshold of a release that has none calibrated
ASK_DOCUMENT = (
    "low_confidence"  # the release document of the calibration (``inference.learning.calibration``)
)


def ask_threshold(snapshot: GraphSnapshot, params: LandingParams = DEFAULT_LANDING_PARAMS) -> float:
    """The confidence below which a request is asked about: ``params.min_confidence`` when set, else the
    release's threshold in force (``ontology.ask_threshold.threshold_in_force``: a curator's override,
    else the calibrated one, else ``DEFAULT_MIN_CONFIDENCE``)."""
    if params.min_confidence is not None:
        return params.min_confidence
    return float(threshold_in_force(snapshot.documents)["value"])


def land(
    snapshot: GraphSnapshot,
    runtime: GraphRuntime,
    *,
    weaver: WeaverResult,
    decision: PolicyDecision,
    prompt_vec: np.ndarray | None,
    params: LandingParams = DEFAULT_LANDING_PARAMS,
    mood: str | None = None,
) -> Landing:
    """The landing point of a request (see the module docstring for the rules and their order);
    ``mood`` is the envelope's (``"act"``, ``"ask"`` or None)."""
    flags = weaver.flags
    if Flag.OOD in flags:
        return abstain(
            snapshot, runtime, decision=decision, prompt_vec=prompt_vec, reason="ood", params=params
        )
    threshold = ask_threshold(snapshot, params)
    if weaver.confidence < threshold and (weaver.l_final or Flag.NEW_INTENT_CANDIDATE in flags):
        return abstain(
            snapshot,
            runtime,
            decision=decision,
            prompt_vec=prompt_vec,
            reason="low_confidence",
            flags=flags & {Flag.NEW_INTENT_CANDIDATE},
            params=params,
        )
    if Flag.NEW_INTENT_CANDIDATE in flags:
        return _cold_start(
            snapshot, runtime, weaver=weaver, decision=decision, prompt_vec=prompt_vec, params=params
        )
    if not weaver.l_final or flags & params.abstain_flags:
        return abstain(
            snapshot, runtime, decision=decision, prompt_vec=prompt_vec, reason="ood", params=params
        )
    return _label_landing(
        snapshot,
        runtime,
        weaver=weaver,
        decision=decision,
        prompt_vec=prompt_vec,
        params=params,
        preferred=_mood_mask(mood, params),
    )


def abstain(
    snapshot: GraphSnapshot,
    runtime: GraphRuntime,
    *,
    decision: PolicyDecision,
    prompt_vec: np.ndarray | None,
    reason: str,
    flags: Iterable[Flag] = (),
    params: LandingParams = DEFAULT_LANDING_PARAMS,
) -> Landing:
    """Land on the OutOfScope node most similar to the prompt, or a controlled fallback without one."""
    out_flags = frozenset(flags) | {Flag.ABSTAIN_RECOMMENDED}
    positions = runtime.out_of_scope
    positions = positions[NodeGate.build(runtime, decision.constraints).admit(runtime, positions)]
    if positions.size == 0:
        return Landing(node_start=None, abstained=True, reason="fallback", flags=out_flags)
    scores = cosines(snapshot, positions, prompt_vec)
    order = rank_desc(runtime, scores, positions)[: params.top_n]
    candidates = tuple((snapshot.node_ids[int(positions[i])], round(float(scores[i]), 6)) for i in order)
    return Landing(
        node_start=candidates[0][0], candidates=candidates, abstained=True, reason=reason, flags=out_flags
    )


def _admitted_labels(
    runtime: GraphRuntime, decision: PolicyDecision, scores: Mapping[str, float]
) -> dict[int, float]:
    """Label code → score for the labels the release knows and the policy admits."""
    return {
        runtime.label_code[lid]: float(score)
        for lid, score in scores.items()
        if lid in runtime.label_code and decision.constraints.admits_label(lid)
    }


def _mood_mask(mood: str | None, params: LandingParams) -> np.ndarray | None:
    """The node-type mask the request's mood prefers, or None (no mood, or the preference is off)."""
    if mood is None or params.mood_bonus <= 0:
        return None
    return MOOD_MASKS.get(mood)


def _label_landing(
    snapshot: GraphSnapshot,
    runtime: GraphRuntime,
    *,
    weaver: WeaverResult,
    decision: PolicyDecision,
    prompt_vec: np.ndarray | None,
    params: LandingParams,
    preferred: np.ndarray | None = None,
) -> Landing:
    labels = _admitted_labels(runtime, decision, weaver.l_final)
    if not labels:
        return abstain(
            snapshot, runtime, decision=decision, prompt_vec=prompt_vec, reason="no_attachment", params=params
        )
    lineage = {code: set(runtime.ancestors(code)) for code in labels}
    specific = sorted(c for c in labels if not any(c in lineage[o] for o in labels if o != c))
    general = sorted(c for c in labels if c not in specific)
    weight = {c: labels[c] * (1.0 + params.specificity_bonus * int(runtime.label_depth[c])) for c in labels}
    scope_clusters = tuple(sorted({k for c in labels if (k := runtime.label_cluster_key(c)) is not None}))
    gate = NodeGate.build(
        runtime,
        decision.constraints,
        scope_labels=[runtime.label_ids[c] for c in labels],
        scope_clusters=scope_clusters,
    )

    def attached(codes: Iterable[int], weights: Mapping[int, float]) -> tuple[np.ndarray, np.ndarray]:
        label_nodes = snapshot.label_nodes
        parts = [
            (label_nodes[lid], weights[c])
            for c in codes
            if (lid := runtime.label_ids[c]) in label_nodes and label_nodes[lid].size
        ]
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0)
        positions = np.concatenate([p for p, _ in parts]).astype(np.int64)
        values = np.concatenate([np.full(p.size, w) for p, w in parts])
        return _unique_max(positions, values)

    def intersection() -> tuple[np.ndarray, np.ndarray]:
        common = _intersection([snapshot.label_nodes.get(runtime.label_ids[c]) for c in specific])
        return common, np.full(common.size, max(weight[c] for c in specific))

    def subtree() -> tuple[np.ndarray, np.ndarray]:
        inherited: dict[int, float] = {}
        for c in specific:
            for d in runtime.descendants(c):
                inherited[d] = max(inherited.get(d, 0.0), weight[c])
        return attached(sorted(inherited), inherited)

    # evaluated lazily, in order: the first tier with an admissible node wins
    tiers: list[tuple[str, Callable[[], tuple[np.ndarray, np.ndarray]]]] = []
    if len(specific) > 1:
        tiers.append(("label_intersection", intersection))
    tiers.append(("label_match", lambda: attached(specific, weight)))
    if general:
        tiers.append(("label_match", lambda: attached(general, weight)))
    tiers.append(("label_subtree", subtree))
    for reason, tier in tiers:
        positions, weights = tier()
        if params.answered and positions.size:
            keep = ~CLARIFY_MASK[snapshot.node_type[positions]]
            if keep.any():
                positions, weights = positions[keep], weights[keep]
        landing = _rank(
            snapshot,
            runtime,
            gate,
            positions,
            weights,
            prompt_vec,
            reason,
            scope_clusters,
            params,
            preferred=preferred,
        )
        if landing is not None:
            return landing
    pool = _cluster_pool(snapshot, scope_clusters, params, narrow_to=attached(labels, weight)[0])
    landing = _rank(
        snapshot,
        runtime,
        gate,
        pool,
        np.full(pool.size, max(labels.values())),
        prompt_vec,
        "cluster_match",
        scope_clusters,
        params,
        preferred=preferred,
    )
    if landing is not None:
        return landing
    return abstain(
        snapshot, runtime, decision=decision, prompt_vec=prompt_vec, reason="no_attachment", params=params
    )


def _cold_start(
    snapshot: GraphSnapshot,
    runtime: GraphRuntime,
    *,
    weaver: WeaverResult,
    decision: PolicyDecision,
    prompt_vec: np.ndarray | None,
    params: LandingParams,
) -> Landing:
    """Approximate landing for an in-domain novel pattern: the best cluster, Info-first / Clarify-first."""
    votes: dict[str, float] = {}
    labels = _admitted_labels(runtime, decision, {**dict(weaver.top_k), **weaver.l_final})
    for code, score in labels.items():
        key = runtime.label_cluster_key(code)
        if key is not None:
            votes[key] = votes.get(key, 0.0) + max(score, 0.0)
    best: str | None = None
    if votes:
        best = min(votes, key=lambda k: (-votes[k], k))
    elif runtime.cluster_centroids is not None and prompt_vec is not None and runtime.cluster_keys:
        similarity = matvec(runtime.cluster_centroids, np.asarray(prompt_vec, dtype=np.float32))
        populated = np.flatnonzero(np.abs(runtime.cluster_centroids).sum(axis=1) > 0)
        if populated.size:
            best = runtime.cluster_keys[int(populated[np.argmax(similarity[populated])])]
    cold_flags = frozenset({Flag.NEW_INTENT_CANDIDATE})
    if best is None:
        return abstain(
            snapshot,
            runtime,
            decision=decision,
            prompt_vec=prompt_vec,
            reason="no_attachment",
            flags=cold_flags,
            params=params,
        )
    in_best = {c: s for c, s in labels.items() if runtime.label_cluster_key(c) == best}
    narrow = [
        snapshot.label_nodes[runtime.label_ids[c]]
        for c in in_best
        if runtime.label_ids[c] in snapshot.label_nodes
    ]
    pool = _cluster_pool(
        snapshot,
        (best,),
        params,
        narrow_to=np.unique(np.concatenate(narrow)) if narrow else np.zeros(0, np.int64),
    )
    gate = NodeGate.build(
        runtime,
        decision.constraints,
        scope_labels=[runtime.label_ids[c] for c in labels],
        scope_clusters=(best,),
        block_high_risk_actions=True,
    )
    allowed_types = type_mask(params.cold_start_node_types)
    pool = pool[allowed_types[runtime.node_type[pool]] & ~runtime.high_risk_action[pool]]
    landing = _rank(
        snapshot, runtime, gate, pool, np.ones(pool.size), prompt_vec, "cold_start", (best,), params
    )
    if landing is None:
        return abstain(
            snapshot,
            runtime,
            decision=decision,
            prompt_vec=prompt_vec,
            reason="no_attachment",
            flags=cold_flags,
            params=params,
        )
    return Landing(
        node_start=landing.node_start,
        candidates=landing.candidates,
        reason="cold_start",
        flags=cold_flags,
        clusters=landing.clusters,
    )


def _rank(
    snapshot: GraphSnapshot,
    runtime: GraphRuntime,
    gate: NodeGate,
    positions: np.ndarray,
    weights: np.ndarray,
    prompt_vec: np.ndarray | None,
    reason: str,
    clusters: tuple[str, ...],
    params: LandingParams,
    *,
    preferred: np.ndarray | None = None,
) -> Landing | None:
    if positions.size == 0:
        return None
    keep = gate.admit(runtime, positions)
    positions, weights = positions[keep], weights[keep]
    if positions.size == 0:
        return None
    scores = weights * np.maximum(cosines(snapshot, positions, prompt_vec), 0.0)
    if preferred is not None:  # the mood preference, among admitted nodes only
        scores = scores * np.where(preferred[snapshot.node_type[positions]], 1.0 + params.mood_bonus, 1.0)
    # score first, then the label weight (decisive when the release has no embeddings), then node_id
    order = np.lexsort((runtime.id_rank[positions], -weights, -scores))[: params.top_n]
    candidates = tuple((snapshot.node_ids[int(positions[i])], round(float(scores[i]), 6)) for i in order)
    return Landing(node_start=candidates[0][0], candidates=candidates, reason=reason, clusters=clusters)


def _unique_max(positions: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each position once, with the largest of its values."""
    order = np.lexsort((-values, positions))
    positions, values = positions[order], values[order]
    first = np.ones(positions.size, dtype=bool)
    first[1:] = positions[1:] != positions[:-1]
    return positions[first], values[first]


def _intersection(arrays: list[np.ndarray | None]) -> np.ndarray:
    if any(a is None or a.size == 0 for a in arrays):
        return np.zeros(0, np.int64)
    present = [a for a in arrays if a is not None]
    common = np.asarray(present[0], dtype=np.int64)
    for other in present[1:]:
        common = np.intersect1d(common, other, assume_unique=True)
    return common


def _cluster_pool(
    snapshot: GraphSnapshot, clusters: Iterable[str], params: LandingParams, *, narrow_to: np.ndarray
) -> np.ndarray:
    """Nodes attached to the clusters; when that exceeds ``pool_max`` rows, the nodes of the request's
    own labels (``narrow_to``) instead, so cluster-wide tiers stay bounded on any graph size."""
    parts = [snapshot.cluster_nodes[k] for k in clusters if k in snapshot.cluster_nodes]
    if not parts:
        return np.zeros(0, np.int64)
    pool = np.unique(np.concatenate(parts)) if len(parts) > 1 else np.asarray(parts[0], dtype=np.int64)
    if pool.size > params.pool_max:
        return np.asarray(narrow_to, dtype=np.int64)[: params.pool_max]
    return pool.astype(np.int64, copy=False)
