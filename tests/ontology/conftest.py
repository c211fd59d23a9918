"""Fixtures of the ontology tests: a small taxonomy to attach to, a sample graph, and the graph stores.

``store`` yields the ``sql`` store and the ``neo4j`` store, the latter on a real Neo4j server
(``tests/neo4j_server.py``: the one ``NEO4J_URI`` names, or a throwaway one started for the session).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from ontology.store.port import AliasData, EdgeData, GraphData, NodeData, ParameterSpec

BACKENDS = ["sql", pytest.param("neo4j", marks=pytest.mark.neo4j)]


@pytest.fixture
def taxonomy(project: Any) -> dict[str, str]:
    """Clusters billing/support; labels L00001 (ACTIVE root), L00002 (ACTIVE child), L00003 (DEPRECATED)."""
    return build_taxonomy(project)


@pytest.fixture
def other_taxonomy(other_project: Any) -> dict[str, str]:
    return build_taxonomy(other_project)


def build_taxonomy(project: Any) -> dict[str, str]:
    from taxonomy.services import cluster_create, label_create, label_set_status

    cluster_create(project=project, actor=None, key="billing", name="Billing")
    cluster_create(project=project, actor=None, key="support", name="Support")
    root = label_create(project=project, actor=None, name="Invoices", cluster_key="billing")
    child = label_create(
        project=project, actor=None, name="Download", cluster_key="billing", parent_id=root.label_id
    )
    old = label_create(project=project, actor=None, name="Fax", cluster_key="support")
    label_set_status(label=old, actor=None, status="DEPRECATED", reason="nobody faxes")
    assert (root.label_id, child.label_id, old.label_id) == ("L00001", "L00002", "L00003")
    return {"root": root.label_id, "child": child.label_id, "deprecated": old.label_id}


def sample_graph() -> GraphData:
    """Eight nodes of six types (one DEPRECATED, one REMOVED), six edges, one split alias."""
    nodes = (
        NodeData(
            "N-a",
            "Decision",
            "Which invoice?",
            "Pick the invoice period.",
            labels=("L00001",),
            clusters=("billing",),
        ),
        NodeData(
            "N-b",
            "Info",
            "Download an invoice",
            "Open Billing › Invoices and click Download.",
            labels=("L00002", "L00001"),
            clusters=("billing",),
            embedding=(0.1, -0.25, 1e-9),
        ),
        NodeData(
            "N-c",
            "Action",
            "Resend an invoice",
            "Resends the invoice by e-mail.",
            risk="medium",
            labels=("L00002",),
            preconditions=("customer is verified", "invoice exists"),
            parameters=(
                ParameterSpec("invoice_id", "string", True, "the invoice number"),
                ParameterSpec("email", "email", False, ""),
            ),
            handler="python:billing.resend_invoice",
            embedding=(0.3, 0.2, -0.7),
        ),
        NodeData(
            "N-d", "FAQ", "Invoice FAQ", "Invoices are issued monthly.", clusters=("billing", "support")
        ),
        NodeData("N-e", "Clarify", "Which account?", "Ask for the account."),
        NodeData("N-f", "OutOfScope", "Not about billing", "Politely refocus."),
        NodeData("N-gone", "Info", "Gone", "Removed text.", status="REMOVED", status_reason="obsolete"),
        NodeData(
            "N-old",
            "Info",
            "Invoices (old)",
            "Old text.",
            status="DEPRECATED",
            status_reason="split",
            labels=("L00003",),
        ),
    )
    edges = (
        EdgeData("N-a", "N-b", "LEADS_TO", 0.8, "then show how"),
        EdgeData("N-a", "N-c", "LEADS_TO", 0.6),
        EdgeData("N-a", "N-e", "CLARIFIES", 1.0),
        EdgeData("N-b", "N-d", "ELABORATES", 0.5),
        EdgeData("N-c", "N-b", "REQUIRES", 1.0, "must have found the invoice"),
        EdgeData("N-d", "N-a", "RELATED_TO", -0.3, "inhibitory"),
    )
    aliases = (AliasData("N-old", ("N-b", "N-d"), "split by intent"),)
    return GraphData(nodes=nodes, edges=edges, aliases=aliases)


@pytest.fixture(params=BACKENDS)
def store(request: Any, db: Any) -> Iterator[Any]:
    if request.param == "sql":
        from ontology.store.sql_backend import SqlGraphStore

        yield SqlGraphStore()
        return
    from tests.neo4j_server import neo4j_store

    neo = neo4j_store()
    neo.init_schema()
    # Test projects reuse database ids across tests: start and end with their Neo4j graphs empty.
    wipe = [request.getfixturevalue(name).pk for name in ("project", "other_project")]
    for project_id in wipe:
        neo.replace_graph(project_id, GraphData())
    try:
        yield neo
    finally:
        for project_id in wipe:
            neo.replace_graph(project_id, GraphData())
        neo.close()


@pytest.fixture(params=BACKENDS)
def app_store(request: Any, db: Any, settings: Any) -> Iterator[Any]:
    """The platform's own graph store (``get_graph_store()``), switched to the backend under test."""
    import ontology.store as store_module
    from ontology.store.sql_backend import SqlGraphStore

    saved = (store_module._store, store_module._store_pid)
    store: Any = SqlGraphStore()
    if request.param == "neo4j":
        from tests.neo4j_server import neo4j_store, neo4j_wipe

        store = neo4j_store()
        store.init_schema()
        neo4j_wipe(store)
    settings.GRAPH_BACKEND = request.param
    store_module._store, store_module._store_pid = store, os.getpid()
    try:
        yield store
    finally:
        store_module._store, store_module._store_pid = saved
        if request.param == "neo4j":
            neo4j_wipe(store)
            store.close()
