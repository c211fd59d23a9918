"""The graph sections of a knowledge pack (nodes, edges, aliases) ↔ the store's frozen dataclasses."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .store.port import AliasData, EdgeData, GraphData, NodeData, parameter_as_json, parameter_from_json


def _tuple_of_str(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what} must be a list of strings")
    return tuple(value)


def node_from_pack(item: dict[str, Any]) -> NodeData:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        raise ValueError("every node needs a string 'id'")
    params = item.get("parameters") or []
    if not isinstance(params, list) or not all(isinstance(p, dict) for p in params):
        raise ValueError(f"node {item['id']}: parameters must be a list of mappings")
    return NodeData(
        node_id=item["id"],
        type=str(item.get("type", "")),
        title=str(item.get("title", "")),
        chunk=str(item.get("chunk", "")),
        staff_notes=str(item.get("staff_notes") or ""),
        description=str(item.get("description") or ""),
        risk=str(item.get("risk", "low")),
        status=str(item.get("status", "ACTIVE")),
        labels=_tuple_of_str(item.get("labels"), f"node {item['id']}: labels"),
        clusters=_tuple_of_str(item.get("clusters"), f"node {item['id']}: clusters"),
        preconditions=_tuple_of_str(item.get("preconditions"), f"node {item['id']}: preconditions"),
        parameters=tuple(parameter_from_json(p, required=False) for p in params),
        handler=str(item.get("handler") or ""),
        status_reason=str(item.get("status_reason") or ""),
        products=_tuple_of_str(item.get("products"), f"node {item['id']}: products"),
    )


def edge_from_pack(item: dict[str, Any]) -> EdgeData:
    if not isinstance(item, dict):
        raise ValueError("every edge is a mapping")
    weight = item.get("weight", 1.0)
    if not isinstance(weight, int | float) or isinstance(weight, bool):
        raise ValueError(f"edge {item.get('source')}→{item.get('target')}: weight must be a number")
    return EdgeData(
        source=str(item.get("source", "")),
        target=str(item.get("target", "")),
        type=str(item.get("type", "")),
        weight=float(weight),
        semantics=str(item.get("semantics") or ""),
    )


def alias_from_pack(item: dict[str, Any]) -> AliasData:
    if not isinstance(item, dict):
        raise ValueError("every alias is a mapping")
    return AliasData(
        source=str(item.get("source", "")),
        targets=_tuple_of_str(item.get("targets"), "alias targets"),
        reason=str(item.get("reason") or ""),
    )


def graph_data_from_pack(nodes: Sequence[Any], edges: Sequence[Any], aliases: Sequence[Any]) -> GraphData:
    return GraphData(
        nodes=tuple(node_from_pack(n) for n in nodes),
        edges=tuple(edge_from_pack(e) for e in edges),
        aliases=tuple(alias_from_pack(a) for a in aliases),
    )


def graph_locations(
    nodes: Sequence[Any], edges: Sequence[Any], aliases: Sequence[Any], where: Callable[[str], str]
) -> dict[str, str]:
    """Map the validator's location keys to places in the pack file."""
    out: dict[str, str] = {}
    for i, n in enumerate(nodes):
        if isinstance(n, dict):
            out[f"node:{n.get('id')}"] = where(f"nodes[{i}]")
    for i, e in enumerate(edges):
        if isinstance(e, dict):
            out[f"edge:{e.get('source')}|{e.get('target')}|{e.get('type')}"] = where(f"edges[{i}]")
    for i, a in enumerate(aliases):
        if isinstance(a, dict):
            out[f"alias:{a.get('source')}"] = where(f"aliases[{i}]")
    return out


def node_to_pack(node: NodeData) -> dict[str, Any]:
    return {
        "id": node.node_id,
        "type": node.type,
        "title": node.title,
        "chunk": node.chunk,
        **({"staff_notes": node.staff_notes} if node.staff_notes else {}),
        **({"description": node.description} if node.description else {}),
        "risk": node.risk,
        "status": node.status,
        **({"status_reason": node.status_reason} if node.status_reason else {}),
        "labels": list(node.labels),
        "clusters": list(node.clusters),
        "preconditions": list(node.preconditions),
        "parameters": [parameter_as_json(p) for p in node.parameters],
        "handler": node.handler,
        **({"products": list(node.products)} if node.products else {}),
    }


def edge_to_pack(edge: EdgeData) -> dict[str, Any]:
    out: dict[str, Any] = {
        "source": edge.source,
        "target": edge.target,
        "type": edge.type,
        "weight": edge.weight,
    }
    if edge.semantics:
        out["semantics"] = edge.semantics
    return out


def alias_to_pack(alias: AliasData) -> dict[str, Any]:
    return {"source": alias.source, "targets": list(alias.targets), "reason": alias.reason}
