"""Structural analytics through Neo4j Graph Data Science (the ``neo4j`` backend's way).

An in-memory GDS graph is projected from the project's ACTIVE ``:OntologyNode``s with a Cypher
projection (``gds.graph.project``), Louvain (``gds.louvain.stream``) and Node Similarity
(``gds.nodeSimilarity.stream``, topK) stream their results, and the projection is dropped whatever
happens. The statements go through a *Cypher runner*: by default the ``neo4j`` graph store itself
(``Neo4jGraphStore.run_cypher``), so that inside a unit of work — a proposal applied and published —
the projection sees the unit's own, uncommitted writes; or a ``graphdatascience`` client
(``gds_client_from_settings``), whose session sees committed data only. SimRank (GDS has none),
modularity, degree and PageRank are then computed in Python exactly as by the networkx backend, from
the same projection of the ``GraphData`` handed in — which must be the graph stored in Neo4j for
``project_id`` (a node that GDS returns but the ``GraphData`` lacks is refused).

The GDS projection equals ``projection.build_projection``: one undirected relationship per pair of
ACTIVE nodes joined by any edge, weighted by the sum of ``|weight|``. GDS Louvain has no random seed;
it runs with concurrency 1, which makes it deterministic (``seed`` still drives the SimRank splits).

GDS Node Similarity compares every node that has a neighbour with every other such node, so its time
grows with the square of the node count (docs/benchmarks.md: 11–15 s at 10k nodes, 18 min at 100k, where
the sparse product of ``ontology.analytics.jaccard`` — the same scores, computed only for the pairs
that share a neighbour — takes 0.75–1 s and 13–17 s). Above ``settings.GDS_NODE_SIMILARITY_MAX_NODES``
projected nodes, Node Similarity is therefore the sparse product on the same projection, and the
signals say so (``computed_with`` "gds+sparse-jaccard").

Every Cypher statement sent is a named entry of ``GDS_STATEMENTS`` (name → (query, declared
parameters)) and goes through ``_run``, which refuses other parameters — so CI lints them with Neo4j's
parser next to ``ontology.store.cypher.STATEMENTS``.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import numpy as np
from django.conf import settings

from ..store import get_graph_store
from ..store.port import GraphData
from .jaccard import jaccard_top_k
from .networkx_backend import AnalyticsOptions, StageTimer, finish_signals
from .projection import build_projection, rank_rows, relabel_communities
from .signals import StructuralSignals

# ``t`` carries no label, so the planner can only expand from ``s`` (a plan seeking ``t`` by index,
# cached while the database was small, scanned every node of the project for each ``s``).
# The generation is the head's (``ontology.store.cypher``), read in the projecting statement itself.
GDS_PROJECT_ACTIVE = (
    "OPTIONAL MATCH (h:ProjectGraph {project_id: $project_id}) "
    "WITH coalesce(h.generation, 0) AS generation "
    "MATCH (s:OntologyNode {project_id: $project_id, generation: generation, status: 'ACTIVE'}) "
    "OPTIONAL MATCH (s)-[r:EDGE]-(t) "
    "WHERE t.project_id = $project_id AND t.status = 'ACTIVE' AND s.node_id < t.node_id "
    "WITH s, t, sum(abs(r.weight)) AS weight "
    "RETURN gds.graph.project($graph_name, s, t, {relationshipProperties: {weight: weight}}, "
    "{undirectedRelationshipTypes: ['*']})"
)
GDS_LOUVAIN_STREAM = (
    "CALL gds.louvain.stream($graph_name, {relationshipWeightProperty: 'weight', concurrency: 1}) "
    "YIELD nodeId, communityId "
    "RETURN gds.util.asNode(nodeId).node_id AS node_id, communityId AS community_id"
)
GDS_NODE_SIMILARITY_STREAM = (
    "CALL gds.nodeSimilarity.stream($graph_name, {topK: $top_k, degreeCutoff: 1}) "
    "YIELD node1, node2, similarity "
    "RETURN gds.util.asNode(node1).node_id AS source, gds.util.asNode(node2).node_id AS target, "
    "similarity"
)
GDS_DROP_GRAPH = "CALL gds.graph.drop($graph_name, false) YIELD graphName RETURN graphName"

GDS_STATEMENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "GDS_PROJECT_ACTIVE": (GDS_PROJECT_ACTIVE, ("project_id", "graph_name")),
    "GDS_LOUVAIN_STREAM": (GDS_LOUVAIN_STREAM, ("graph_name",)),
    "GDS_NODE_SIMILARITY_STREAM": (GDS_NODE_SIMILARITY_STREAM, ("graph_name", "top_k")),
    "GDS_DROP_GRAPH": (GDS_DROP_GRAPH, ("graph_name",)),
}


def _run(gds: Any, name: str, **params: Any) -> Any:
    """Send the named statement with ``gds.run_cypher``; its parameters must be the declared ones."""
    query, declared = GDS_STATEMENTS[name]
    if set(params) != set(declared):
        raise TypeError(f"cypher {name}: parameters {sorted(params)} differ from declared {sorted(declared)}")
    return gds.run_cypher(query, params)


def gds_client_from_settings() -> Any:
    """A ``GraphDataScience`` client on the configured Neo4j (``NEO4J_URI`` …)."""
    from graphdatascience import GraphDataScience

    if not settings.NEO4J_URI:
        raise ValueError("the gds analytics backend needs NEO4J_URI")
    return GraphDataScience(
        settings.NEO4J_URI,
        auth=(settings.NEO4J_USER, settings.NEO4J_PASSWORD),
        database=settings.NEO4J_DATABASE,
    )


def _store_runner() -> Any:
    """The configured graph store as a Cypher runner (it must be the ``neo4j`` one)."""
    store = get_graph_store()
    if not hasattr(store, "run_cypher"):
        raise ValueError(f"the gds analytics backend needs the neo4j graph store, not {store.backend!r}")
    return store


def _indices(index: dict[str, int], node_ids: list[str], project_id: int) -> np.ndarray:
    try:
        return np.asarray([index[node_id] for node_id in node_ids], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(
            f"GDS returned node {exc.args[0]!r} that the analysed graph of project {project_id} lacks: "
            "the GraphData differs from the graph stored in Neo4j"
        ) from None


def _node_similarity(
    client: Any, graph_name: str, index: dict[str, int], top_k: int, project_id: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    frame = _run(client, "GDS_NODE_SIMILARITY_STREAM", graph_name=graph_name, top_k=top_k)
    rows = _indices(index, list(frame["source"]), project_id)
    cols = _indices(index, list(frame["target"]), project_id)
    scores = np.round(np.asarray(list(frame["similarity"]), dtype=np.float64), 6)
    best = rank_rows(rows, cols, scores, top_k)
    return rows[best], cols[best], scores[best]


def compute_gds(
    graph: GraphData, options: AnalyticsOptions, *, project_id: int, gds: Any | None = None
) -> StructuralSignals:
    """All structural signals of ``graph`` (= the Neo4j graph of ``project_id``), Louvain and Node
    Similarity by GDS. ``gds`` answers ``run_cypher(query, params)`` with a ``DataFrame``: a
    ``GraphDataScience`` client, or by default the configured ``neo4j`` graph store."""
    timer = StageTimer()
    with timer("projection"):
        projection = build_projection(graph)
    index = {node_id: i for i, node_id in enumerate(projection.node_ids)}
    n = projection.size
    community = np.arange(n, dtype=np.int64)
    computed_with = "gds"
    jaccard: tuple[np.ndarray, np.ndarray, np.ndarray] = (
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        np.zeros(0),
    )
    if n:
        client = _store_runner() if gds is None else gds
        graph_name = f"arg-analytics-{project_id}-{uuid.uuid4().hex[:12]}"
        try:
            with timer("gds_projection"):
                _run(client, "GDS_PROJECT_ACTIVE", project_id=project_id, graph_name=graph_name)
            with timer("louvain"):
                frame = _run(client, "GDS_LOUVAIN_STREAM", graph_name=graph_name)
                members = _indices(index, list(frame["node_id"]), project_id)
                groups: dict[int, list[int]] = {}
                for i, c in zip(members.tolist(), [int(x) for x in frame["community_id"]], strict=True):
                    groups.setdefault(c, []).append(i)
                community = relabel_communities(groups.values(), n)
            with timer("jaccard"):
                if n > settings.GDS_NODE_SIMILARITY_MAX_NODES:
                    computed_with = "gds+sparse-jaccard"
                    jaccard = jaccard_top_k(projection.adjacency, top_k=options.jaccard_top_k)
                elif options.jaccard_top_k > 0:  # GDS refuses topK 0; nothing to keep anyway
                    jaccard = _node_similarity(client, graph_name, index, options.jaccard_top_k, project_id)
        except BaseException:
            # The projection is dropped whatever happened; a failed drop must not hide the failure.
            with contextlib.suppress(Exception):
                _run(client, "GDS_DROP_GRAPH", graph_name=graph_name)
            raise
        _run(client, "GDS_DROP_GRAPH", graph_name=graph_name)
    return finish_signals(
        projection, community, jaccard, options=options, timer=timer, computed_with=computed_with
    )
