"""Structural analytics in process (the ``sql`` backend's way): networkx Louvain, scipy Jaccard.

Also home of what both backends share after communities and Node Similarity are known: SimRank per
community, degree, modularity, PageRank, and assembling ``StructuralSignals``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import networkx as nx
import numpy as np
import scipy.sparse as sp

from ..store.port import GraphData
from .jaccard import jaccard_top_k
from .projection import (
    Projection,
    build_projection,
    modularity,
    pagerank,
    relabel_communities,
    round_significant,
    top_k_lists,
)
from .signals import StructuralSignals
from .simrank import DEFAULT_CAP, DEFAULT_DECAY, DEFAULT_ITERATIONS, simrank_top_k


@dataclass(frozen=True)
class AnalyticsOptions:
    """What to compute: seeds, top-k sizes and the SimRank bound (see ``ontology.analytics.simrank``)."""

    seed: int = 42
    jaccard_top_k: int = 10
    simrank_top_k: int = 10
    simrank_decay: float = DEFAULT_DECAY
    simrank_iterations: int = DEFAULT_ITERATIONS
    simrank_cap: int = DEFAULT_CAP
    with_pagerank: bool = True

    def as_parameters(self) -> dict[str, object]:
        return {
            "seed": self.seed,
            "jaccard_top_k": self.jaccard_top_k,
            "simrank_top_k": self.simrank_top_k,
            "simrank_decay": self.simrank_decay,
            "simrank_iterations": self.simrank_iterations,
            "simrank_cap": self.simrank_cap,
            "pagerank": self.with_pagerank,
        }


class StageTimer:
    """Wall-clock seconds per named stage (``with timer("louvain"): ...``)."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - start

    def total(self) -> float:
        return time.perf_counter() - self.started


def louvain_communities(weighted: sp.csr_array, *, seed: int) -> np.ndarray:
    """Louvain (networkx, weight = tie weight, resolution 1) over the projection; community number per
    node index, relabelled by smallest member."""
    n = weighted.shape[0]
    upper = sp.triu(weighted, k=1).tocoo()
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_weighted_edges_from(
        zip(upper.row.tolist(), upper.col.tolist(), upper.data.tolist(), strict=True)
    )
    return relabel_communities(nx.community.louvain_communities(graph, seed=seed, weight="weight"), n)


def compute_networkx(graph: GraphData, options: AnalyticsOptions) -> StructuralSignals:
    """All structural signals of ``graph`` in process (networkx Louvain, scipy Node Similarity)."""
    timer = StageTimer()
    with timer("projection"):
        projection = build_projection(graph)
    with timer("louvain"):
        community = louvain_communities(projection.weighted, seed=options.seed)
    with timer("jaccard"):
        jaccard = jaccard_top_k(projection.adjacency, top_k=options.jaccard_top_k)
    return finish_signals(
        projection, community, jaccard, options=options, timer=timer, computed_with="networkx"
    )


def finish_signals(
    projection: Projection,
    community: np.ndarray,
    jaccard: tuple[np.ndarray, np.ndarray, np.ndarray],
    *,
    options: AnalyticsOptions,
    timer: StageTimer,
    computed_with: str,
) -> StructuralSignals:
    """SimRank, modularity, degree and PageRank from the projection and the communities, then assemble
    ``StructuralSignals`` (scores rounded to 6 decimals, PageRank to 6 significant digits)."""
    node_ids = projection.node_ids
    with timer("simrank"):
        simrank = simrank_top_k(
            projection.adjacency,
            community,
            top_k=options.simrank_top_k,
            decay=options.simrank_decay,
            iterations=options.simrank_iterations,
            cap=options.simrank_cap,
            seed=options.seed,
        )
    with timer("modularity"):
        quality = round(modularity(projection.weighted, community), 6)
    pagerank_by_node: dict[str, float] | None = None
    if options.with_pagerank:
        with timer("pagerank"):
            ranks = round_significant(pagerank(projection.directed)).tolist()
            pagerank_by_node = dict(zip(node_ids, ranks, strict=True))
    with timer("assemble"):
        j_rows, j_cols, j_scores = jaccard
        s_rows, s_cols, s_scores = simrank
        jaccard_by_node = top_k_lists(node_ids, j_rows, j_cols, j_scores)
        simrank_by_node = top_k_lists(node_ids, s_rows, s_cols, s_scores)
        communities = dict(zip(node_ids, community.tolist(), strict=True))
        degree = dict(zip(node_ids, projection.degrees().tolist(), strict=True))
    return StructuralSignals(
        communities=communities,
        modularity=quality,
        jaccard=jaccard_by_node,
        simrank=simrank_by_node,
        degree=degree,
        pagerank=pagerank_by_node,
        computed_with=computed_with,
        seconds=round(timer.total(), 3),
        timings={stage: round(seconds, 3) for stage, seconds in timer.seconds.items()},
        parameters=options.as_parameters(),
    )
