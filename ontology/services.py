"""Writes of the ontology graph draft by people: nodes, edges, aliases — audited, validated.

Experts edit the *draft* (the graph store); nothing here touches a release. The store validates
every write with the graph rules and writes nothing on a violation; this module adds the audit
trail and bumps the project's knowledge revision so the next release picks the change up.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from arg_platform.audit import Actor, audit_record
from arg_platform.errors import NotFound, RuleViolation, Violation
from projects.models import Project
from taxonomy.services import knowledge_changed

from .store import get_graph_store
from .store.port import AliasData, EdgeData, NodeData
from .store.unit_of_work import graph_atomic


def _node_dict(node: NodeData | None) -> dict[str, Any]:
    if node is None:
        return {}
    data = asdict(node)
    data.pop("embedding", None)
    return data


def _changed(before: dict[str, Any], after: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    keys = [k for k in after if before.get(k) != after.get(k)]
    return {k: before.get(k) for k in keys}, {k: after.get(k) for k in keys}


@graph_atomic()
def node_create(*, project: Project, actor: Actor, node: NodeData) -> NodeData:
    """Add a node to the draft graph (refused when the id is taken)."""
    store = get_graph_store()
    if store.get_node(project.pk, node.node_id) is not None:
        raise RuleViolation(Violation("graph.node_unique", f"node {node.node_id} already exists", "node_id"))
    store.upsert_node(project.pk, node)
    audit_record(
        project=project,
        actor=actor,
        action="create",
        object_type="node",
        object_key=node.node_id,
        after=_node_dict(node),
    )
    knowledge_changed(project=project)
    return node


@graph_atomic()
def node_update(*, project: Project, actor: Actor, node_id: str, changes: dict[str, Any]) -> NodeData:
    """Edit a draft node's fields (title, chunk, type, risk, attachments, Action fields)."""
    store = get_graph_store()
    current = store.get_node(project.pk, node_id)
    if current is None:
        raise NotFound(f"node {node_id} not found")
    forbidden = set(changes) & {"node_id", "status", "status_reason", "embedding"}
    if forbidden:
        raise RuleViolation(
            Violation(
                "graph.node_update",
                f"cannot change {', '.join(sorted(forbidden))} here",
                sorted(forbidden)[0],
            )
        )
    updated = replace(current, **changes)
    store.upsert_node(project.pk, updated)
    before, after = _changed(_node_dict(current), _node_dict(updated))
    audit_record(
        project=project,
        actor=actor,
        action="update",
        object_type="node",
        object_key=node_id,
        before=before,
        after=after,
    )
    knowledge_changed(project=project)
    return updated


@graph_atomic()
def node_set_status(*, project: Project, actor: Actor, node_id: str, status: str, reason: str) -> NodeData:
    """Move a node along ACTIVE → DEPRECATED → REMOVED (the store enforces the lifecycle)."""
    store = get_graph_store()
    current = store.get_node(project.pk, node_id)
    if current is None:
        raise NotFound(f"node {node_id} not found")
    store.set_node_status(project.pk, node_id, status, reason)
    audit_record(
        project=project,
        actor=actor,
        action="status",
        object_type="node",
        object_key=node_id,
        before={"status": current.status},
        after={"status": status},
        reason=reason,
    )
    knowledge_changed(project=project)
    node = store.get_node(project.pk, node_id)
    assert node is not None
    return node


@graph_atomic()
def edge_add(*, project: Project, actor: Actor, edge: EdgeData) -> EdgeData:
    get_graph_store().add_edge(project.pk, edge)
    audit_record(
        project=project,
        actor=actor,
        action="create",
        object_type="edge",
        object_key="|".join(edge.key),
        after={"weight": edge.weight, "semantics": edge.semantics},
    )
    knowledge_changed(project=project)
    return edge


@graph_atomic()
def edge_update(
    *, project: Project, actor: Actor, source: str, target: str, type: str, weight: float, semantics: str
) -> EdgeData:
    """Change an edge's weight or semantics (remove + add in one transaction, re-validated)."""
    store = get_graph_store()
    existing = [e for e in store.neighbours(project.pk, source, "out", (type,)) if e.target == target]
    if not existing:
        raise NotFound(f"edge {source} -[{type}]-> {target} not found")
    edge = EdgeData(source=source, target=target, type=type, weight=weight, semantics=semantics)
    store.remove_edge(project.pk, source, target, type)
    store.add_edge(project.pk, edge)
    audit_record(
        project=project,
        actor=actor,
        action="update",
        object_type="edge",
        object_key="|".join(edge.key),
        before={"weight": existing[0].weight, "semantics": existing[0].semantics},
        after={"weight": weight, "semantics": semantics},
    )
    knowledge_changed(project=project)
    return edge


@graph_atomic()
def edge_remove(
    *, project: Project, actor: Actor, source: str, target: str, type: str, reason: str = ""
) -> None:
    get_graph_store().remove_edge(project.pk, source, target, type)
    audit_record(
        project=project,
        actor=actor,
        action="delete",
        object_type="edge",
        object_key=f"{source}|{target}|{type}",
        reason=reason,
    )
    knowledge_changed(project=project)


@graph_atomic()
def alias_add(*, project: Project, actor: Actor, alias: AliasData) -> AliasData:
    """Record a split/merge redirection A → {B, C} (used by alias-safe MemoryRead)."""
    get_graph_store().add_alias(project.pk, alias)
    audit_record(
        project=project,
        actor=actor,
        action="alias",
        object_type="node",
        object_key=alias.source,
        after={"targets": list(alias.targets)},
        reason=alias.reason,
    )
    knowledge_changed(project=project)
    return alias
