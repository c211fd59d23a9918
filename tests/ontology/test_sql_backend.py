"""What the ``sql`` backend adds to the contract: it joins an outer transaction, and its tables
enforce the edge table's constraints even below the store."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, transaction

from ontology.models import OntologyEdge, OntologyNode
from ontology.store import get_graph_store
from ontology.store.port import GraphData, NodeData
from ontology.store.sql_backend import SqlGraphStore, pack_embedding, unpack_embedding

from .conftest import sample_graph


class ImportFailedError(Exception):
    pass


def test_replace_joins_the_outer_transaction_of_a_pack_import(project: Any, taxonomy: dict[str, str]) -> None:
    store = SqlGraphStore()
    store.replace_graph(project.pk, sample_graph())

    with pytest.raises(ImportFailedError), transaction.atomic():
        store.replace_graph(project.pk, GraphData(nodes=(NodeData("X-1", "FAQ", "One", "1"),)))
        assert store.counts(project.pk)["nodes"] == 1
        raise ImportFailedError("a later section of the pack failed")

    assert store.export_graph(project.pk) == sample_graph()


def test_the_edge_table_refuses_self_loops_and_duplicates_below_the_store(
    project: Any, taxonomy: dict[str, str]
) -> None:
    SqlGraphStore().replace_graph(project.pk, sample_graph())
    a = OntologyNode.objects.get(project=project, node_id="N-a")
    b = OntologyNode.objects.get(project=project, node_id="N-b")

    with pytest.raises(IntegrityError), transaction.atomic():
        OntologyEdge.objects.create(project=project, source=a, target=a, type="RELATED_TO")
    with pytest.raises(IntegrityError), transaction.atomic():
        OntologyEdge.objects.create(project=project, source=a, target=b, type="LEADS_TO")
    assert OntologyEdge.objects.filter(project=project).count() == 6


def test_embeddings_are_stored_as_exact_float64() -> None:
    vector = (0.1, -1 / 3, 1e-300, 123456.789)

    raw = pack_embedding(vector)

    assert raw is not None and len(raw) == 32
    assert unpack_embedding(raw) == vector
    assert unpack_embedding(memoryview(raw)) == vector
    assert pack_embedding(None) is None and unpack_embedding(None) is None


def test_the_configured_store_is_one_per_process_and_healthy(db: Any, monkeypatch: Any) -> None:
    import os

    from django.conf import settings

    import ontology.store

    store = get_graph_store()

    assert store.backend == settings.GRAPH_BACKEND
    assert get_graph_store() is store
    assert store.health().ok is True
    real_pid = os.getpid()
    monkeypatch.setattr(ontology.store.os, "getpid", lambda: real_pid + 1)  # as in a forked worker child
    assert get_graph_store() is not store
