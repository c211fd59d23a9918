"""Column arrays of a graph: the frozen form a release stores and a snapshot loads.

``GraphArrays`` holds one numpy column per node attribute and per edge attribute, with nodes in
``node_id`` order and edges as (source index, target index, type code, weight). It converts from the
store's ``GraphData`` once at publication and serializes to a single ``.npz`` blob, so loading a
release never builds hundreds of thousands of Python edge objects.
"""

from __future__ import annotations

import hashlib
import io
import json
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from arg_platform.vocabulary import EDGE_TYPES, NODE_TYPES, NodeStatus, RiskLevel

from .store.port import AliasData, EdgeData, GraphData, NodeData, parameter_as_json, parameter_from_json

NODE_TYPE_NAMES: tuple[str, ...] = tuple(sorted(NODE_TYPES))
EDGE_TYPE_NAMES: tuple[str, ...] = tuple(sorted(EDGE_TYPES))
RISK_NAMES: tuple[str, ...] = tuple(r.value for r in RiskLevel)
STATUS_NAMES: tuple[str, ...] = tuple(s.value for s in NodeStatus)
NODE_TYPE_CODE = {name: i for i, name in enumerate(NODE_TYPE_NAMES)}
EDGE_TYPE_CODE = {name: i for i, name in enumerate(EDGE_TYPE_NAMES)}
RISK_CODE = {name: i for i, name in enumerate(RISK_NAMES)}
STATUS_CODE = {name: i for i, name in enumerate(STATUS_NAMES)}


@dataclass(frozen=True, eq=False)
class GraphArrays:
    """A graph as columns. ``extras`` keeps per-node JSON (attachments, Action fields, reasons)."""

    node_ids: tuple[str, ...]
    node_type: np.ndarray  # int8 codes into NODE_TYPE_NAMES
    risk: np.ndarray  # int8 codes into RISK_NAMES
    status: np.ndarray  # int8 codes into STATUS_NAMES
    titles: tuple[str, ...]
    chunks: tuple[str, ...]
    labels: tuple[tuple[str, ...], ...]
    clusters: tuple[tuple[str, ...], ...]
    extras: tuple[dict[str, Any], ...]  # Action fields, status_reason, staff texts, products
    edge_src: np.ndarray  # int32 node indices
    edge_dst: np.ndarray  # int32
    edge_type: np.ndarray  # int8 codes into EDGE_TYPE_NAMES
    edge_weight: np.ndarray  # float32
    edge_semantics: tuple[str, ...]
    aliases: tuple[tuple[str, tuple[str, ...], str], ...]

    @property
    def node_count(self) -> int:
        return len(self.node_ids)

    @property
    def edge_count(self) -> int:
        return int(self.edge_src.shape[0])


def graph_to_arrays(graph: GraphData) -> GraphArrays:
    nodes = sorted(graph.nodes, key=lambda n: n.node_id)
    index = {n.node_id: i for i, n in enumerate(nodes)}
    edges = sorted(graph.edges, key=lambda e: (e.source, e.target, e.type))
    return GraphArrays(
        node_ids=tuple(n.node_id for n in nodes),
        node_type=np.fromiter((NODE_TYPE_CODE[n.type] for n in nodes), dtype=np.int8, count=len(nodes)),
        risk=np.fromiter((RISK_CODE[n.risk] for n in nodes), dtype=np.int8, count=len(nodes)),
        status=np.fromiter((STATUS_CODE[n.status] for n in nodes), dtype=np.int8, count=len(nodes)),
        titles=tuple(n.title for n in nodes),
        chunks=tuple(n.chunk for n in nodes),
        labels=tuple(tuple(n.labels) for n in nodes),
        clusters=tuple(tuple(n.clusters) for n in nodes),
        extras=tuple(_extras(n) for n in nodes),
        edge_src=np.fromiter((index[e.source] for e in edges), dtype=np.int32, count=len(edges)),
        edge_dst=np.fromiter((index[e.target] for e in edges), dtype=np.int32, count=len(edges)),
        edge_type=np.fromiter((EDGE_TYPE_CODE[e.type] for e in edges), dtype=np.int8, count=len(edges)),
        edge_weight=np.fromiter((e.weight for e in edges), dtype=np.float32, count=len(edges)),
        edge_semantics=tuple(e.semantics for e in edges),
        aliases=tuple(sorted((a.source, tuple(a.targets), a.reason) for a in graph.aliases)),
    )


def _extras(node: NodeData) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if node.preconditions:
        out["preconditions"] = list(node.preconditions)
    if node.parameters:
        out["parameters"] = [parameter_as_json(p) for p in node.parameters]
    if node.handler:
        out["handler"] = node.handler
    if node.status_reason:
        out["status_reason"] = node.status_reason
    if node.staff_notes:
        out["staff_notes"] = node.staff_notes
    if node.description:
        out["description"] = node.description
    if node.products:
        out["products"] = list(node.products)
    return out


def arrays_to_graph(arrays: GraphArrays) -> GraphData:
    """Back to the store's dataclasses (for diffs and re-import; not used on the hot path)."""
    nodes = tuple(
        NodeData(
            node_id=node_id,
            type=NODE_TYPE_NAMES[int(arrays.node_type[i])],
            title=arrays.titles[i],
            chunk=arrays.chunks[i],
            risk=RISK_NAMES[int(arrays.risk[i])],
            status=STATUS_NAMES[int(arrays.status[i])],
            labels=arrays.labels[i],
            clusters=arrays.clusters[i],
            preconditions=tuple(arrays.extras[i].get("preconditions", ())),
            parameters=tuple(parameter_from_json(p) for p in arrays.extras[i].get("parameters", ())),
            handler=arrays.extras[i].get("handler", ""),
            status_reason=arrays.extras[i].get("status_reason", ""),
            staff_notes=arrays.extras[i].get("staff_notes", ""),
            description=arrays.extras[i].get("description", ""),
            products=tuple(arrays.extras[i].get("products", ())),
        )
        for i, node_id in enumerate(arrays.node_ids)
    )
    edges = tuple(
        EdgeData(
            source=arrays.node_ids[int(s)],
            target=arrays.node_ids[int(t)],
            type=EDGE_TYPE_NAMES[int(k)],
            weight=round(float(w), 6),
            semantics=sem,
        )
        for s, t, k, w, sem in zip(
            arrays.edge_src,
            arrays.edge_dst,
            arrays.edge_type,
            arrays.edge_weight,
            arrays.edge_semantics,
            strict=True,
        )
    )
    aliases = tuple(AliasData(source=s, targets=t, reason=r) for s, t, r in arrays.aliases)
    return GraphData(nodes=nodes, edges=edges, aliases=aliases)


def _json_bytes(value: Any) -> np.ndarray:
    raw = zlib.compress(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), 6)
    return np.frombuffer(raw, dtype=np.uint8)


def _json_load(array: np.ndarray) -> Any:
    return json.loads(zlib.decompress(array.tobytes()).decode("utf-8"))


def bundle_members(
    *, arrays: GraphArrays, matrices: dict[str, np.ndarray], documents: dict[str, Any]
) -> dict[str, np.ndarray]:
    """Every member of a release bundle by name: graph columns, named matrices, named JSON documents."""
    members: dict[str, np.ndarray] = {
        "node_type": arrays.node_type,
        "risk": arrays.risk,
        "status": arrays.status,
        "edge_src": arrays.edge_src,
        "edge_dst": arrays.edge_dst,
        "edge_type": arrays.edge_type,
        "edge_weight": arrays.edge_weight,
        "nodes_json": _json_bytes(
            {
                "ids": list(arrays.node_ids),
                "titles": list(arrays.titles),
                "chunks": list(arrays.chunks),
                "labels": [list(x) for x in arrays.labels],
                "clusters": [list(x) for x in arrays.clusters],
                "extras": list(arrays.extras),
                "semantics": list(arrays.edge_semantics),
                "aliases": [[s, list(t), r] for s, t, r in arrays.aliases],
            }
        ),
    }
    for name, matrix in sorted(matrices.items()):
        members[f"mat_{name}"] = np.ascontiguousarray(matrix, dtype=np.float32)
    for name, document in sorted(documents.items()):
        members[f"doc_{name}"] = _json_bytes(document)
    return members


def bundle_checksum(members: dict[str, np.ndarray]) -> str:
    """SHA-256 over member names, dtypes, shapes and bytes (zip timestamps play no part)."""
    digest = hashlib.sha256()
    for name in sorted(members):
        array = np.ascontiguousarray(members[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def bundle_dump(members: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    # numpy's stub: a ** of arrays might name savez's allow_pickle (bool); array names never do
    np.savez(buffer, **members)  # type: ignore[arg-type]
    return buffer.getvalue()


@dataclass(frozen=True, eq=False)
class Bundle:
    arrays: GraphArrays
    matrices: dict[str, np.ndarray]
    documents: dict[str, Any]
    checksum: str


def bundle_load(blob: bytes) -> Bundle:
    with np.load(io.BytesIO(blob), allow_pickle=False) as data:
        meta = _json_load(data["nodes_json"])
        arrays = GraphArrays(
            node_ids=tuple(meta["ids"]),
            node_type=data["node_type"],
            risk=data["risk"],
            status=data["status"],
            titles=tuple(meta["titles"]),
            chunks=tuple(meta["chunks"]),
            labels=tuple(tuple(x) for x in meta["labels"]),
            clusters=tuple(tuple(x) for x in meta["clusters"]),
            extras=tuple(meta["extras"]),
            edge_src=data["edge_src"],
            edge_dst=data["edge_dst"],
            edge_type=data["edge_type"],
            edge_weight=data["edge_weight"],
            edge_semantics=tuple(meta["semantics"]),
            aliases=tuple((s, tuple(t), r) for s, t, r in meta["aliases"]),
        )
        matrices = {name[4:]: data[name] for name in data.files if name.startswith("mat_")}
        documents = {name[4:]: _json_load(data[name]) for name in data.files if name.startswith("doc_")}
        checksum = bundle_checksum({name: data[name] for name in data.files})
    return Bundle(arrays=arrays, matrices=matrices, documents=documents, checksum=checksum)
