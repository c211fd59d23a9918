"""GraphSnapshot: the immutable in-memory read model of one release, what a request is served from.

The online path pins one snapshot for a whole request. Everything in it is frozen: numpy arrays are
made read-only, mappings are ``MappingProxyType``. Adjacency is CSR (compressed sparse rows) in both
directions, with the edge type code and weight of every entry, so a neighbourhood lookup is two array
slices. Node attributes are parallel arrays indexed by node position (``node_ids`` order).

Terms:
* *position* — the integer index of a node in this snapshot (stable only within the snapshot);
* *attachments* — node ↔ label (stable LabelIDs) and node ↔ cluster (keys), in both directions;
* *structural signals* — Louvain communities, Jaccard (Node Similarity) and SimRank top-k, computed at
  publication and frozen with the release.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from .graph_arrays import (
    EDGE_TYPE_CODE,
    EDGE_TYPE_NAMES,
    NODE_TYPE_NAMES,
    RISK_NAMES,
    STATUS_NAMES,
    GraphArrays,
)


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Csr:
    """Compressed sparse rows: the entries of row ``i`` are ``[indptr[i], indptr[i+1])``."""

    indptr: np.ndarray
    indices: np.ndarray
    types: np.ndarray
    weights: np.ndarray

    @staticmethod
    def build(n: int, rows: np.ndarray, cols: np.ndarray, types: np.ndarray, weights: np.ndarray) -> Csr:
        order = np.lexsort((cols, rows))
        counts = np.bincount(rows, minlength=n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return Csr(
            _frozen(indptr),
            _frozen(cols[order].astype(np.int32, copy=False)),
            _frozen(types[order].astype(np.int8, copy=False)),
            _frozen(weights[order].astype(np.float32, copy=False)),
        )

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        start, end = self.indptr[i], self.indptr[i + 1]
        return self.indices[start:end], self.types[start:end], self.weights[start:end]

    def degree(self) -> np.ndarray:
        return np.diff(self.indptr)


@dataclass(frozen=True)
class NodeView:
    """One node of a snapshot, as the online path reads it."""

    position: int
    node_id: str
    type: str
    title: str
    chunk: str
    risk: str
    status: str
    labels: tuple[str, ...]
    clusters: tuple[str, ...]
    extras: Mapping[str, Any]


@dataclass(frozen=True, eq=False)
class GraphSnapshot:
    """The frozen read model of one project's release."""

    project_id: int
    release_id: int | None
    version: int
    checksum: str
    node_ids: tuple[str, ...]
    position: Mapping[str, int]
    node_type: np.ndarray
    risk: np.ndarray
    status: np.ndarray
    titles: tuple[str, ...]
    chunks: tuple[str, ...]
    node_labels: tuple[tuple[str, ...], ...]
    node_clusters: tuple[tuple[str, ...], ...]
    extras: tuple[Mapping[str, Any], ...]
    label_nodes: Mapping[str, np.ndarray]
    cluster_nodes: Mapping[str, np.ndarray]
    out_edges: Csr
    in_edges: Csr
    embeddings: np.ndarray | None
    aliases: Mapping[str, tuple[str, ...]]
    community: np.ndarray | None = None
    documents: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def node_count(self) -> int:
        return len(self.node_ids)

    @property
    def edge_count(self) -> int:
        return int(self.out_edges.indices.shape[0])

    def node(self, node_id_or_position: str | int) -> NodeView:
        i = (
            self.position[node_id_or_position]
            if isinstance(node_id_or_position, str)
            else node_id_or_position
        )
        return NodeView(
            position=i,
            node_id=self.node_ids[i],
            type=NODE_TYPE_NAMES[int(self.node_type[i])],
            title=self.titles[i],
            chunk=self.chunks[i],
            risk=RISK_NAMES[int(self.risk[i])],
            status=STATUS_NAMES[int(self.status[i])],
            labels=self.node_labels[i],
            clusters=self.node_clusters[i],
            extras=self.extras[i],
        )

    def neighbours(
        self, position: int, *, direction: str = "out", edge_types: Iterable[str] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, edge type codes and weights of a node's neighbours (read-only array views)."""
        if direction == "both":
            parts = [self.out_edges.row(position), self.in_edges.row(position)]
            idx, typ, wt = (np.concatenate([p[k] for p in parts]) for k in range(3))
        else:
            idx, typ, wt = (self.out_edges if direction == "out" else self.in_edges).row(position)
        if edge_types is not None:
            wanted = np.fromiter((EDGE_TYPE_CODE[t] for t in edge_types), dtype=np.int8)
            mask = np.isin(typ, wanted)
            idx, typ, wt = idx[mask], typ[mask], wt[mask]
        return idx, typ, wt

    def edge_type_name(self, code: int) -> str:
        return EDGE_TYPE_NAMES[int(code)]

    def resolve_alias(self, node_id: str) -> tuple[str, ...]:
        """Follow the split redirection table (A → {B, C}), chains included, cycle-safe."""
        from .store.port import resolve_alias_chain

        return resolve_alias_chain(self.aliases, node_id)


def snapshot_build(
    arrays: GraphArrays,
    *,
    project_id: int,
    release_id: int | None,
    version: int,
    checksum: str,
    embeddings: np.ndarray | None = None,
    community: np.ndarray | None = None,
    documents: Mapping[str, Any] | None = None,
) -> GraphSnapshot:
    """Build the frozen read model from graph columns (vectorized; no per-edge Python objects)."""
    n = arrays.node_count
    out_edges = Csr.build(n, arrays.edge_src, arrays.edge_dst, arrays.edge_type, arrays.edge_weight)
    in_edges = Csr.build(n, arrays.edge_dst, arrays.edge_src, arrays.edge_type, arrays.edge_weight)
    label_lists: dict[str, list[int]] = {}
    cluster_lists: dict[str, list[int]] = {}
    for i, labels in enumerate(arrays.labels):
        for label_id in labels:
            label_lists.setdefault(label_id, []).append(i)
    for i, clusters in enumerate(arrays.clusters):
        for key in clusters:
            cluster_lists.setdefault(key, []).append(i)
    if embeddings is not None:
        if embeddings.shape[0] != n:
            raise ValueError(f"embeddings have {embeddings.shape[0]} rows for {n} nodes")
        embeddings = _frozen(np.ascontiguousarray(embeddings, dtype=np.float32))
    aliases: dict[str, tuple[str, ...]] = {}
    for source, targets, _reason in arrays.aliases:
        aliases[source] = tuple(dict.fromkeys(aliases.get(source, ()) + tuple(targets)))
    return GraphSnapshot(
        project_id=project_id,
        release_id=release_id,
        version=version,
        checksum=checksum,
        node_ids=arrays.node_ids,
        position=MappingProxyType({node_id: i for i, node_id in enumerate(arrays.node_ids)}),
        node_type=_frozen(np.array(arrays.node_type, dtype=np.int8)),
        risk=_frozen(np.array(arrays.risk, dtype=np.int8)),
        status=_frozen(np.array(arrays.status, dtype=np.int8)),
        titles=arrays.titles,
        chunks=arrays.chunks,
        node_labels=arrays.labels,
        node_clusters=arrays.clusters,
        extras=tuple(MappingProxyType(dict(e)) for e in arrays.extras),
        label_nodes=MappingProxyType(
            {k: _frozen(np.array(v, dtype=np.int32)) for k, v in label_lists.items()}
        ),
        cluster_nodes=MappingProxyType(
            {k: _frozen(np.array(v, dtype=np.int32)) for k, v in cluster_lists.items()}
        ),
        out_edges=out_edges,
        in_edges=in_edges,
        embeddings=embeddings,
        aliases=MappingProxyType(aliases),
        community=_frozen(np.array(community, dtype=np.int32)) if community is not None else None,
        documents=MappingProxyType(dict(documents or {})),
    )
