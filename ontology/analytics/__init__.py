"""Structural analytics of a release: communities, similarity and centrality of its graph.

``compute_structural_signals(graph)`` turns a graph into ``StructuralSignals``: Louvain communities
and their modularity, Node Similarity (Jaccard, top-k per node), SimRank (per community, top-k per
node), degree and PageRank — over the ACTIVE nodes' undirected weighted projection
(``ontology.analytics.projection``). Two backends, same outputs:

* ``networkx`` (the ``sql`` store's): networkx Louvain, scipy sparse Node Similarity;
* ``gds`` (the ``neo4j`` store's): GDS Louvain and Node Similarity through the ``graphdatascience``
  client on the project's graph in Neo4j (``project_id`` required).

SimRank is always computed in Python on sparse matrices (``ontology.analytics.simrank``): GDS has none.
``signals_to_json`` / ``signals_from_json`` give the compact deterministic form a release stores.
"""

from __future__ import annotations

from typing import Any, Literal

from ..store.port import GraphData
from .networkx_backend import AnalyticsOptions, compute_networkx
from .signals import StructuralSignals, signals_from_json, signals_to_json
from .simrank import DEFAULT_CAP, DEFAULT_DECAY, DEFAULT_ITERATIONS

Backend = Literal["networkx", "gds"]
BACKENDS: frozenset[str] = frozenset({"networkx", "gds"})


def default_backend() -> Backend:
    """The analytics backend that goes with the configured graph store: ``gds`` for ``neo4j``,
    ``networkx`` for ``sql``."""
    from django.conf import settings

    return "gds" if settings.GRAPH_BACKEND == "neo4j" else "networkx"


def compute_structural_signals(
    graph: GraphData,
    *,
    backend: Backend = "networkx",
    seed: int = 42,
    simrank_top_k: int = 10,
    jaccard_top_k: int = 10,
    simrank_decay: float = DEFAULT_DECAY,
    simrank_iterations: int = DEFAULT_ITERATIONS,
    simrank_cap: int = DEFAULT_CAP,
    pagerank: bool = True,
    project_id: int | None = None,
    gds: Any | None = None,
) -> StructuralSignals:
    """The structural signals of ``graph``'s ACTIVE nodes.

    ``seed`` seeds Louvain (networkx) and the splitting of communities larger than ``simrank_cap``;
    ``backend="gds"`` needs ``project_id`` (whose Neo4j graph must be ``graph``) and uses ``gds`` (a
    ``GraphDataScience`` client) or one built from settings.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown analytics backend {backend!r}: use 'networkx' or 'gds'")
    if simrank_cap < 2 or simrank_iterations < 0 or not 0.0 < simrank_decay < 1.0:
        raise ValueError("simrank_cap must be ≥ 2, simrank_iterations ≥ 0 and simrank_decay in (0, 1)")
    options = AnalyticsOptions(
        seed=seed,
        jaccard_top_k=jaccard_top_k,
        simrank_top_k=simrank_top_k,
        simrank_decay=simrank_decay,
        simrank_iterations=simrank_iterations,
        simrank_cap=simrank_cap,
        with_pagerank=pagerank,
    )
    if backend == "gds":
        if project_id is None:
            raise ValueError("the gds analytics backend needs the project_id of the graph in Neo4j")
        from .gds_backend import compute_gds

        return compute_gds(graph, options, project_id=project_id, gds=gds)
    return compute_networkx(graph, options)


__all__ = [
    "AnalyticsOptions",
    "StructuralSignals",
    "compute_structural_signals",
    "default_backend",
    "signals_from_json",
    "signals_to_json",
]
