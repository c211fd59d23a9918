"""The analysed graph: the undirected weighted projection of a release's ACTIVE nodes.

Both backends analyse the same object (the GDS backend builds the same projection in Neo4j with
``GDS_STATEMENTS["PROJECT"]``):

* **nodes** — the ACTIVE nodes, in node_id order (index ``i`` ↔ ``node_ids[i]``); DEPRECATED and
  REMOVED nodes and every edge touching one are left out.
* **edges** — every directed edge between two ACTIVE nodes becomes an undirected tie; the weight of a
  tie is the sum of ``|weight|`` over all edges joining the two nodes, whatever their direction or
  type. The absolute value: an inhibitory edge (negative weight) still ties two nodes structurally; the
  sign matters to traversal, not to community structure.
* **neighbours** of a node — the nodes it shares a tie with; its **degree** is their number.

Also here: modularity, the community relabelling both backends share, and PageRank.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from arg_platform.vocabulary import NodeStatus

from ..store.port import GraphData


@dataclass(frozen=True)
class Projection:
    """ACTIVE nodes (sorted ids), the symmetric tie-weight matrix, its 0/1 pattern, the directed matrix."""

    node_ids: tuple[str, ...]
    weighted: sp.csr_array  # symmetric: sum of |weight| between two nodes, both directions, all types
    adjacency: sp.csr_array  # symmetric 0/1 pattern of ``weighted`` (a zero-weight edge is still a tie)
    directed: sp.csr_array  # directed[s, t] = sum of |weight| of the edges s → t (PageRank)

    @property
    def size(self) -> int:
        return len(self.node_ids)

    def degrees(self) -> np.ndarray:
        return np.diff(self.adjacency.indptr)


def build_projection(graph: GraphData) -> Projection:
    """The projection of ``graph`` over its ACTIVE nodes (see the module docstring)."""
    active = sorted(node.node_id for node in graph.nodes if node.status == NodeStatus.ACTIVE)
    index = {node_id: i for i, node_id in enumerate(active)}
    n = len(active)
    rows: list[int] = []
    cols: list[int] = []
    weights: list[float] = []
    for edge in graph.edges:
        s, t = index.get(edge.source), index.get(edge.target)
        if s is None or t is None or s == t:
            continue
        rows.append(s)
        cols.append(t)
        weights.append(abs(float(edge.weight)))
    return projection_from_arrays(
        tuple(active),
        np.asarray(rows, dtype=np.int64),
        np.asarray(cols, dtype=np.int64),
        np.asarray(weights, dtype=np.float64),
        n=n,
    )


def projection_from_arrays(
    node_ids: tuple[str, ...], source: np.ndarray, target: np.ndarray, weight: np.ndarray, *, n: int
) -> Projection:
    directed = sp.csr_array(sp.coo_array((weight, (source, target)), shape=(n, n)))
    directed.sum_duplicates()
    both_r, both_c = np.concatenate([source, target]), np.concatenate([target, source])
    weighted = sp.csr_array(sp.coo_array((np.concatenate([weight, weight]), (both_r, both_c)), shape=(n, n)))
    weighted.sum_duplicates()
    ones = np.ones(both_r.size, dtype=np.float64)
    adjacency = sp.csr_array(sp.coo_array((ones, (both_r, both_c)), shape=(n, n)))
    adjacency.sum_duplicates()
    adjacency.data[:] = 1.0
    return Projection(node_ids=node_ids, weighted=weighted, adjacency=adjacency, directed=directed)


def relabel_communities(groups: Iterable[Iterable[int]], n: int) -> np.ndarray:
    """Community number per node index: communities numbered 0, 1, … in the order of their smallest
    member (node indices follow node_id order, so community 0 holds the smallest node_id)."""
    ordered = sorted((sorted(group) for group in groups if group), key=lambda members: members[0])
    out = np.full(n, -1, dtype=np.int64)
    for number, members in enumerate(ordered):
        out[np.asarray(members, dtype=np.int64)] = number
    if (out < 0).any():  # a node no community named (cannot happen with Louvain): its own community
        missing = np.flatnonzero(out < 0)
        return relabel_communities([*ordered, *([int(i)] for i in missing)], n)
    return out


def modularity(weighted: sp.csr_array, community: np.ndarray) -> float:
    """Newman modularity Q = Σ_c [ W_c / 2m − (K_c / 2m)² ] of a partition of an undirected weighted
    graph (W_c: weight of the ties inside c counted from both ends, K_c: total weighted degree of c,
    2m: total weighted degree) — the quantity Louvain maximizes; 0.0 for a graph without ties."""
    coo = weighted.tocoo()
    two_m = float(coo.data.sum())
    if two_m <= 0.0:
        return 0.0
    communities = int(community.max()) + 1 if community.size else 0
    inside = community[coo.row] == community[coo.col]
    w_c = np.bincount(community[coo.row[inside]], weights=coo.data[inside], minlength=communities)
    k_c = np.bincount(community, weights=np.asarray(weighted.sum(axis=1)).ravel(), minlength=communities)
    return float((w_c / two_m).sum() - ((k_c / two_m) ** 2).sum())


def pagerank(
    directed: sp.csr_array, *, damping: float = 0.85, tol: float = 1e-10, max_iter: int = 100
) -> np.ndarray:
    """Weighted PageRank by power iteration on the directed ACTIVE graph (weights |w|); a node without
    out-weight spreads its rank evenly over all nodes. Sums to 1."""
    n = directed.shape[0]
    if n == 0:
        return np.zeros(0)
    out_weight = np.asarray(directed.sum(axis=1)).ravel()
    dangling = out_weight <= 0
    inv = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out_weight))
    transition_t = sp.csr_array(directed.T @ sp.diags_array(inv))  # column-stochastic where not dangling
    rank = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        spread = damping * (transition_t @ rank + rank[dangling].sum() / n) + (1.0 - damping) / n
        done = np.abs(spread - rank).sum() < tol
        rank = spread
        if done:
            break
    return rank / rank.sum()


def round_significant(values: np.ndarray, digits: int = 6) -> np.ndarray:
    """Round to ``digits`` significant digits (compact, stable JSON for small numbers like PageRank)."""
    out = np.asarray(values, dtype=np.float64).copy()
    nonzero = out != 0
    exponent = np.floor(np.log10(np.abs(out[nonzero])))
    scale = 10.0 ** (digits - 1 - exponent)
    out[nonzero] = np.round(out[nonzero] * scale) / scale
    return out


def top_k_lists(
    node_ids: Sequence[str], rows: np.ndarray, cols: np.ndarray, scores: np.ndarray
) -> dict[str, tuple[tuple[str, float], ...]]:
    """Per node id, its (other node id, score) pairs in the order given (already ranked per row);
    every node gets an entry, empty when it has none."""
    out: dict[str, tuple[tuple[str, float], ...]] = {}
    order = np.argsort(rows, kind="stable")
    rows, cols, scores = rows[order], cols[order], scores[order]
    bounds = np.searchsorted(rows, np.arange(len(node_ids) + 1))
    col_list, score_list = cols.tolist(), scores.tolist()
    for i, node_id in enumerate(node_ids):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        out[node_id] = tuple((node_ids[col_list[j]], score_list[j]) for j in range(lo, hi))
    return out


def rank_rows(rows: np.ndarray, cols: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best entries of each row: score descending, then column (node_id) ascending;
    the result lists them row by row in that order."""
    order = np.lexsort((cols, -scores, rows))
    sorted_rows = rows[order]
    starts = np.searchsorted(sorted_rows, sorted_rows, side="left")
    rank = np.arange(sorted_rows.size) - starts
    return order[rank < k]
