"""Steps 6–7 — fast path and deterministic traversal (ARG v1 §2.6–2.7).

``route`` turns a landing point into a ``Route``: the path (nodes and typed edges) to a target node.

* **Abstained landing** → the OutOfScope node is the target (``reason="abstained"``); no landing
  point → no target (``"no_start"``).
* **Terminal landing point** (Info, InfoStable, FAQ, Action, DirectAction, MemoryRead, MemoryWrite,
  OutOfScope, Clarify) → it is the target: a fast path (``"fast_path"``) when it is a stable shortcut
  type (FAQ, DirectAction, InfoStable) and the fast-path conditions hold, else ``"terminal_start"``.
* **Fast path** (§2.6) from a pass-through landing point (Decision, Shortcut) when
  ``confidence_global ≥ fast_path_min_confidence``, the typology is fast-path eligible, and the landing
  is neither a cold start nor an abstention: a Shortcut resolves to its best admissible terminal
  target; a Decision's best-scoring immediate move, when it is of a stable shortcut type, becomes the
  target (a Shortcut there is resolved one hop further, within max hops). Every move is still
  policy-gated and taxonomy-gated: the fast path uses the same expansion as the search.
* **Deterministic best-first search with a beam** (§2.7) otherwise: a frontier of at most
  ``beam_width`` (typology) entries ordered by priority = composite score × ``hop_decay^(depth−1)`` ×
  an edge-weight factor (× ``semantic_jump_factor`` for a vector jump); the best entry is popped — a
  terminal node ends the search, a Decision or Shortcut is expanded (gated, pruned to K, scored) while
  its depth is below ``max_hops = min(typology max_hops, policy max_hops)`` and the expansion budget
  (``complexity_budget × beam_width``) lasts. A strict visited set (every node ever pushed) means no
  node is entered twice, so no loop can close; semantic jumps are allowed from the landing point only,
  to informational nodes, and never to a visited node. Ties break by node_id, so the same inputs
  always give the same ``Route``. No terminal reachable → ``target=None`` (``"no_terminal"``).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from arg_platform.vocabulary import EdgeType
from inference.contracts import Flag, Landing, PolicyDecision, Route, ScoredNode, WeaverResult
from inference.steps.graph_index import FAST_PATH_MASK, SHORTCUT_CODE, TERMINAL_MASK, GraphRuntime
from inference.steps.scoring import (
    DEFAULT_SCORING_PARAMS,
    SEMANTIC_CODE,
    Expansion,
    ScoringContext,
    ScoringParams,
    edge_type_name,
)
from ontology.graph_arrays import EDGE_TYPE_CODE
from ontology.graph_snapshot import GraphSnapshot

SHORTCUT_TO_CODE = EDGE_TYPE_CODE[EdgeType.SHORTCUT_TO]


@dataclass(frozen=True)
class TraversalParams:
    """Knobs of the fast path and the search (documented defaults):

    * ``fast_path_min_confidence`` (0.8) — ``confidence_global`` needed for the fast path;
    * ``default_max_hops`` (6) — when neither the typology nor the policy caps the hops;
    * ``hop_decay`` (0.9) — priority factor per extra hop, so a shorter path wins a tie;
    * ``edge_weight_influence`` (0.25) — share of the priority set by the edge weight
      (``1 − influence + influence × clip(weight, 0, 1)``);
    * ``semantic_jumps`` (True) and ``semantic_jump_factor`` (0.85) — whether the landing point may
      jump to a semantic candidate, and its priority factor (an edge move wins an equal score);
    * ``trace_top`` (10) — how many scored candidates the ``Route`` keeps for the trace;
    * ``scoring`` — the ``ScoringParams`` of every expansion.
    """

    fast_path_min_confidence: float = 0.8
    default_max_hops: int = 6
    hop_decay: float = 0.9
    edge_weight_influence: float = 0.25
    semantic_jumps: bool = True
    semantic_jump_factor: float = 0.85
    trace_top: int = 10
    scoring: ScoringParams = DEFAULT_SCORING_PARAMS


DEFAULT_TRAVERSAL_PARAMS = TraversalParams()


def max_hops_for(context: ScoringContext, decision: PolicyDecision, params: TraversalParams) -> int:
    """min(typology max_hops, policy max_hops), or the default when neither sets one."""
    caps = [h for h in (context.profile.max_hops, decision.constraints.max_hops) if h is not None]
    return min(caps) if caps else params.default_max_hops


def route(
    snapshot: GraphSnapshot,
    runtime: GraphRuntime,
    *,
    landing: Landing,
    weaver: WeaverResult,
    decision: PolicyDecision,
    typology: Mapping[str, Any] | str | None,
    prompt_vec: np.ndarray | None,
    memory_signal: Mapping[str, float] | None = None,
    params: TraversalParams = DEFAULT_TRAVERSAL_PARAMS,
) -> Route:
    """The path from the landing point to the target node (see the module docstring)."""
    if landing.node_start is None:
        return Route(target=None, reason="no_start")
    start_id = landing.node_start
    if landing.abstained:
        return Route(target=start_id, path_nodes=(start_id,), reason="abstained")
    context = ScoringContext.build(
        snapshot,
        runtime,
        landing=landing,
        weaver=weaver,
        decision=decision,
        typology=typology,
        prompt_vec=prompt_vec,
        memory_signal=memory_signal,
        params=params.scoring,
    )
    start = context.start
    if not context.gate.admit(runtime, np.array([start]))[0]:
        return Route(target=None, reason="start_forbidden")  # a gated node never appears in a route
    fast_ok = (
        weaver.confidence >= params.fast_path_min_confidence
        and context.profile.fast_path_eligible
        and Flag.NEW_INTENT_CANDIDATE not in landing.flags
    )
    start_type = int(runtime.node_type[start])
    if TERMINAL_MASK[start_type]:
        fast = fast_ok and bool(FAST_PATH_MASK[start_type])
        return Route(
            target=start_id,
            path_nodes=(start_id,),
            fast_path=fast,
            reason="fast_path" if fast else "terminal_start",
        )
    return _Search(context, decision, params, fast_ok).run()


class _Search:
    """One request's traversal state: visited set, parent pointers, scores for the trace."""

    def __init__(
        self, context: ScoringContext, decision: PolicyDecision, params: TraversalParams, fast_ok: bool
    ) -> None:
        self.context = context
        self.runtime = context.runtime
        self.params = params
        self.fast_ok = fast_ok
        self.max_hops = max_hops_for(context, decision, params)
        self.beam_width = context.profile.beam_width
        self.budget = context.profile.complexity_budget * context.profile.beam_width
        self.visited: set[int] = {context.start}
        self.parent: dict[int, tuple[int, int]] = {}  # node → (previous node, edge code)
        self.scored: dict[int, ScoredNode] = {}
        self.gated = 0
        self.pruned = 0

    # --- moves --------------------------------------------------------------------------------

    def moves(self, position: int, depth: int) -> tuple[Expansion, np.ndarray]:
        """Admissible, unvisited moves out of ``position`` with their priorities."""
        semantic = self.params.semantic_jumps and position == self.context.start
        expansion = self.context.expand(position, exclude=self.visited, semantic=semantic)
        self.gated += expansion.gated
        self.pruned += expansion.pruned
        scores, parts = self.context.score(expansion.positions, depth)
        nodes = self.context.scored_nodes(expansion.positions, scores, parts)
        for candidate, node in zip(expansion.positions.tolist(), nodes, strict=True):
            self.scored.setdefault(candidate, node)
        influence = self.params.edge_weight_influence
        edge_factor = np.where(
            expansion.edge_codes == SEMANTIC_CODE,
            self.params.semantic_jump_factor,
            1.0 - influence + influence * np.clip(expansion.weights, 0.0, 1.0),
        )
        priority = scores * edge_factor * self.params.hop_decay ** (depth - 1)
        return expansion, priority

    def best(self, expansion: Expansion, priority: np.ndarray, mask: np.ndarray) -> int | None:
        """Index of the best move among ``mask`` (priority, then node_id), or None."""
        candidates = np.flatnonzero(mask)
        if candidates.size == 0:
            return None
        ranks = self.runtime.id_rank[expansion.positions[candidates]]
        return int(candidates[np.lexsort((ranks, -priority[candidates]))[0]])

    # --- the two strategies -------------------------------------------------------------------

    def run(self) -> Route:
        start = self.context.start
        if self.max_hops < 1:
            return self.finish(None, "no_terminal")
        expansion, priority = self.moves(start, 1)
        if self.fast_ok:
            visited, parent = set(self.visited), dict(self.parent)
            target = self.fast_path(expansion, priority)
            if target is not None:
                return self.finish(target, "fast_path", fast_path=True)
            self.visited, self.parent = visited, parent  # a failed fast path leaves no trace on the search
        return self.beam(expansion, priority)

    def fast_path(self, expansion: Expansion, priority: np.ndarray) -> int | None:
        runtime, start = self.runtime, self.context.start
        types = runtime.node_type[expansion.positions]
        edge_moves = expansion.edge_codes != SEMANTIC_CODE
        if int(runtime.node_type[start]) == SHORTCUT_CODE:
            pick = self.best(expansion, priority, edge_moves & TERMINAL_MASK[types])
            return self.enter(start, expansion, pick)
        pick = self.best(expansion, priority, edge_moves)
        if pick is None or not FAST_PATH_MASK[int(types[pick])]:
            return None
        node = self.enter(start, expansion, pick)
        if node is None or TERMINAL_MASK[int(runtime.node_type[node])]:
            return node
        if self.max_hops < 2:  # a Shortcut neighbour needs one more hop to resolve
            return None
        onward, onward_priority = self.moves(node, 2)
        onward_types = runtime.node_type[onward.positions]
        resolved = self.best(
            onward,
            onward_priority,
            (onward.edge_codes == SHORTCUT_TO_CODE) & TERMINAL_MASK[onward_types],
        )
        return self.enter(node, onward, resolved)

    def enter(self, source: int, expansion: Expansion, index: int | None) -> int | None:
        if index is None:
            return None
        node = int(expansion.positions[index])
        self.visited.add(node)
        self.parent[node] = (source, int(expansion.edge_codes[index]))
        return node

    def beam(self, expansion: Expansion, priority: np.ndarray) -> Route:
        """Best-first search with a frontier of at most ``beam_width`` entries."""
        frontier: list[tuple[float, int, int, int]] = []  # (−priority, node_id rank, position, depth)
        expansions = 1
        self.push(frontier, self.context.start, expansion, priority, 1)
        while frontier:
            _, _, node, depth = heapq.heappop(frontier)
            if TERMINAL_MASK[int(self.runtime.node_type[node])]:
                return self.finish(node, "beam")
            if depth >= self.max_hops or expansions >= self.budget:
                continue
            expansions += 1
            onward, onward_priority = self.moves(node, depth + 1)
            self.push(frontier, node, onward, onward_priority, depth + 1)
        return self.finish(None, "no_terminal")

    def push(
        self,
        frontier: list[tuple[float, int, int, int]],
        source: int,
        expansion: Expansion,
        priority: np.ndarray,
        depth: int,
    ) -> None:
        ranks = self.runtime.id_rank[expansion.positions]
        for i in np.lexsort((ranks, -priority))[: self.beam_width].tolist():
            node = int(expansion.positions[i])
            if node in self.visited:
                continue
            self.visited.add(node)
            self.parent[node] = (source, int(expansion.edge_codes[i]))
            heapq.heappush(frontier, (-float(priority[i]), int(ranks[i]), node, depth))
        if len(frontier) > self.beam_width:
            frontier[:] = heapq.nsmallest(self.beam_width, frontier)
            heapq.heapify(frontier)

    # --- result -------------------------------------------------------------------------------

    def finish(self, target: int | None, reason: str, *, fast_path: bool = False) -> Route:
        ids = self.context.snapshot.node_ids
        start = self.context.start
        nodes = [start]
        edges: list[tuple[str, str, str]] = []
        if target is not None:
            chain = [target]
            while chain[-1] != start:
                chain.append(self.parent[chain[-1]][0])
            nodes = chain[::-1]
            edges = [
                (ids[a], ids[b], edge_type_name(self.parent[b][1]))
                for a, b in zip(nodes, nodes[1:], strict=False)
            ]
        trace = sorted(self.scored.values(), key=lambda s: (-s.score, s.node_id))[: self.params.trace_top]
        return Route(
            target=ids[target] if target is not None else None,
            path_nodes=tuple(ids[p] for p in nodes),
            path_edges=tuple(edges),
            fast_path=fast_path,
            considered=len(self.scored),
            pruned=self.gated + self.pruned,
            scored=tuple(trace),
            reason=reason,
        )
