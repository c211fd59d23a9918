"""Checks every graph store runs before it writes, so both backends refuse the same bad input.

Backends call these *inside* their write transaction, after reading the state they need, so a check
and the write it guards see the same graph. Each raises ``RuleViolation`` and the transaction rolls
back: nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from arg_platform.errors import NotFound, RuleViolation, Violation
from ontology.validator import (
    alias_violations,
    edge_violations,
    node_violations,
    status_change_violations,
    validate_graph,
)
from projects.models import Project
from taxonomy.selectors import taxonomy_view

from .port import DIRECTIONS, AliasData, EdgeData, GraphData, NodeData

REPLACE_BATCH_SIZE = 1000


@dataclass(frozen=True)
class TaxonomyRefs:
    """What attachments may reference in a project: LabelID → label status, and cluster keys."""

    labels: Mapping[str, str]
    clusters: frozenset[str]


def taxonomy_refs(project_id: int) -> TaxonomyRefs:
    """The project's labels and clusters, read through the taxonomy selectors (Django database)."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        raise NotFound(f"project {project_id} not found")
    view = taxonomy_view(project=project)
    return TaxonomyRefs(
        labels={k: r.status for k, r in view.labels.items()}, clusters=frozenset(view.clusters)
    )


def _raise_if(violations: list[Violation]) -> None:
    if violations:
        raise RuleViolation(violations)


def check_graph(graph: GraphData, refs: TaxonomyRefs) -> None:
    """A whole graph about to replace a project's graph."""
    _raise_if(validate_graph(graph, labels=refs.labels, clusters=refs.clusters))


def check_node(
    node: NodeData, refs: TaxonomyRefs, *, current_status: str | None, touching_edges: int
) -> None:
    """A node about to be created (``current_status`` None) or overwritten."""
    violations = node_violations(node, labels=refs.labels, clusters=refs.clusters)
    if current_status is not None and not violations:
        violations = status_change_violations(
            node.node_id,
            current=current_status,
            new=node.status,
            reason=node.status_reason,
            touching_edges=touching_edges,
        )
    elif current_status is None and not violations and node.status == "REMOVED":
        violations = [
            Violation(
                "graph.status_transition", f"node {node.node_id!r}: a new node cannot start REMOVED", "status"
            )
        ]
    _raise_if(violations)


def check_status(
    node_id: str, *, current_status: str | None, status: str, reason: str, touching_edges: int
) -> None:
    if current_status is None:
        raise NotFound(f"node {node_id!r} not found")
    _raise_if(
        status_change_violations(
            node_id, current=current_status, new=status, reason=reason, touching_edges=touching_edges
        )
    )


def check_edge(edge: EdgeData, *, statuses: Mapping[str, str], exists: bool) -> None:
    """An edge about to be added; ``statuses`` holds the stored status of its two ends."""
    violations = edge_violations(edge, statuses=statuses)
    if exists:
        violations.append(
            Violation(
                "graph.edge_unique",
                f"edge {edge.source} -[{edge.type}]-> {edge.target} already exists",
                "type",
            )
        )
    _raise_if(violations)


def check_alias(alias: AliasData, *, statuses: Mapping[str, str]) -> None:
    """An alias row about to be written; ``statuses`` holds the stored status of source and targets."""
    _raise_if(alias_violations(alias, statuses=statuses))


def check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise RuleViolation(
            Violation(
                "graph.direction", f"direction must be one of out, in, both, not {direction!r}", "direction"
            )
        )


def batches(rows: list[dict[str, object]], size: int = REPLACE_BATCH_SIZE) -> list[list[dict[str, object]]]:
    return [rows[i : i + size] for i in range(0, len(rows), size)]
