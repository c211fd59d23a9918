"""The geDIG gauge of a candidate change: one scalar for structural cost vs information gain.

``F = ΔEPC_norm − λ (ΔH_norm + γ ΔSP_rel)`` — smaller is better (cheap edits that consolidate).

* **ΔEPC_norm** — the edit-path cost actually applied (``changeset_edit_cost``: unit costs per node,
  edge, label, alias, attachment and weight edit) divided by the fixed upper bound ``c_max`` (a fixed
  yardstick, so two candidates compare on the same scale), capped at 1.
* **ΔH_norm** — the change in Shannon entropy of where the replayed requests land: for each request, the
  landing candidates' scores become a distribution ``p_i ∝ exp(s_i / T)``; ``H = −Σ p log p`` is
  normalised by ``log K`` (K = the larger number of candidates, at least 2, which is the seed's ``max(log
  K, ε)`` guard without its blow-up) and averaged over the replayed requests. Sign: we record ``H_before
  − H_after`` so that, like ΔSP_rel, *positive means gain* (more order). The seed writes the entropy term
  once as after − before but states that a smaller F is better and that consolidation lowers F; the two
  only agree with this orientation.
* **ΔSP_rel** — relative shortening of the average shortest-path length (unit edge lengths, directed
  moves over non-inhibitory edges between ACTIVE nodes) of the query-centric induced subgraph ``S_h``:
  the nodes within h hops of the changed nodes, ``(L_before − L_after) / max(L_before, ε)``.
* **0-hop / multi-hop** — ``g0`` evaluates the change right after wiring (no path term); ``g(h)`` for
  h = 1…``max_hops``; ``gmin = min_h g(h)``; the operational gauge ``b = min(g0, gmin)``.

The gauge is recorded in the proposal's replay evidence (g0, gmin, b, every term) and ``b`` is the
complexity/structure term of ``Score(C)``. The AG/DG gates that read g0 and b before auto-commit, with
thresholds from the project's history, are ``review.loop.gedig_gate``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import networkx as nx
import numpy as np

from ontology.store.port import GraphData
from review.changeset import Op, changeset_edit_cost
from review.loop.params import GedigParams

EPS = 1e-8
MAX_SUBGRAPH = 400


@dataclass(frozen=True)
class Gauge:
    edit_cost: float
    delta_epc_norm: float
    delta_h_norm: float
    delta_sp_rel: dict[int, float]
    g0: float
    g_by_hop: dict[int, float]
    gmin: float
    b: float
    F: float

    def as_json(self) -> dict[str, object]:
        data = asdict(self)
        for key in ("delta_sp_rel", "g_by_hop"):
            data[key] = {str(h): round(v, 6) for h, v in data[key].items()}
        for key in ("edit_cost", "delta_epc_norm", "delta_h_norm", "g0", "gmin", "b", "F"):
            data[key] = round(float(data[key]), 6)
        return data


def entropy(scores: Sequence[float], temperature: float) -> tuple[float, int]:
    """Shannon entropy of ``softmax(scores / T)`` and the number of categories."""
    if not scores:
        return 0.0, 0
    s = np.asarray(scores, dtype=np.float64) / max(temperature, EPS)
    p = np.exp(s - s.max())
    p /= p.sum()
    return float(-(p * np.log(np.clip(p, EPS, 1.0))).sum()), len(scores)


def delta_h_norm(
    before: Iterable[Sequence[float]], after: Iterable[Sequence[float]], temperature: float
) -> float:
    """Mean over requests of (H_before − H_after) / log K, K = max(K_before, K_after, 2)."""
    values = []
    for b, a in zip(before, after, strict=True):
        h_before, k_before = entropy(b, temperature)
        h_after, k_after = entropy(a, temperature)
        values.append((h_before - h_after) / math.log(max(k_before, k_after, 2)))
    return float(np.mean(values)) if values else 0.0


def _digraph(graph: GraphData) -> nx.DiGraph:
    active = {n.node_id for n in graph.nodes if n.status == "ACTIVE"}
    g = nx.DiGraph()
    g.add_nodes_from(active)
    g.add_edges_from(
        (e.source, e.target)
        for e in graph.edges
        if e.weight > -0.01 and e.source in active and e.target in active
    )
    return g


def _hop_set(g: nx.DiGraph, seeds: set[str], hops: int) -> set[str]:
    undirected = g.to_undirected(as_view=True)
    out = {s for s in seeds if s in g}
    frontier = deque((s, 0) for s in out)
    while frontier and len(out) < MAX_SUBGRAPH:
        current, depth = frontier.popleft()
        if depth >= hops:
            continue
        for neighbour in sorted(undirected.neighbors(current)):
            if neighbour not in out:
                out.add(neighbour)
                frontier.append((neighbour, depth + 1))
    return out


def aspl(g: nx.DiGraph, nodes: set[str]) -> float:
    """Average directed shortest-path length over the reachable ordered pairs of ``g[nodes]``."""
    sub = g.subgraph(nodes)
    total, pairs = 0, 0
    for _, lengths in nx.all_pairs_shortest_path_length(sub):
        for _, d in lengths.items():
            if d > 0:
                total += d
                pairs += 1
    return total / pairs if pairs else 0.0


def gauge(
    *,
    before: GraphData,
    after: GraphData,
    ops: Sequence[Op],
    landing_before: Sequence[Sequence[float]],
    landing_after: Sequence[Sequence[float]],
    params: GedigParams,
) -> Gauge:
    """The geDIG gauge of ``ops`` (see the module doc)."""
    cost = changeset_edit_cost(ops)
    epc = min(1.0, cost / max(params.c_max, EPS))
    dh = delta_h_norm(landing_before, landing_after, params.temperature)
    g_before, g_after = _digraph(before), _digraph(after)
    seeds: set[str] = set()
    for op in ops:
        seeds |= op.nodes()
    sp: dict[int, float] = {}
    g_by_hop: dict[int, float] = {}
    for h in range(1, params.max_hops + 1):
        region = _hop_set(g_before, seeds, h) | _hop_set(g_after, seeds, h)
        l_before = aspl(g_before, region & set(g_before.nodes))
        l_after = aspl(g_after, region & set(g_after.nodes))
        sp[h] = (l_before - l_after) / max(l_before, EPS) if l_before > 0 else 0.0
        g_by_hop[h] = epc - params.lam * (dh + params.gamma * sp[h])
    g0 = epc - params.lam * dh
    gmin = min(g_by_hop.values()) if g_by_hop else g0
    b = min(g0, gmin)
    return Gauge(
        edit_cost=cost,
        delta_epc_norm=epc,
        delta_h_norm=dh,
        delta_sp_rel=sp,
        g0=g0,
        g_by_hop=g_by_hop,
        gmin=gmin,
        b=b,
        F=g_by_hop.get(params.max_hops, g0),
    )
