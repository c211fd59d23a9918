"""Reading the graph from the active release (what clients see) or from the draft (what experts edit).

Both sources answer with the store's frozen dataclasses, so the API and the UI render them the same
way. A *neighbourhood* is the set of nodes within ``depth`` hops of a centre (edges in the chosen
direction), capped at ``limit`` nodes, with every edge among them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from arg_platform.errors import NotFound
from projects.models import Project

from .graph_arrays import NODE_TYPE_CODE, STATUS_CODE
from .graph_snapshot import GraphSnapshot
from .snapshot_registry import pin_snapshot
from .store import get_graph_store
from .store.port import Direction, EdgeData, NodeData, ParameterSpec

RELEASE = "release"
DRAFT = "draft"


@dataclass(frozen=True)
class Neighbourhood:
    center: str
    source: str
    nodes: tuple[NodeData, ...]
    edges: tuple[EdgeData, ...]


def _from_snapshot(snapshot: GraphSnapshot, position: int) -> NodeData:
    view = snapshot.node(position)
    return NodeData(
        node_id=view.node_id,
        type=view.type,
        title=view.title,
        chunk=view.chunk,
        risk=view.risk,
        status=view.status,
        labels=view.labels,
        clusters=view.clusters,
        preconditions=tuple(view.extras.get("preconditions", ())),
        parameters=tuple(ParameterSpec(**p) for p in view.extras.get("parameters", ())),
        handler=view.extras.get("handler", ""),
        status_reason=view.extras.get("status_reason", ""),
        staff_notes=view.extras.get("staff_notes", ""),
        description=view.extras.get("description", ""),
        products=tuple(view.extras.get("products", ())),
    )


def _snapshot(project: Project) -> GraphSnapshot:
    snapshot = pin_snapshot(project.pk)
    if snapshot is None:
        raise NotFound(
            f"project {project.slug} has no active release yet (publish one, or read ?source=draft)"
        )
    return snapshot


def source_label(project: Project, source: str) -> str:
    return DRAFT if source == DRAFT else f"release v{_snapshot(project).version}"


def read_node(*, project: Project, node_id: str, source: str = RELEASE) -> NodeData:
    if source == DRAFT:
        node = get_graph_store().get_node(project.pk, node_id)
    else:
        snapshot = _snapshot(project)
        position = snapshot.position.get(node_id)
        node = _from_snapshot(snapshot, position) if position is not None else None
    if node is None:
        raise NotFound(f"node {node_id} not found in the {source}")
    return node


def read_nodes(
    *,
    project: Project,
    source: str = RELEASE,
    type: str | None = None,
    status: str | None = None,
    label: str | None = None,
    search: str | None = None,
    offset: int = 0,
    limit: int = 50,
) -> tuple[list[NodeData], int]:
    if source == DRAFT:
        return get_graph_store().list_nodes(
            project.pk, type=type, status=status, label=label, search=search, offset=offset, limit=limit
        )
    snapshot = _snapshot(project)
    mask = np.ones(snapshot.node_count, dtype=bool)
    if type:
        mask &= snapshot.node_type == (NODE_TYPE_CODE.get(type, -1))
    if status:
        mask &= snapshot.status == (STATUS_CODE.get(status, -1))
    candidates = np.flatnonzero(mask)
    if label:
        candidates = np.intersect1d(candidates, snapshot.label_nodes.get(label, np.zeros(0, dtype=np.int32)))
    needle = (search or "").lower()
    matches = [
        int(i)
        for i in candidates
        if not needle or needle in snapshot.titles[i].lower() or needle in snapshot.node_ids[i].lower()
    ]
    return [_from_snapshot(snapshot, i) for i in matches[offset : offset + limit]], len(matches)


def _edges_of(project: Project, source: str, node_id: str, direction: Direction) -> list[EdgeData]:
    if source == DRAFT:
        return get_graph_store().neighbours(project.pk, node_id, direction)
    snapshot = _snapshot(project)
    position = snapshot.position[node_id]
    out: list[EdgeData] = []
    if direction in ("out", "both"):
        idx, typ, wt = snapshot.neighbours(position, direction="out")
        out += [
            EdgeData(node_id, snapshot.node_ids[int(j)], snapshot.edge_type_name(k), round(float(w), 6))
            for j, k, w in zip(idx, typ, wt, strict=True)
        ]
    if direction in ("in", "both"):
        idx, typ, wt = snapshot.neighbours(position, direction="in")
        out += [
            EdgeData(snapshot.node_ids[int(j)], node_id, snapshot.edge_type_name(k), round(float(w), 6))
            for j, k, w in zip(idx, typ, wt, strict=True)
        ]
    return out


def read_neighbourhood(
    *,
    project: Project,
    node_id: str,
    source: str = RELEASE,
    direction: Direction = "both",
    depth: int = 1,
    limit: int = 40,
) -> Neighbourhood:
    """Breadth-first from ``node_id`` up to ``depth`` hops, at most ``limit`` nodes."""
    center = read_node(project=project, node_id=node_id, source=source)
    order = [center.node_id]
    seen = {center.node_id}
    edges: dict[tuple[str, str, str], EdgeData] = {}
    queue = deque([(center.node_id, 0)])
    while queue:
        current, dist = queue.popleft()
        if dist >= depth:
            continue
        for edge in _edges_of(project, source, current, direction):
            other = edge.target if edge.source == current else edge.source
            if other not in seen:
                if len(seen) >= limit:
                    continue
                seen.add(other)
                order.append(other)
                queue.append((other, dist + 1))
            edges[edge.key] = edge
    nodes = tuple(read_node(project=project, node_id=n, source=source) for n in order)
    kept = tuple(e for k, e in sorted(edges.items()) if e.source in seen and e.target in seen)
    return Neighbourhood(center=center.node_id, source=source_label(project, source), nodes=nodes, edges=kept)
