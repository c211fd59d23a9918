"""The GraphStore contract: one suite, run on every backend.

The ``store`` fixture (``conftest.py``) yields the ``sql`` store and the ``neo4j`` store on a real
Neo4j 5.26 with GDS: the server ``NEO4J_URI`` names, or one ``tests/neo4j_server.py`` starts for the
test session from ``tools/neo4j-server`` (``scripts/with-neo4j.sh`` runs any command against one)::

    .venv/bin/python -m pytest tests/ontology -q                 # starts its own server
    bash scripts/with-neo4j.sh .venv/bin/python -m pytest tests/ontology -q

To run it against the Neo4j of docker compose instead, point ``NEO4J_URI`` / ``NEO4J_PASSWORD`` at it
(docs/deploy.md §6). Every Cypher statement is also checked by Neo4j's parser in ``test_cypher_lint.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from arg_platform.errors import NotFound, RuleViolation
from ontology.store.port import AliasData, EdgeData, GraphData, NodeData

from .conftest import sample_graph


@pytest.fixture
def loaded(store: Any, project: Any, taxonomy: dict[str, str]) -> tuple[Any, int]:
    store.replace_graph(project.pk, sample_graph())
    return store, project.pk


def rules(exc: pytest.ExceptionInfo[RuleViolation]) -> list[str]:
    return [v.rule for v in exc.value.violations]


# --- whole graph ----------------------------------------------------------------------------------


def test_replace_then_export_round_trips_exactly(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    exported = store.export_graph(pid)

    assert exported == sample_graph()
    assert exported.nodes[1].embedding == (0.1, -0.25, 1e-9)


def test_export_orders_nodes_edges_and_aliases_whatever_the_input_order(
    store: Any, project: Any, taxonomy: dict[str, str]
) -> None:
    graph = sample_graph()
    shuffled = GraphData(nodes=graph.nodes[::-1], edges=graph.edges[::-1], aliases=graph.aliases)

    store.replace_graph(project.pk, shuffled)

    exported = store.export_graph(project.pk)
    assert [n.node_id for n in exported.nodes] == [
        "N-a",
        "N-b",
        "N-c",
        "N-d",
        "N-e",
        "N-f",
        "N-gone",
        "N-old",
    ]
    assert [e.key for e in exported.edges] == sorted(e.key for e in graph.edges)
    assert exported.aliases == graph.aliases


def test_replace_discards_the_previous_graph(loaded: tuple[Any, int]) -> None:
    store, pid = loaded
    small = GraphData(
        nodes=(NodeData("X-1", "FAQ", "One", "1"), NodeData("X-2", "Info", "Two", "2")),
        edges=(EdgeData("X-1", "X-2", "ELABORATES", 0.4),),
    )

    store.replace_graph(pid, small)

    assert store.export_graph(pid) == small
    assert store.get_node(pid, "N-a") is None
    assert store.resolve_alias(pid, "N-old") == ("N-old",)


def test_counts(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    assert store.counts(pid) == {
        "nodes": 8,
        "edges": 6,
        "aliases": 1,
        "nodes_by_type": {"Action": 1, "Clarify": 1, "Decision": 1, "FAQ": 1, "Info": 3, "OutOfScope": 1},
        "nodes_by_status": {"ACTIVE": 6, "DEPRECATED": 1, "REMOVED": 1},
    }


def test_replace_with_one_bad_edge_leaves_the_old_graph_intact(loaded: tuple[Any, int]) -> None:
    store, pid = loaded
    graph = sample_graph()
    bad = replace(
        graph,
        nodes=graph.nodes[:3],
        edges=(*graph.edges[:2], EdgeData("N-a", "N-zzz", "LEADS_TO")),
        aliases=(),
    )

    with pytest.raises(RuleViolation) as exc:
        store.replace_graph(pid, bad)

    assert rules(exc) == ["graph.edge_endpoint_exists"]
    assert store.export_graph(pid) == sample_graph()


def test_replace_reports_every_broken_rule_at_once(
    store: Any, project: Any, taxonomy: dict[str, str]
) -> None:
    bad = GraphData(
        nodes=(NodeData("N 1", "Info", "t", "c"), NodeData("N-2", "Gadget", "t", "c", labels=("L00099",))),
        edges=(EdgeData("N-2", "N-2", "LEADS_TO"),),
        aliases=(AliasData("N-2", ()),),
    )

    with pytest.raises(RuleViolation) as exc:
        store.replace_graph(project.pk, bad)

    assert rules(exc) == [
        "graph.node_id_format",
        "graph.node_type",
        "graph.attach_label_exists",
        "graph.self_loop",
        "graph.alias_targets",
    ]
    assert store.counts(project.pk)["nodes"] == 0


# --- nodes ----------------------------------------------------------------------------------------


def test_upsert_creates_then_overwrites_a_node(loaded: tuple[Any, int]) -> None:
    store, pid = loaded
    node = NodeData(
        "N-new", "Shortcut", "Quick link", "Go to invoices.", labels=("L00001",), clusters=("billing",)
    )

    store.upsert_node(pid, node)
    assert store.get_node(pid, "N-new") == node

    changed = replace(
        node,
        title="Quick invoice link",
        labels=("L00002",),
        clusters=(),
        risk="high",
        embedding=(1.0, 0.0, 0.0),
    )
    store.upsert_node(pid, changed)

    assert store.get_node(pid, "N-new") == changed
    assert store.counts(pid)["nodes"] == 9


def test_a_node_keeps_its_products_through_upsert_export_and_edit(loaded: tuple[Any, int]) -> None:
    store, pid = loaded
    node = NodeData("N-cli", "Info", "CLI previews", "Run acme preview.", products=("cli", "api"))

    store.upsert_node(pid, node)
    assert store.get_node(pid, "N-cli").products == ("cli", "api")
    assert {n.node_id: n.products for n in store.export_graph(pid).nodes}["N-cli"] == ("cli", "api")
    store.upsert_node(pid, replace(node, products=()))
    assert store.get_node(pid, "N-cli").products == ()


def test_upsert_clears_an_embedding(loaded: tuple[Any, int]) -> None:
    store, pid = loaded
    node = store.get_node(pid, "N-b")

    store.upsert_node(pid, replace(node, embedding=None))

    assert store.get_node(pid, "N-b") == replace(node, embedding=None)


def test_get_node_of_an_unknown_id_is_none(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    assert store.get_node(pid, "N-nope") is None


def test_node_lifecycle_active_deprecated_removed(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    store.set_node_status(pid, "N-f", "DEPRECATED", "folded into N-e")
    assert (store.get_node(pid, "N-f").status, store.get_node(pid, "N-f").status_reason) == (
        "DEPRECATED",
        "folded into N-e",
    )

    store.set_node_status(pid, "N-f", "REMOVED", "observation window over")
    assert store.get_node(pid, "N-f").status == "REMOVED"
    assert store.counts(pid)["nodes_by_status"] == {"ACTIVE": 5, "DEPRECATED": 1, "REMOVED": 2}


def test_a_deprecated_node_can_come_back(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    store.set_node_status(pid, "N-old", "ACTIVE", "")

    assert store.get_node(pid, "N-old").status == "ACTIVE"


@pytest.mark.parametrize(
    ("node_id", "status", "reason", "rule"),
    [
        ("N-f", "REMOVED", "skip a step", "graph.status_transition"),  # ACTIVE must pass DEPRECATED first
        ("N-gone", "ACTIVE", "back", "graph.status_transition"),  # REMOVED is terminal
        ("N-f", "DEPRECATED", "  ", "graph.status_reason"),
        ("N-f", "ARCHIVED", "why", "graph.node_status"),
    ],
)
def test_bad_status_changes_are_refused(
    loaded: tuple[Any, int], node_id: str, status: str, reason: str, rule: str
) -> None:
    store, pid = loaded
    before = store.export_graph(pid)

    with pytest.raises(RuleViolation) as exc:
        store.set_node_status(pid, node_id, status, reason)

    assert rules(exc) == [rule]
    assert store.export_graph(pid) == before


def test_removing_a_node_that_still_has_edges_is_refused(loaded: tuple[Any, int]) -> None:
    store, pid = loaded
    store.set_node_status(pid, "N-e", "DEPRECATED", "merged")
    before = store.export_graph(pid)

    with pytest.raises(RuleViolation) as exc:
        store.set_node_status(pid, "N-e", "REMOVED", "merged")

    assert rules(exc) == ["graph.edge_endpoint_removed"]
    assert store.export_graph(pid) == before
    store.remove_edge(pid, "N-a", "N-e", "CLARIFIES")
    store.set_node_status(pid, "N-e", "REMOVED", "merged")
    assert store.get_node(pid, "N-e").status == "REMOVED"


def test_status_of_an_unknown_node_is_not_found(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    with pytest.raises(NotFound):
        store.set_node_status(pid, "N-nope", "DEPRECATED", "why")


# --- edges ----------------------------------------------------------------------------------------


def test_neighbours_by_direction(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    assert [e.key for e in store.neighbours(pid, "N-a")] == [
        ("N-a", "N-b", "LEADS_TO"),
        ("N-a", "N-c", "LEADS_TO"),
        ("N-a", "N-e", "CLARIFIES"),
    ]
    assert store.neighbours(pid, "N-a", "in") == [EdgeData("N-d", "N-a", "RELATED_TO", -0.3, "inhibitory")]
    assert [e.key for e in store.neighbours(pid, "N-b", "both")] == [
        ("N-a", "N-b", "LEADS_TO"),
        ("N-b", "N-d", "ELABORATES"),
        ("N-c", "N-b", "REQUIRES"),
    ]


def test_neighbours_by_edge_type(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    assert [e.key for e in store.neighbours(pid, "N-a", "out", ("CLARIFIES", "REQUIRES"))] == [
        ("N-a", "N-e", "CLARIFIES")
    ]
    assert store.neighbours(pid, "N-b", "both", ("REQUIRES",)) == [
        EdgeData("N-c", "N-b", "REQUIRES", 1.0, "must have found the invoice")
    ]
    assert store.neighbours(pid, "N-a", "out", ()) == []
    assert store.neighbours(pid, "N-nope", "both") == []


def test_neighbours_refuse_an_unknown_direction(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    with pytest.raises(RuleViolation) as exc:
        store.neighbours(pid, "N-a", "sideways")

    assert rules(exc) == ["graph.direction"]


def test_add_and_remove_an_edge(loaded: tuple[Any, int]) -> None:
    store, pid = loaded
    edge = EdgeData("N-e", "N-f", "ESCALATES_TO", 0.25, "still unclear")

    store.add_edge(pid, edge)
    assert store.neighbours(pid, "N-e") == [edge]
    assert store.counts(pid)["edges"] == 7

    store.remove_edge(pid, "N-e", "N-f", "ESCALATES_TO")
    assert store.neighbours(pid, "N-e") == []
    assert store.export_graph(pid) == sample_graph()


def test_an_edge_may_repeat_a_pair_with_another_type(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    store.add_edge(pid, EdgeData("N-a", "N-b", "SHORTCUT_TO", 0.9))

    assert [e.type for e in store.neighbours(pid, "N-a", "out") if e.target == "N-b"] == [
        "LEADS_TO",
        "SHORTCUT_TO",
    ]


def test_removing_a_missing_edge_is_not_found(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    with pytest.raises(NotFound):
        store.remove_edge(pid, "N-a", "N-b", "REQUIRES")
    assert store.counts(pid)["edges"] == 6


# --- aliases --------------------------------------------------------------------------------------


def test_resolve_alias_follows_a_split(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    assert store.resolve_alias(pid, "N-old") == ("N-b", "N-d")
    assert store.resolve_alias(pid, "N-a") == ("N-a",)


def test_resolve_alias_follows_chains(loaded: tuple[Any, int]) -> None:
    store, pid = loaded
    store.add_alias(pid, AliasData("N-b", ("N-e", "N-f"), "split again"))
    store.add_alias(pid, AliasData("N-f", ("N-c",), "merged"))

    assert store.resolve_alias(pid, "N-old") == ("N-e", "N-c", "N-d")


def test_resolve_alias_is_cycle_safe(loaded: tuple[Any, int]) -> None:
    store, pid = loaded
    store.add_alias(pid, AliasData("N-b", ("N-e",), "merged"))
    store.add_alias(pid, AliasData("N-e", ("N-b",), "merged back"))

    assert store.resolve_alias(pid, "N-b") == ("N-e",)
    assert store.resolve_alias(pid, "N-e") == ("N-b",)
    assert store.resolve_alias(pid, "N-old") == ("N-e", "N-d")


def test_add_alias_replaces_the_earlier_alias_of_its_source(loaded: tuple[Any, int]) -> None:
    store, pid = loaded

    store.add_alias(pid, AliasData("N-old", ("N-c",), "re-split"))

    assert store.export_graph(pid).aliases == (AliasData("N-old", ("N-c",), "re-split"),)
    assert store.counts(pid)["aliases"] == 1


# --- bad input: refused with the right rule, nothing written ---------------------------------------


def _node(**changes: Any) -> NodeData:
    return replace(
        NodeData("N-new", "Info", "New", "text", labels=("L00001",), clusters=("billing",)), **changes
    )


BAD_WRITES: list[tuple[str, Callable[[Any, int], None], list[str]]] = [
    ("node id", lambda s, p: s.upsert_node(p, _node(node_id="N new!")), ["graph.node_id_format"]),
    ("node type", lambda s, p: s.upsert_node(p, _node(type="Gadget")), ["graph.node_type"]),
    ("risk", lambda s, p: s.upsert_node(p, _node(risk="extreme")), ["graph.risk"]),
    ("status", lambda s, p: s.upsert_node(p, _node(status="ARCHIVED")), ["graph.node_status"]),
    ("new REMOVED", lambda s, p: s.upsert_node(p, _node(status="REMOVED")), ["graph.status_transition"]),
    ("title size", lambda s, p: s.upsert_node(p, _node(title="x" * 201)), ["graph.field_size"]),
    ("empty title", lambda s, p: s.upsert_node(p, _node(title=" ")), ["graph.field_size"]),
    ("chunk size", lambda s, p: s.upsert_node(p, _node(chunk="x" * 10_001)), ["graph.field_size"]),
    (
        "unknown label",
        lambda s, p: s.upsert_node(p, _node(labels=("L00099",))),
        ["graph.attach_label_exists"],
    ),
    (
        "deprecated label",
        lambda s, p: s.upsert_node(p, _node(labels=("L00003",))),
        ["graph.attach_label_deprecated"],
    ),
    (
        "unknown cluster",
        lambda s, p: s.upsert_node(p, _node(clusters=("hr",))),
        ["graph.attach_cluster_exists"],
    ),
    ("action handler", lambda s, p: s.upsert_node(p, _node(type="DirectAction")), ["graph.action_fields"]),
    ("embedding", lambda s, p: s.upsert_node(p, _node(embedding=(float("nan"),))), ["graph.embedding"]),
    (
        "edge to unknown",
        lambda s, p: s.add_edge(p, EdgeData("N-a", "N-zzz", "LEADS_TO")),
        ["graph.edge_endpoint_exists"],
    ),
    (
        "edge to REMOVED",
        lambda s, p: s.add_edge(p, EdgeData("N-a", "N-gone", "LEADS_TO")),
        ["graph.edge_endpoint_removed"],
    ),
    ("self-loop", lambda s, p: s.add_edge(p, EdgeData("N-a", "N-a", "RELATED_TO")), ["graph.self_loop"]),
    ("edge type", lambda s, p: s.add_edge(p, EdgeData("N-a", "N-f", "TELEPORTS_TO")), ["graph.edge_type"]),
    (
        "edge weight",
        lambda s, p: s.add_edge(p, EdgeData("N-a", "N-f", "LEADS_TO", 1.5)),
        ["graph.edge_weight"],
    ),
    (
        "duplicate edge",
        lambda s, p: s.add_edge(p, EdgeData("N-a", "N-b", "LEADS_TO", 0.1)),
        ["graph.edge_unique"],
    ),
    (
        "alias source",
        lambda s, p: s.add_alias(p, AliasData("N-zzz", ("N-a",))),
        ["graph.alias_source_exists"],
    ),
    ("split without children", lambda s, p: s.add_alias(p, AliasData("N-a", ())), ["graph.alias_targets"]),
    (
        "alias to unknown",
        lambda s, p: s.add_alias(p, AliasData("N-a", ("N-b", "N-zzz"))),
        ["graph.alias_targets"],
    ),
    ("alias to itself", lambda s, p: s.add_alias(p, AliasData("N-a", ("N-a",))), ["graph.alias_targets"]),
    ("alias to REMOVED", lambda s, p: s.add_alias(p, AliasData("N-a", ("N-gone",))), ["graph.alias_targets"]),
]


@pytest.mark.parametrize(("what", "write", "expected"), BAD_WRITES, ids=[w[0] for w in BAD_WRITES])
def test_bad_writes_are_refused_and_write_nothing(
    loaded: tuple[Any, int], what: str, write: Callable[[Any, int], None], expected: list[str]
) -> None:
    store, pid = loaded
    before_counts = store.counts(pid)

    with pytest.raises(RuleViolation) as exc:
        write(store, pid)

    assert rules(exc) == expected
    assert store.counts(pid) == before_counts
    assert store.export_graph(pid) == sample_graph()


def test_a_refused_overwrite_keeps_the_stored_node(loaded: tuple[Any, int]) -> None:
    store, pid = loaded
    node = store.get_node(pid, "N-a")

    with pytest.raises(RuleViolation):
        store.upsert_node(pid, replace(node, title="", labels=("L00002",)))

    assert store.get_node(pid, "N-a") == node


# --- project isolation ----------------------------------------------------------------------------


def test_two_projects_graphs_never_mix(
    store: Any, project: Any, other_project: Any, taxonomy: dict[str, str], other_taxonomy: dict[str, str]
) -> None:
    theirs = GraphData(
        nodes=(NodeData("N-a", "FAQ", "Their N-a", "theirs"), NodeData("N-z", "Info", "Only theirs", "z")),
        edges=(EdgeData("N-z", "N-a", "ELABORATES", 0.2),),
        aliases=(AliasData("N-z", ("N-a",), "theirs"),),
    )
    store.replace_graph(project.pk, sample_graph())
    store.replace_graph(other_project.pk, theirs)

    assert store.export_graph(project.pk) == sample_graph()
    assert store.export_graph(other_project.pk) == theirs
    assert store.get_node(other_project.pk, "N-a").title == "Their N-a"
    assert store.neighbours(other_project.pk, "N-a", "both") == [EdgeData("N-z", "N-a", "ELABORATES", 0.2)]
    assert store.resolve_alias(project.pk, "N-z") == ("N-z",)
    assert store.counts(other_project.pk)["nodes"] == 2

    with pytest.raises(RuleViolation) as exc:
        store.add_edge(other_project.pk, EdgeData("N-z", "N-b", "LEADS_TO"))
    assert rules(exc) == ["graph.edge_endpoint_exists"]

    store.replace_graph(other_project.pk, GraphData())
    assert store.export_graph(project.pk) == sample_graph()
