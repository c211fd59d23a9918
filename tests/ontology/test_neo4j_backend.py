"""The parts of the ``neo4j`` backend that need no server: how nodes map to properties, and the
guard that every statement is sent with exactly its declared parameters. (The backend's behaviour on a
real server is covered by the contract suite; its Cypher by ``test_cypher_lint.py``.)"""

from __future__ import annotations

import pytest

from ontology.store.neo4j_backend import _run, node_from_props, node_props

from .conftest import sample_graph


def test_node_properties_round_trip_every_sample_node() -> None:
    for node in sample_graph().nodes:
        props = {"project_id": 1, "node_id": node.node_id, **node_props(node)}
        if props["embedding"] is None:
            del props["embedding"]  # SET n += {embedding: null} removes the property

        assert node_from_props(props) == node


def test_node_properties_are_neo4j_property_types() -> None:
    action = sample_graph().nodes[2]

    props = node_props(action)

    assert props["parameters_json"] == (
        '[{"name": "invoice_id", "type": "string", "required": true, "description": "the invoice number"}, '
        '{"name": "email", "type": "email", "required": false, "description": ""}]'
    )
    assert props["labels"] == ["L00002"] and props["clusters"] == []
    assert props["embedding"] == [0.3, 0.2, -0.7]


def test_the_backend_refuses_parameters_other_than_the_declared_ones() -> None:
    with pytest.raises(TypeError, match=r"cypher GET_NODE: parameters \['node_id'\] differ"):
        _run(None, "GET_NODE", node_id="N-a")
    with pytest.raises(TypeError, match="differ from declared"):
        _run(None, "GET_NODE", project_id=1, node_id="N-a", extra=True)
