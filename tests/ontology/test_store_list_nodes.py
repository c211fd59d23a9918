"""Contract: ``list_nodes`` pages and filters the draft graph the same way on every backend."""

from __future__ import annotations

from tests.ontology.conftest import sample_graph


def test_list_nodes_pages_and_filters(store, project, taxonomy):
    store.replace_graph(project.pk, sample_graph())
    everything, total = store.list_nodes(project.pk, limit=100)
    assert total == len(sample_graph().nodes)
    assert [n.node_id for n in everything] == sorted(n.node_id for n in sample_graph().nodes)
    page, total_again = store.list_nodes(project.pk, offset=2, limit=3)
    assert total_again == total
    assert [n.node_id for n in page] == [n.node_id for n in everything[2:5]]
    infos, n_infos = store.list_nodes(project.pk, type="Info")
    assert n_infos == sum(1 for n in sample_graph().nodes if n.type == "Info")
    assert all(n.type == "Info" for n in infos)
    by_label, _ = store.list_nodes(project.pk, label="L00002")
    assert [n.node_id for n in by_label] == sorted(
        n.node_id for n in sample_graph().nodes if "L00002" in n.labels
    )
    found, n_found = store.list_nodes(project.pk, search="INVOICE")
    assert n_found >= 1 and all("invoice" in (n.title + n.node_id).lower() for n in found)
    assert store.list_nodes(project.pk, status="REMOVED")[1] == 1


def test_list_nodes_never_crosses_projects(store, project, other_project, taxonomy, other_taxonomy):
    store.replace_graph(project.pk, sample_graph())
    assert store.list_nodes(other_project.pk) == ([], 0)
