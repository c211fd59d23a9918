"""The graph validator's rules, on frozen data (no database)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from arg_platform.errors import Violation
from ontology.store.port import AliasData, EdgeData, GraphData, NodeData, ParameterSpec, resolve_alias_chain
from ontology.validator import status_change_violations, validate_graph

from .conftest import sample_graph

LABELS = {"L00001": "ACTIVE", "L00002": "ACTIVE", "L00003": "DEPRECATED", "L00004": "SHADOW"}
CLUSTERS = {"billing", "support"}


def check(graph: GraphData, **kwargs: Any) -> list[Violation]:
    return validate_graph(graph, labels=LABELS, clusters=CLUSTERS, **kwargs)


def with_node(node: NodeData) -> GraphData:
    graph = sample_graph()
    return replace(graph, nodes=(*graph.nodes, node))


def with_edge(edge: EdgeData) -> GraphData:
    graph = sample_graph()
    return replace(graph, edges=(*graph.edges, edge))


def with_alias(alias: AliasData) -> GraphData:
    graph = sample_graph()
    return replace(graph, aliases=(*graph.aliases, alias))


def rule_fields(violations: list[Violation]) -> list[tuple[str, str]]:
    return [(v.rule, v.field) for v in violations]


def test_the_sample_graph_is_valid() -> None:
    assert check(sample_graph()) == []


def test_an_empty_graph_is_valid() -> None:
    assert check(GraphData()) == []


NEW = NodeData("N-new", "Info", "New", "text")

NODE_CASES = [
    (replace(NEW, node_id="N new"), [("graph.node_id_format", "id")]),
    (replace(NEW, node_id=""), [("graph.node_id_format", "id")]),
    (replace(NEW, node_id="N" * 129), [("graph.node_id_format", "id")]),
    (replace(NEW, type="Gadget"), [("graph.node_type", "type")]),
    (replace(NEW, risk="LOW"), [("graph.risk", "risk")]),
    (replace(NEW, status="ARCHIVED"), [("graph.node_status", "status")]),
    (replace(NEW, title=""), [("graph.field_size", "title")]),
    (replace(NEW, title="t" * 201), [("graph.field_size", "title")]),
    (replace(NEW, chunk="c" * 10_001), [("graph.field_size", "chunk")]),
    (replace(NEW, status_reason="r" * 501), [("graph.field_size", "status_reason")]),
    (replace(NEW, preconditions=("",)), [("graph.field_size", "preconditions")]),
    (replace(NEW, embedding=()), [("graph.embedding", "embedding")]),
    (replace(NEW, embedding=(1.0, 2.0, float("inf"))), [("graph.embedding", "embedding")]),
    (replace(NEW, embedding=(1.0, "2", 3.0)), [("graph.embedding", "embedding")]),  # type: ignore[arg-type]
    (replace(NEW, embedding=(1.0, None, 3.0)), [("graph.embedding", "embedding")]),  # type: ignore[arg-type]
    (replace(NEW, labels=("L00099",)), [("graph.attach_label_exists", "labels")]),
    (replace(NEW, labels=("L00003",)), [("graph.attach_label_deprecated", "labels")]),
    (replace(NEW, labels=("L00001", "L00001")), [("graph.attach_unique", "labels")]),
    (replace(NEW, clusters=("hr",)), [("graph.attach_cluster_exists", "clusters")]),
    (replace(NEW, clusters=("billing", "billing")), [("graph.attach_unique", "clusters")]),
    (replace(NEW, type="Action"), [("graph.action_fields", "handler")]),
    (replace(NEW, type="DirectAction", handler="  "), [("graph.action_fields", "handler")]),
    (replace(NEW, parameters=(ParameterSpec("bad name"),)), [("graph.action_fields", "parameters")]),
    (
        replace(NEW, parameters=(ParameterSpec("a"), ParameterSpec("a"))),
        [("graph.action_fields", "parameters")],
    ),
    (replace(NEW, parameters=(ParameterSpec("a", type=""),)), [("graph.action_fields", "parameters")]),
    # typed parameters: a known type, an identifier's compiling pattern, an enum's values, a source
    (replace(NEW, parameters=(ParameterSpec("a", type="colour"),)), [("graph.action_fields", "parameters")]),
    (
        replace(NEW, parameters=(ParameterSpec("a", type="identifier"),)),
        [("graph.action_fields", "parameters")],
    ),
    (
        replace(NEW, parameters=(ParameterSpec("a", type="identifier", pattern="INV-(\\d"),)),
        [("graph.action_fields", "parameters")],
    ),
    # … and one RE2 can run: it is matched on every prompt, so no lookaround or backreference
    (
        replace(NEW, parameters=(ParameterSpec("a", type="identifier", pattern="(?<!x)INV-\\d+"),)),
        [("graph.action_fields", "parameters")],
    ),
    (replace(NEW, parameters=(ParameterSpec("a", type="enum"),)), [("graph.action_fields", "parameters")]),
    (
        replace(
            NEW,
            parameters=(ParameterSpec("a", type="enum", values=("pro",), synonyms=(("team", ("biz",)),)),),
        ),
        [("graph.action_fields", "parameters")],
    ),
    (replace(NEW, parameters=(ParameterSpec("a", source="user"),)), [("graph.action_fields", "parameters")]),
    (
        replace(
            NEW,
            parameters=(
                ParameterSpec("a", type="enum", values=("pro", "team"), synonyms=(("team", ("biz",)),)),
                ParameterSpec("b", type="identifier", pattern="INV-\\d{4}"),
                ParameterSpec("c", type="email", source="context"),
            ),
        ),
        [],
    ),
]


@pytest.mark.parametrize(("node", "expected"), NODE_CASES)
def test_node_rules(node: NodeData, expected: list[tuple[str, str]]) -> None:
    assert rule_fields(check(with_node(node))) == expected


def test_a_well_formed_action_passes() -> None:
    action = replace(
        NEW,
        type="Action",
        handler="python:billing.refund",
        risk="high",
        parameters=(ParameterSpec("invoice_id", "string", True, "which invoice"),),
        preconditions=("customer verified",),
    )

    assert check(with_node(action)) == []


def test_shadow_labels_take_attachments() -> None:
    assert check(with_node(replace(NEW, labels=("L00004",)))) == []


def test_deprecated_and_removed_nodes_keep_attachments_to_deprecated_labels() -> None:
    graph = with_node(replace(NEW, status="DEPRECATED", labels=("L00003",)))

    assert check(graph) == []
    assert check(with_node(replace(NEW, status="REMOVED", labels=("L00003",)))) == []


def test_duplicate_node_ids() -> None:
    graph = with_node(replace(NEW, node_id="N-a"))

    assert rule_fields(check(graph)) == [("graph.node_unique", "id")]


def test_embeddings_of_different_dimensions() -> None:
    violations = check(with_node(replace(NEW, embedding=(1.0, 2.0))))

    assert rule_fields(violations) == [("graph.embedding", "embedding")]
    assert violations[0].message == "embeddings have different dimensions: 2 (N-new), 3 (N-b)"


EDGE_CASES = [
    (EdgeData("N-a", "N-zzz", "LEADS_TO"), [("graph.edge_endpoint_exists", "target")]),
    (EdgeData("N-zzz", "N-a", "LEADS_TO"), [("graph.edge_endpoint_exists", "source")]),
    (EdgeData("N-a", "N-gone", "LEADS_TO"), [("graph.edge_endpoint_removed", "target")]),
    (EdgeData("N-gone", "N-a", "RELATED_TO"), [("graph.edge_endpoint_removed", "source")]),
    (EdgeData("N-a", "N-f", "TELEPORTS_TO"), [("graph.edge_type", "type")]),
    (EdgeData("N-a", "N-f", "LEADS_TO", 1.01), [("graph.edge_weight", "weight")]),
    (EdgeData("N-a", "N-f", "LEADS_TO", -1.01), [("graph.edge_weight", "weight")]),
    (EdgeData("N-a", "N-f", "LEADS_TO", float("nan")), [("graph.edge_weight", "weight")]),
    (EdgeData("N-a", "N-f", "LEADS_TO", "0.5"), [("graph.edge_weight", "weight")]),  # type: ignore[arg-type]
    (EdgeData("N-a", "N-a", "REQUIRES"), [("graph.self_loop", "target")]),
    (EdgeData("N-a", "N-a", "RELATED_TO"), [("graph.self_loop", "target")]),
    (EdgeData("N-a", "N-b", "LEADS_TO", 0.1), [("graph.edge_unique", "type")]),
    (EdgeData("N-a", "N-f", "LEADS_TO", 1.0, "s" * 501), [("graph.field_size", "semantics")]),
]


@pytest.mark.parametrize(("edge", "expected"), EDGE_CASES)
def test_edge_rules(edge: EdgeData, expected: list[tuple[str, str]]) -> None:
    assert rule_fields(check(with_edge(edge))) == expected


def test_edge_weights_at_the_bounds_pass() -> None:
    graph = with_edge(EdgeData("N-a", "N-f", "LEADS_TO", -1.0))

    assert check(replace(graph, edges=(*graph.edges, EdgeData("N-b", "N-f", "LEADS_TO", 1)))) == []


def test_an_edge_may_touch_a_deprecated_node() -> None:
    assert check(with_edge(EdgeData("N-old", "N-b", "RELATED_TO", 0.1))) == []


ALIAS_CASES = [
    (AliasData("N-zzz", ("N-a",)), [("graph.alias_source_exists", "source")]),
    (AliasData("N-a", ()), [("graph.alias_targets", "targets")]),
    (AliasData("N-a", ("N-b", "N-b")), [("graph.alias_targets", "targets")]),
    (AliasData("N-a", ("N-a",)), [("graph.alias_targets", "targets")]),
    (AliasData("N-a", ("N-zzz",)), [("graph.alias_targets", "targets")]),
    (AliasData("N-a", ("N-gone",)), [("graph.alias_targets", "targets")]),
    (AliasData("N-old", ("N-c",)), [("graph.alias_unique", "source")]),
    (AliasData("N-a", ("N-b",), "r" * 501), [("graph.field_size", "reason")]),
]


@pytest.mark.parametrize(("alias", "expected"), ALIAS_CASES)
def test_alias_rules(alias: AliasData, expected: list[tuple[str, str]]) -> None:
    assert rule_fields(check(with_alias(alias))) == expected


def test_a_merge_has_one_target_and_a_removed_source_may_keep_its_alias() -> None:
    assert check(with_alias(AliasData("N-gone", ("N-a",), "merged"))) == []


def test_violations_carry_the_location_given_for_the_item() -> None:
    graph = GraphData(
        nodes=(NodeData("N-1", "Info", "One", "1", labels=("L00099",)), NodeData("N-2", "Info", "Two", "2")),
        edges=(EdgeData("N-1", "N-9", "LEADS_TO"),),
        aliases=(AliasData("N-2", ()),),
    )
    locations = {
        "node:N-1": "nodes[0]",
        "node:N-2": "nodes[1]",
        "edge:N-1|N-9|LEADS_TO": "edges[0]",
        "alias:N-2": "aliases[0]",
    }

    violations = check(graph, locations=locations)

    assert [(v.rule, v.location, v.field) for v in violations] == [
        ("graph.attach_label_exists", "nodes[0]", "labels"),
        ("graph.edge_endpoint_exists", "edges[0]", "target"),
        ("graph.alias_targets", "aliases[0]", "targets"),
    ]
    assert violations[0].message == "node 'N-1': label L00099 does not exist"


@pytest.mark.parametrize(
    ("current", "new", "reason", "touching", "expected"),
    [
        ("ACTIVE", "DEPRECATED", "split", 3, []),
        ("DEPRECATED", "REMOVED", "gone", 0, []),
        ("DEPRECATED", "ACTIVE", "", 2, []),
        ("ACTIVE", "ACTIVE", "", 0, []),
        ("ACTIVE", "REMOVED", "skip", 0, ["graph.status_transition"]),
        ("REMOVED", "ACTIVE", "back", 0, ["graph.status_transition"]),
        ("REMOVED", "DEPRECATED", "back", 0, ["graph.status_transition"]),
        ("ACTIVE", "DEPRECATED", " ", 0, ["graph.status_reason"]),
        ("DEPRECATED", "REMOVED", "gone", 2, ["graph.edge_endpoint_removed"]),
        ("ACTIVE", "GONE", "x", 0, ["graph.node_status"]),
    ],
)
def test_status_change_rules(current: str, new: str, reason: str, touching: int, expected: list[str]) -> None:
    violations = status_change_violations(
        "N-1", current=current, new=new, reason=reason, touching_edges=touching
    )

    assert [v.rule for v in violations] == expected


@pytest.mark.parametrize(
    ("table", "start", "expected"),
    [
        ({}, "A", ("A",)),
        ({"A": ("B", "C")}, "A", ("B", "C")),
        ({"A": ("B", "C"), "B": ("D",), "D": ("E", "C")}, "A", ("E", "C")),
        ({"A": ("B",), "B": ("A",)}, "A", ("B",)),
        ({"A": ("A",)}, "A", ("A",)),
        ({"A": ("B",), "B": ("C",), "C": ("A", "D")}, "A", ("D",)),
    ],
)
def test_resolve_alias_chain(
    table: dict[str, tuple[str, ...]], start: str, expected: tuple[str, ...]
) -> None:
    assert resolve_alias_chain(table, start) == expected
