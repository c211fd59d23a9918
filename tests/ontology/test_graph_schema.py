"""``manage.py graph_init_schema`` on a real Neo4j: idempotent, and the constraints it makes hold."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from ontology.store.port import NodeData


def _schema(store: Any) -> tuple[set[str], set[str]]:
    with store.driver.session(database=store.database) as session:
        constraints = {r["name"] for r in session.run("SHOW CONSTRAINTS YIELD name")}
        indexes = {r["name"] for r in session.run("SHOW INDEXES YIELD name")}
    return constraints, indexes


@pytest.mark.neo4j
@pytest.mark.django_db
def test_init_schema_creates_the_keys_twice_without_change_and_drops_unused_indexes(settings: Any) -> None:
    from tests.neo4j_server import neo4j_connection, neo4j_store

    connection = neo4j_connection()
    store = neo4j_store()
    settings.NEO4J_USER, settings.NEO4J_PASSWORD = connection.user, connection.password
    settings.NEO4J_DATABASE = connection.database
    try:
        with store.driver.session(database=store.database) as session:  # what an older version left
            session.run(
                "CREATE FULLTEXT INDEX ontology_node_text IF NOT EXISTS "
                "FOR (n:OntologyNode) ON EACH [n.title, n.chunk]"
            ).consume()
        first_out, second_out = StringIO(), StringIO()
        call_command("graph_init_schema", uri=connection.uri, stdout=first_out)
        first = _schema(store)
        call_command("graph_init_schema", uri=connection.uri, stdout=second_out)
        constraints, indexes = _schema(store)
    finally:
        store.close()

    assert first_out.getvalue() == second_out.getvalue() and "graph schema ready" in first_out.getvalue()
    assert (constraints, indexes) == first
    assert {
        "ontology_node_generation_key",
        "ontology_alias_generation_key",
        "ontology_graph_head_key",
    } <= constraints
    assert {
        "ontology_node_graph",
        "ontology_alias_graph",
        "ontology_node_generation_type",
        "ontology_node_generation_status",
        "ontology_edge_type",
    } <= indexes
    assert not {"ontology_node_key", "ontology_alias_key"} & constraints
    assert "ontology_node_text" not in indexes and "ontology_node_embedding" not in indexes


@pytest.mark.neo4j
@pytest.mark.django_db
def test_init_schema_migrates_a_graph_written_before_generations(project: Any) -> None:
    """A database an earlier version wrote (keys on (project_id, node_id), no generation) is read as
    generation 0 after ``init_schema``, and can then be replaced by a staged generation."""
    from ontology.store.port import GraphData
    from tests.neo4j_server import neo4j_store, neo4j_wipe

    store = neo4j_store()
    neo4j_wipe(store)
    try:
        with store.driver.session(database=store.database) as session:
            for statement in (
                "DROP CONSTRAINT ontology_node_generation_key IF EXISTS",
                "DROP CONSTRAINT ontology_alias_generation_key IF EXISTS",
                "CREATE CONSTRAINT ontology_node_key IF NOT EXISTS "
                "FOR (n:OntologyNode) REQUIRE (n.project_id, n.node_id) IS UNIQUE",
            ):
                session.run(statement).consume()
            session.run(
                "CREATE (a:OntologyNode {project_id: $p, node_id: 'N-old', type: 'FAQ', title: 'Old', "
                "status: 'ACTIVE'})-[:EDGE {type: 'RELATED_TO', weight: 0.5, semantics: ''}]->"
                "(b:OntologyNode {project_id: $p, node_id: 'N-older', type: 'FAQ', title: 'Older', "
                "status: 'ACTIVE'}) "
                "CREATE (:OntologyNode {project_id: $p, node_id: 'N-gone', type: 'FAQ', title: 'Gone', "
                "status: 'REMOVED'}) "
                "CREATE (:NodeAlias {project_id: $p, source: 'N-gone', targets: ['N-old'], reason: 'split'})",
                p=project.pk,
            ).consume()
        assert store.get_node(project.pk, "N-old") is None  # no generation yet: not the project's graph

        store.init_schema()

        assert store.get_node(project.pk, "N-old").title == "Old"  # type: ignore[union-attr]
        assert store.counts(project.pk)["edges"] == 1 and store.resolve_alias(project.pk, "N-gone") == (
            "N-old",
        )
        store.staged_above = 0  # the old node key would refuse the same node id in a second generation
        store.replace_graph(project.pk, store.export_graph(project.pk))
        assert store.get_node(project.pk, "N-older").title == "Older"  # type: ignore[union-attr]
        store.replace_graph(project.pk, GraphData())
    finally:
        neo4j_wipe(store)
        store.init_schema()
        store.close()


@pytest.mark.neo4j
@pytest.mark.django_db
def test_the_node_key_refuses_a_second_node_with_the_same_id(project: Any) -> None:
    """Two writers creating the same node cannot both succeed: the constraint refuses the second."""
    from neo4j.exceptions import ConstraintError

    from ontology.store.neo4j_backend import _run, node_props
    from tests.neo4j_server import neo4j_store

    store = neo4j_store()
    store.init_schema()
    node = NodeData("N-twice", "FAQ", "Twice", "Created by two writers at once.")

    def create(tx: Any) -> None:
        _run(
            tx, "CREATE_NODE", project_id=project.pk, node_id=node.node_id, props=node_props(node), now=None
        ).consume()

    try:
        store._write(create)
        with pytest.raises(ConstraintError):
            store._write(create)
        assert store.counts(project.pk)["nodes"] == 1
    finally:
        store.replace_graph(project.pk, type(store.export_graph(project.pk))())
        store.close()


@pytest.mark.django_db
def test_init_schema_on_the_sql_backend_says_there_is_nothing_to_do(settings: Any) -> None:
    settings.GRAPH_BACKEND = "sql"
    out = StringIO()

    call_command("graph_init_schema", stdout=out)

    assert "graph backend sql" in out.getvalue() and "nothing to do" in out.getvalue()
