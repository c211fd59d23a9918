"""The seeded synthetic graph generator: deterministic, well-formed, valid, importable."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from arg_platform.vocabulary import EdgeType, NodeType
from bench.synthetic import generate_graph, synthetic_pack
from ontology.validator import validate_graph


def test_same_seed_gives_identical_graph_and_embeddings() -> None:
    first = generate_graph(nodes=600, seed=3, embedding_dim=16)
    second = generate_graph(nodes=600, seed=3, embedding_dim=16)

    assert first == second
    assert first.graph == second.graph
    assert first.embeddings is not None and second.embeddings is not None
    assert np.array_equal(first.embeddings, second.embeddings)


def test_another_seed_gives_another_graph() -> None:
    assert generate_graph(nodes=600, seed=3).graph != generate_graph(nodes=600, seed=4).graph


def test_sizes_follow_the_arguments() -> None:
    generated = generate_graph(nodes=1000, seed=1, clusters=5, edges_per_node=4.0)

    assert len(generated.graph.nodes) == 1000
    assert len(generated.graph.edges) == 4000
    assert [key for key, _ in generated.clusters] == ["c000", "c001", "c002", "c003", "c004"]
    assert len({label["id"] for label in generated.labels}) == len(generated.labels)
    assert generated.labels[0]["id"] == "L00001"
    assert [n.node_id for n in generated.graph.nodes[:2]] == ["N000000", "N000001"]


def test_nodes_cover_every_type_with_one_out_of_scope() -> None:
    nodes = generate_graph(nodes=2000, seed=5).graph.nodes
    types = Counter(node.type for node in nodes)

    assert set(types) == {t.value for t in NodeType}
    assert types[NodeType.OUT_OF_SCOPE.value] == 1
    mostly = sum(types[t] for t in ("Info", "FAQ", "InfoStable", "Action"))
    assert mostly / len(nodes) > 0.6
    for node in nodes:
        if node.type in ("Action", "DirectAction"):
            assert node.handler.startswith("python:synthetic.")


def test_edges_have_no_self_loops_duplicates_and_weights_in_unit_interval() -> None:
    edges = generate_graph(nodes=1500, seed=9).graph.edges
    keys = [edge.key for edge in edges]
    pairs = [(edge.source, edge.target) for edge in edges]

    assert all(edge.source != edge.target for edge in edges)
    assert len(set(keys)) == len(keys)
    assert len(set(pairs)) == len(pairs)
    assert keys == sorted(keys)
    assert all(0.0 <= edge.weight <= 1.0 for edge in edges)
    assert {edge.type for edge in edges} == {t.value for t in EdgeType}


def test_hubs_collect_many_in_edges() -> None:
    generated = generate_graph(nodes=3000, seed=2, hub_fraction=0.01)
    in_degree = Counter(edge.target for edge in generated.graph.edges)
    mean = len(generated.graph.edges) / len(generated.graph.nodes)

    assert len(generated.hubs) == 30
    hub_mean = sum(in_degree[hub] for hub in generated.hubs) / len(generated.hubs)
    assert hub_mean > 5 * mean


def test_attachments_labels_and_locality() -> None:
    generated = generate_graph(nodes=1200, seed=8)
    label_cluster = {label["id"]: label["cluster"] for label in generated.labels}
    label_name = {label["id"]: label["name"] for label in generated.labels}
    cluster_of = {}
    for node in generated.graph.nodes:
        assert 1 <= len(node.labels) <= 2
        assert len(set(node.labels)) == len(node.labels)
        assert node.clusters == (label_cluster[node.labels[0]],)
        assert {label_cluster[label] for label in node.labels} == set(node.clusters)
        assert label_name[node.labels[0]].split()[0].lower() in node.title.split()
        cluster_of[node.node_id] = node.clusters[0]
    inside = sum(cluster_of[e.source] == cluster_of[e.target] for e in generated.graph.edges)
    assert inside / len(generated.graph.edges) > 0.75


def test_label_trees_are_at_least_three_levels_deep() -> None:
    labels = {label["id"]: label for label in generate_graph(nodes=500, seed=4).labels}

    def depth(label_id: str) -> int:
        parent = labels[label_id]["parent"]
        return 1 if parent is None else 1 + depth(parent)

    deepest: dict[str, int] = {}
    for label_id, label in labels.items():
        if label["parent"] is not None:
            assert labels[label["parent"]]["cluster"] == label["cluster"]
        assert len(label["examples"]) == 3
        deepest[label["cluster"]] = max(deepest.get(label["cluster"], 0), depth(label_id))
    assert min(deepest.values()) >= 3


def test_embeddings_are_unit_float32_and_cluster_shaped() -> None:
    generated = generate_graph(nodes=800, seed=6, embedding_dim=32)
    vectors = generated.embeddings
    assert vectors is not None
    assert vectors.shape == (800, 32) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    primary = np.array([node.labels[0] for node in generated.graph.nodes])
    cluster = np.array([node.clusters[0] for node in generated.graph.nodes])
    cosine = vectors @ vectors.T
    same_label = (primary[:, None] == primary[None, :]) & ~np.eye(800, dtype=bool)
    other_cluster = cluster[:, None] != cluster[None, :]
    assert cosine[same_label].mean() > 0.5
    assert abs(cosine[other_cluster].mean()) < 0.1
    assert generate_graph(nodes=800, seed=6).embeddings is None


def test_generated_graph_passes_the_graph_validator() -> None:
    generated = generate_graph(nodes=700, seed=11)
    labels = {label["id"]: label["status"] for label in generated.labels}

    assert validate_graph(generated.graph, labels=labels, clusters=[k for k, _ in generated.clusters]) == []


def test_too_few_nodes_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 11 nodes"):
        generate_graph(nodes=10, seed=1)


@pytest.mark.django_db
def test_synthetic_pack_imports_through_the_real_importer() -> None:
    from ontology.store import get_graph_store
    from projects.models import Project
    from taxonomy.models import Label
    from taxonomy.packs import PackDocument, pack_import

    pack: dict[str, Any] = synthetic_pack(nodes=300, seed=12, slug="synth")
    result = pack_import(PackDocument(data=pack, source="synthetic"))

    project = Project.objects.get(slug="synth")
    assert result.project == project
    assert result.created["nodes"] == 300 and result.created["edges"] == 1500
    assert Label.objects.filter(project=project).count() == len(pack["labels"])
    counts = get_graph_store().counts(project.pk)
    assert counts["nodes"] == 300 and counts["edges"] == 1500
    exported = get_graph_store().export_graph(project.pk)
    assert exported.edges == generate_graph(nodes=300, seed=12).graph.edges
