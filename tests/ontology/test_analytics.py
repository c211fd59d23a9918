"""Structural analytics: Louvain communities, Node Similarity, SimRank, JSON form, GDS statements."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from bench.synthetic import generate_graph
from ontology.analytics import (
    compute_structural_signals,
    default_backend,
    signals_from_json,
    signals_to_json,
)
from ontology.analytics.gds_backend import GDS_STATEMENTS, _run
from ontology.analytics.projection import build_projection, modularity
from ontology.analytics.simrank import simrank_blocks, simrank_matrix
from ontology.store.port import EdgeData, GraphData, NodeData

REPO = Path(__file__).resolve().parents[2]


def _graph(
    edges: list[tuple[str, str]], *, extra: tuple[str, ...] = (), deprecated: tuple[str, ...] = ()
) -> GraphData:
    ids = sorted({n for edge in edges for n in edge} | set(extra) | set(deprecated))
    nodes = tuple(
        NodeData(n, "Info", n, "", status="DEPRECATED" if n in deprecated else "ACTIVE") for n in ids
    )
    return GraphData(nodes=nodes, edges=tuple(EdgeData(s, t, "RELATED_TO", 1.0) for s, t in edges))


def _two_cliques() -> GraphData:
    """a0…a4 and b0…b4, each a 5-clique, joined by the single edge a0 → b0."""
    edges = [(f"{c}{i}", f"{c}{j}") for c in "ab" for i, j in itertools.combinations(range(5), 2)]
    return _graph([*edges, ("a0", "b0")])


def _twins() -> GraphData:
    """x and y point at exactly p, q, r (structurally equivalent); z at p, q; w at r."""
    return _graph(
        [
            ("x", "p"),
            ("x", "q"),
            ("x", "r"),
            ("y", "p"),
            ("y", "q"),
            ("y", "r"),
            ("z", "p"),
            ("z", "q"),
            ("w", "r"),
        ]
    )


def _twins_in_a_community() -> GraphData:
    """A 4-clique p, q, r, s with twins x, y (both → p, q, r) and z (→ p, s); a 5-clique b0…b4 apart."""
    clique = [(u, v) for u, v in itertools.combinations("pqrs", 2)]
    others = [(f"b{i}", f"b{j}") for i, j in itertools.combinations(range(5), 2)]
    twins = [(t, u) for t in "xy" for u in "pqr"]
    return _graph([*clique, *others, *twins, ("z", "p"), ("z", "s"), ("s", "b0")])


def test_louvain_finds_the_two_obvious_communities() -> None:
    signals = compute_structural_signals(_two_cliques(), seed=1)

    assert signals.communities == {**{f"a{i}": 0 for i in range(5)}, **{f"b{i}": 1 for i in range(5)}}
    assert signals.community_members(1) == ("b0", "b1", "b2", "b3", "b4")
    graph = nx.Graph()
    graph.add_edges_from((e.source, e.target) for e in _two_cliques().edges)
    expected = nx.community.modularity(graph, [{f"a{i}" for i in range(5)}, {f"b{i}" for i in range(5)}])
    assert signals.modularity == pytest.approx(expected, abs=1e-6)
    assert signals.degree["a0"] == 5 and signals.degree["a1"] == 4
    assert signals.computed_with == "networkx"


def test_modularity_matches_networkx_on_weighted_graph() -> None:
    graph = nx.karate_club_graph()
    parts = nx.community.louvain_communities(graph, seed=3, weight="weight")
    weighted = sp.csr_array(nx.to_scipy_sparse_array(graph, weight="weight"))
    community = np.zeros(graph.number_of_nodes(), dtype=np.int64)
    for number, members in enumerate(parts):
        community[list(members)] = number

    assert modularity(weighted, community) == pytest.approx(
        nx.community.modularity(graph, parts, weight="weight"), abs=1e-9
    )


def test_node_similarity_is_jaccard_of_neighbour_sets() -> None:
    signals = compute_structural_signals(_twins())

    assert signals.jaccard["x"][0] == ("y", 1.0)
    assert dict(signals.jaccard["x"]) == {
        "y": 1.0,
        "z": pytest.approx(0.666667),
        "w": pytest.approx(0.333333),
    }
    assert dict(signals.jaccard["p"]) == {"q": 1.0, "r": 0.5}
    assert signals.jaccard["w"] == (("x", 0.333333), ("y", 0.333333))


def test_top_k_lists_are_bounded_and_ranked() -> None:
    graph = generate_graph(nodes=400, seed=2).graph
    signals = compute_structural_signals(graph, jaccard_top_k=3, simrank_top_k=2)

    assert max(len(v) for v in signals.jaccard.values()) == 3
    assert max(len(v) for v in signals.simrank.values()) == 2
    for ranked in [*signals.jaccard.values(), *signals.simrank.values()]:
        keys = [(-score, other) for other, score in ranked]
        assert keys == sorted(keys)
        assert all(score > 0 for _, score in ranked)


def test_simrank_is_symmetric_excludes_self_and_ranks_twins_first() -> None:
    signals = compute_structural_signals(_twins_in_a_community(), simrank_top_k=20)

    assert signals.communities["x"] == signals.communities["y"] == signals.communities["p"]
    assert signals.simrank["x"][0][0] == "y" and signals.simrank["y"][0][0] == "x"
    for node, ranked in signals.simrank.items():
        assert node not in dict(ranked)
        for other, score in ranked:
            assert dict(signals.simrank[other])[node] == score
    assert dict(signals.simrank["x"])["y"] > dict(signals.simrank["x"])["z"]


def test_simrank_matrix_converges_to_networkx_simrank() -> None:
    graph = nx.Graph(nx.karate_club_graph().edges())
    reference = nx.simrank_similarity(graph, importance_factor=0.8, max_iterations=1000, tolerance=1e-10)
    expected = np.array([[reference[u][v] for v in graph] for u in graph])
    adjacency = sp.csr_array(nx.to_scipy_sparse_array(graph, weight=None))

    scores = simrank_matrix(adjacency, decay=0.8, iterations=100)

    assert np.abs(scores - expected).max() < 1e-5
    assert np.array_equal(scores, scores.T)
    assert np.all(np.diag(scores) == 1.0)


def test_large_communities_are_cut_into_blocks_within_the_cap() -> None:
    graph = generate_graph(nodes=600, seed=4, clusters=2).graph
    signals = compute_structural_signals(graph, simrank_cap=50)
    projection = build_projection(graph)
    community = np.array([signals.communities[n] for n in projection.node_ids])

    blocks = simrank_blocks(projection.adjacency, community, cap=50, seed=42)

    assert max(block.size for block in blocks) <= 50
    assert np.array_equal(np.sort(np.concatenate(blocks)), np.arange(600))
    block_of = {projection.node_ids[i]: b for b, block in enumerate(blocks) for i in block.tolist()}
    for node, ranked in signals.simrank.items():
        assert all(block_of[other] == block_of[node] for other, _ in ranked)
        assert all(signals.communities[other] == signals.communities[node] for other, _ in ranked)


def test_only_active_nodes_are_analysed_and_weights_are_absolute() -> None:
    graph = _graph([("a", "b"), ("b", "c"), ("c", "old")], deprecated=("old",))
    graph = GraphData(nodes=graph.nodes, edges=(*graph.edges, EdgeData("b", "a", "LEADS_TO", -0.3)))
    projection = build_projection(graph)
    signals = compute_structural_signals(graph)

    assert projection.node_ids == ("a", "b", "c")
    assert projection.weighted[0, 1] == pytest.approx(1.3)
    assert set(signals.communities) == set(signals.jaccard) == set(signals.simrank) == {"a", "b", "c"}
    assert signals.degree == {"a": 1, "b": 2, "c": 1}
    assert signals.pagerank is not None and sum(signals.pagerank.values()) == pytest.approx(1.0, abs=1e-5)


def test_isolated_and_empty_graphs() -> None:
    lonely = compute_structural_signals(_graph([], extra=("n1", "n2")))
    empty = compute_structural_signals(GraphData())

    assert lonely.communities == {"n1": 0, "n2": 1}
    assert lonely.jaccard == {"n1": (), "n2": ()} and lonely.simrank == {"n1": (), "n2": ()}
    assert lonely.modularity == 0.0
    assert empty.communities == {} and empty.pagerank == {}


def test_json_round_trip_is_exact_compact_and_deterministic() -> None:
    signals = compute_structural_signals(generate_graph(nodes=300, seed=5).graph)
    text = signals_to_json(signals)

    assert signals_from_json(text) == signals
    assert signals_to_json(signals_from_json(text)) == text
    assert ", " not in text and ": " not in text
    no_pagerank = compute_structural_signals(_twins(), pagerank=False)
    assert signals_from_json(signals_to_json(no_pagerank)) == no_pagerank
    with pytest.raises(ValueError, match="arg-structural-signals/1"):
        signals_from_json('{"format": "other"}')


def test_same_graph_and_seed_give_the_same_signals() -> None:
    graph = generate_graph(nodes=500, seed=8).graph
    first, second = compute_structural_signals(graph, seed=3), compute_structural_signals(graph, seed=3)

    for name in ("communities", "modularity", "jaccard", "simrank", "degree", "pagerank", "parameters"):
        assert getattr(first, name) == getattr(second, name)


def test_two_thousand_node_synthetic_run() -> None:
    graph = generate_graph(nodes=2000, seed=7).graph
    signals = compute_structural_signals(graph, seed=7)

    assert set(signals.communities) == {n.node_id for n in graph.nodes}
    assert 2 <= signals.community_count < 200
    assert signals.modularity > 0.5
    assert sum(bool(v) for v in signals.jaccard.values()) > 1900
    assert sum(bool(v) for v in signals.simrank.values()) > 1900
    assert set(signals.timings) >= {"projection", "louvain", "jaccard", "simrank"}
    assert signals.seconds > 0 and signals.parameters["simrank_cap"] == 2000


def test_default_backend_follows_the_graph_store(settings: Any) -> None:
    settings.GRAPH_BACKEND = "sql"
    assert default_backend() == "networkx"
    settings.GRAPH_BACKEND = "neo4j"
    assert default_backend() == "gds"


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown analytics backend"):
        compute_structural_signals(GraphData(), backend="igraph")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="project_id"):
        compute_structural_signals(GraphData(), backend="gds")
    with pytest.raises(ValueError, match="simrank_decay"):
        compute_structural_signals(GraphData(), simrank_decay=1.0)


# --- the GDS backend ---------------------------------------------------------------------------


def _cypher_lint() -> Any:
    spec = importlib.util.spec_from_file_location(
        "cypher_lint_run", REPO / "tools" / "cypher-lint" / "run.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gds_statements_pass_the_cypher_linter() -> None:
    from ontology.store import cypher

    payload = {
        "labels": list(cypher.LABELS),
        "relationshipTypes": [cypher.EDGE_REL_TYPE],
        "statements": [
            {"name": name, "query": query, "params": list(params)}
            for name, (query, params) in sorted(GDS_STATEMENTS.items())
        ],
    }
    result = _cypher_lint().lint(payload, strict=True)

    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(GDS_STATEMENTS)} statement(s), 0 with errors" in result.stdout


class RecordingGds:
    """A stand-in for the ``GraphDataScience`` client: answers each statement with a fixed frame."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.closed = False

    def run_cypher(self, query: str, params: dict[str, Any]) -> pd.DataFrame:
        name = next(n for n, (q, _) in GDS_STATEMENTS.items() if q == query)
        self.sent.append((name, params))
        answer = self.answers.get(name, pd.DataFrame())
        if isinstance(answer, Exception):
            raise answer
        return answer

    def close(self) -> None:
        self.closed = True


def test_gds_backend_maps_streams_and_drops_the_projection() -> None:
    client = RecordingGds(
        {
            "GDS_LOUVAIN_STREAM": pd.DataFrame(
                {"node_id": ["x", "y", "z", "w", "p", "q", "r"], "community_id": [7, 7, 7, 3, 5, 5, 3]}
            ),
            "GDS_NODE_SIMILARITY_STREAM": pd.DataFrame(
                {"source": ["x", "x", "p"], "target": ["z", "y", "q"], "similarity": [0.6666666, 1.0, 1.0]}
            ),
        }
    )
    signals = compute_structural_signals(_twins(), backend="gds", project_id=9, gds=client, jaccard_top_k=5)

    assert [name for name, _ in client.sent] == [
        "GDS_PROJECT_ACTIVE",
        "GDS_LOUVAIN_STREAM",
        "GDS_NODE_SIMILARITY_STREAM",
        "GDS_DROP_GRAPH",
    ]
    graph_name = client.sent[0][1]["graph_name"]
    assert client.sent[0][1] == {"project_id": 9, "graph_name": graph_name}
    assert client.sent[2][1] == {"graph_name": graph_name, "top_k": 5}
    assert client.sent[3][1] == {"graph_name": graph_name}
    assert signals.communities == {"p": 0, "q": 0, "r": 1, "w": 1, "x": 2, "y": 2, "z": 2}
    assert signals.jaccard["x"] == (("y", 1.0), ("z", 0.666667))
    assert signals.computed_with == "gds" and not client.closed


def test_gds_backend_drops_the_projection_when_a_stream_fails() -> None:
    client = RecordingGds({"GDS_LOUVAIN_STREAM": RuntimeError("GDS is out of memory")})

    with pytest.raises(RuntimeError, match="out of memory"):
        compute_structural_signals(_twins(), backend="gds", project_id=9, gds=client)
    assert [name for name, _ in client.sent] == ["GDS_PROJECT_ACTIVE", "GDS_LOUVAIN_STREAM", "GDS_DROP_GRAPH"]


def test_gds_statements_refuse_undeclared_parameters() -> None:
    client = RecordingGds({})

    with pytest.raises(TypeError, match="differ from declared"):
        _run(client, "GDS_DROP_GRAPH", graph_name="g", project_id=1)
    assert client.sent == []


@pytest.mark.neo4j
@pytest.mark.django_db
def test_gds_backend_matches_networkx_on_neo4j(project: Any, settings: Any) -> None:
    """Louvain and Node Similarity by GDS on a real server, through the store's own connection and
    through the ``graphdatascience`` client, equal the networkx backend's; so does the gds backend
    above its Node Similarity limit, which takes Node Similarity from the sparse product."""
    from graphdatascience import GraphDataScience

    from tests.neo4j_server import neo4j_connection, neo4j_store

    store = neo4j_store()
    connection = neo4j_connection()
    client = GraphDataScience(
        connection.uri, auth=(connection.user, connection.password), database=connection.database
    )
    graph = _graph([*[(e.source, e.target) for e in _two_cliques().edges], ("x", "a1")], deprecated=("x",))
    try:
        store.init_schema()
        store.replace_graph(project.pk, graph)
        through_store = compute_structural_signals(graph, backend="gds", project_id=project.pk, gds=store)
        through_client = compute_structural_signals(graph, backend="gds", project_id=project.pk, gds=client)
        settings.GDS_NODE_SIMILARITY_MAX_NODES = len(graph.nodes) - 2  # fewer than the ACTIVE nodes
        over_the_limit = compute_structural_signals(graph, backend="gds", project_id=project.pk, gds=store)
        projections = client.graph.list()
    finally:
        store.replace_graph(project.pk, GraphData())
        store.close()
        client.close()
    in_process = compute_structural_signals(graph)

    assert [s.computed_with for s in (through_store, through_client, over_the_limit)] == [
        "gds",
        "gds",
        "gds+sparse-jaccard",
    ]
    for with_gds in (through_store, through_client, over_the_limit):
        assert with_gds.communities == in_process.communities
        assert with_gds.jaccard == in_process.jaccard
        assert with_gds.simrank == in_process.simrank and with_gds.degree == in_process.degree
    assert len(projections) == 0  # every projection was dropped


@pytest.mark.neo4j
@pytest.mark.django_db
def test_gds_inside_a_unit_of_work_sees_the_units_uncommitted_writes(project: Any) -> None:
    """A publication inside a unit of work (a proposal's apply) analyses the graph it is about to commit."""
    from tests.neo4j_server import neo4j_store

    store = neo4j_store()
    before = _two_cliques()
    new_clique = [(f"c{i}", f"c{j}") for i, j in itertools.combinations(range(4), 2)]
    after = _graph([*[(e.source, e.target) for e in before.edges], *new_clique, ("c0", "a0")])
    try:
        store.replace_graph(project.pk, before)
        with store.unit_of_work():
            store.replace_graph(project.pk, after)
            inside = compute_structural_signals(after, backend="gds", project_id=project.pk, gds=store)
    finally:
        store.replace_graph(project.pk, GraphData())
        store.close()

    assert set(inside.communities) == {n.node_id for n in after.nodes}  # the c-clique is uncommitted
    assert inside.communities == compute_structural_signals(after).communities
