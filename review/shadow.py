"""Shadow releases: a candidate changeset applied in memory to a copy of the active release (§3 step C).

Replay never touches the draft or the active release. ``BaseRelease.load`` reads the active release's
bundle once per night; ``shadow_build`` applies a changeset to a copy of its graph and documents with
the same operation semantics as ``review.application`` (which writes the draft), then freezes the result
into a ``GraphSnapshot`` exactly as publication would — node vectors (re-embedded only for new or
rewritten nodes), label index and label vectors, structural signals, and the publish hooks (the
distilled label classifier) when the taxonomy changed. The snapshot has ``release_id=None`` and a
checksum of its own, so the per-release runtime caches of the online pipeline never mix it up with a
real release.

Violations the shadow exposes (graph validator, taxonomy validator) are returned, not raised: replay
scores them as ``Violations_taxo/ontology`` (§3.3.5).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from arg_platform.errors import Violation
from ontology.graph_arrays import GraphArrays, arrays_to_graph, bundle_load, graph_to_arrays
from ontology.snapshot import GraphSnapshot, snapshot_build
from ontology.store.port import AliasData, EdgeData, GraphData, NodeData
from ontology.validator import STATUS_TRANSITIONS, validate_graph

from .changeset import (
    NEW_LABEL_PREFIX,
    AliasSet,
    EdgeAdd,
    EdgeRemove,
    EdgeSetWeight,
    LabelAdd,
    LabelStatusSet,
    NodeAdd,
    NodeAttach,
    NodeContentSet,
    NodeDetach,
    NodeStatusSet,
    Op,
    changeset_fingerprint,
)

LABEL_TRANSITIONS: dict[str, frozenset[str]] = {
    "CANDIDATE": frozenset({"SHADOW", "ACTIVE", "DEPRECATED"}),
    "SHADOW": frozenset({"ACTIVE", "DEPRECATED", "CANDIDATE"}),
    "ACTIVE": frozenset({"DEPRECATED"}),
    "DEPRECATED": frozenset(),
}


@dataclass(frozen=True, eq=False)
class BaseRelease:
    """The active release a night works from: its bundle, its graph and its snapshot."""

    release: Any
    arrays: GraphArrays
    matrices: dict[str, np.ndarray]
    documents: dict[str, Any]
    checksum: str
    graph: GraphData
    snapshot: GraphSnapshot

    @cached_property
    def nodes(self) -> dict[str, NodeData]:
        return {n.node_id: n for n in self.graph.nodes}

    @classmethod
    def load(cls, release: Any) -> BaseRelease:
        from ontology.models import ReleaseBundle
        from ontology.releases import release_snapshot

        blob = ReleaseBundle.objects.values_list("blob", flat=True).get(release_id=release.pk)
        bundle = bundle_load(bytes(blob))
        return cls(
            release=release,
            arrays=bundle.arrays,
            matrices=dict(bundle.matrices),
            documents=dict(bundle.documents),
            checksum=bundle.checksum,
            graph=arrays_to_graph(bundle.arrays),
            snapshot=release_snapshot(release=release),
        )


class ChangesetConflict(Exception):
    """A changeset does not apply to the graph it was computed on (stale or contradictory)."""


@dataclass
class AppliedGraph:
    """A graph + taxonomy documents after a changeset, and what the application decided."""

    graph: GraphData
    documents: dict[str, Any]
    label_map: dict[str, str] = field(default_factory=dict)  # new:<ref> → LabelID
    taxonomy_changed: bool = False
    changed_nodes: set[str] = field(default_factory=set)


def _unique(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def _next_label_id(labels: list[dict[str, Any]]) -> str:
    numbers = [int(label["id"][1:]) for label in labels if label["id"][1:].isdigit()]
    return f"L{(max(numbers, default=0) + 1):05d}"


def apply_in_memory(graph: GraphData, documents: dict[str, Any], ops: tuple[Op, ...]) -> AppliedGraph:
    """Apply ``ops`` to copies of ``graph`` and ``documents`` (the semantics of ``review.application``).

    Raises ``ChangesetConflict`` when an operation cannot apply (a node to add exists with other
    content, an edge to reweight is missing, a lifecycle move is not allowed…).
    """
    nodes: dict[str, NodeData] = {n.node_id: n for n in graph.nodes}
    edges: dict[tuple[str, str, str], EdgeData] = {e.key: e for e in graph.edges}
    aliases: dict[str, AliasData] = {a.source: a for a in graph.aliases}
    labels: list[dict[str, Any]] = [dict(label) for label in documents.get("labels", [])]
    by_id = {label["id"]: label for label in labels}
    out = AppliedGraph(graph=graph, documents=documents)

    def resolve(label: str) -> str:
        if label.startswith(NEW_LABEL_PREFIX):
            if label not in out.label_map:
                raise ChangesetConflict(f"{label} is used before its label_add")
            return out.label_map[label]
        return label

    def node(node_id: str) -> NodeData:
        if node_id not in nodes:
            raise ChangesetConflict(f"node {node_id} does not exist")
        return nodes[node_id]

    for op in ops:
        if isinstance(op, LabelAdd):
            twin = next(
                (
                    lab
                    for lab in labels
                    if lab.get("parent") == op.parent
                    and lab["cluster"] == op.cluster
                    and lab["name"].strip().lower() == op.name.strip().lower()
                    and lab["status"] != "DEPRECATED"
                ),
                None,
            )
            if twin is not None:  # the same child already exists (applied before): reuse it
                out.label_map[NEW_LABEL_PREFIX + op.ref] = twin["id"]
                continue
            label_id = _next_label_id(labels)
            record = {
                "id": label_id,
                "name": op.name.strip(),
                "cluster": op.cluster,
                "parent": op.parent,
                "status": op.status,
                "description": op.description,
                "synonyms": list(op.synonyms),
                "examples": list(op.examples),
            }
            labels.append(record)
            by_id[label_id] = record
            out.label_map[NEW_LABEL_PREFIX + op.ref] = label_id
            out.taxonomy_changed = True
        elif isinstance(op, LabelStatusSet):
            label = by_id.get(op.label_id)
            if label is None:
                raise ChangesetConflict(f"label {op.label_id} does not exist")
            if label["status"] != op.status:
                if op.status not in LABEL_TRANSITIONS.get(label["status"], frozenset()):
                    raise ChangesetConflict(f"{op.label_id} cannot go from {label['status']} to {op.status}")
                label["status"] = op.status
                out.taxonomy_changed = True
        elif isinstance(op, NodeAdd):
            new = NodeData(
                node_id=op.node_id,
                type=op.type,
                title=op.title,
                chunk=op.chunk,
                risk=op.risk,
                labels=_unique([resolve(x) for x in op.labels]),
                clusters=_unique(list(op.clusters)),
                preconditions=op.preconditions,
                parameters=op.parameters,
                handler=op.handler,
            )
            current = nodes.get(op.node_id)
            if current is not None:
                if replace(current, embedding=None) != new:
                    raise ChangesetConflict(f"node {op.node_id} already exists with other content")
                continue
            nodes[op.node_id] = new
            out.changed_nodes.add(op.node_id)
        elif isinstance(op, NodeContentSet):
            current = node(op.node_id)
            nodes[op.node_id] = replace(
                current,
                title=op.title if op.title is not None else current.title,
                chunk=op.chunk if op.chunk is not None else current.chunk,
                risk=op.risk if op.risk is not None else current.risk,
                preconditions=op.preconditions if op.preconditions is not None else current.preconditions,
            )
            out.changed_nodes.add(op.node_id)
        elif isinstance(op, NodeAttach):
            current = node(op.node_id)
            nodes[op.node_id] = replace(
                current,
                labels=_unique([*current.labels, *(resolve(x) for x in op.labels)]),
                clusters=_unique([*current.clusters, *op.clusters]),
            )
        elif isinstance(op, NodeDetach):
            current = node(op.node_id)
            drop_labels = {resolve(x) for x in op.labels}
            nodes[op.node_id] = replace(
                current,
                labels=tuple(x for x in current.labels if x not in drop_labels),
                clusters=tuple(x for x in current.clusters if x not in set(op.clusters)),
            )
        elif isinstance(op, NodeStatusSet):
            current = node(op.node_id)
            if current.status != op.status:
                if op.status not in STATUS_TRANSITIONS.get(current.status, frozenset()):
                    raise ChangesetConflict(
                        f"node {op.node_id} cannot go from {current.status} to {op.status}"
                    )
                nodes[op.node_id] = replace(current, status=op.status, status_reason=op.reason)
        elif isinstance(op, EdgeAdd):
            node(op.source)
            node(op.target)
            edges[op.key] = EdgeData(op.source, op.target, op.type, op.weight, op.semantics)
        elif isinstance(op, EdgeSetWeight):
            current_edge = edges.get(op.key)
            if current_edge is None:
                raise ChangesetConflict(f"edge {'|'.join(op.key)} does not exist")
            edges[op.key] = replace(current_edge, weight=op.weight)
        elif isinstance(op, EdgeRemove):
            edges.pop(op.key, None)
        elif isinstance(op, AliasSet):
            for target in op.targets:
                node(target)
            aliases[op.source] = AliasData(op.source, tuple(op.targets), op.reason)
    out.graph = GraphData(
        nodes=tuple(sorted(nodes.values(), key=lambda n: n.node_id)),
        edges=tuple(sorted(edges.values(), key=lambda e: e.key)),
        aliases=tuple(sorted(aliases.values(), key=lambda a: a.source)),
    )
    out.documents = {**documents, "labels": labels}
    return out


def shadow_violations(applied: AppliedGraph) -> list[Violation]:
    """Graph and taxonomy validator findings on the shadow (``Violations_taxo/ontology``)."""
    from inference.release_runtime import taxonomy_view_from_documents
    from taxonomy.validator import validate_taxonomy

    documents = applied.documents
    labels = {label["id"]: label["status"] for label in documents.get("labels", [])}
    clusters = [c["key"] for c in documents.get("clusters", [])]
    violations = validate_graph(applied.graph, labels=labels, clusters=clusters)
    if applied.taxonomy_changed:
        violations += validate_taxonomy(taxonomy_view_from_documents(documents))
    return violations


@dataclass(frozen=True, eq=False)
class Shadow:
    """A candidate's frozen shadow release and what building it found."""

    snapshot: GraphSnapshot
    applied: AppliedGraph
    violations: tuple[Violation, ...]


def _node_vectors(base: BaseRelease, arrays: GraphArrays, changed: set[str], encoder: Any) -> np.ndarray:
    from ontology.releases import node_texts

    base_vectors = base.matrices.get("node_embeddings")
    base_rows = {node_id: i for i, node_id in enumerate(base.arrays.node_ids)}
    base_text = dict(zip(base.arrays.node_ids, node_texts(base.arrays), strict=True))
    texts = node_texts(arrays)
    out = np.zeros((arrays.node_count, encoder.dim), dtype=np.float32)
    missing: list[int] = []
    for i, (node_id, text) in enumerate(zip(arrays.node_ids, texts, strict=True)):
        row = base_rows.get(node_id)
        reusable = base_vectors is not None and row is not None and node_id not in changed
        if reusable and base_text[node_id] == text:
            out[i] = base_vectors[row]
        else:
            missing.append(i)
    if missing:
        out[missing] = encoder.embed([texts[i] for i in missing])
    return out


def shadow_build(base: BaseRelease, ops: tuple[Op, ...], *, kind: str = "") -> Shadow:
    """Freeze ``base`` + ``ops`` into a shadow snapshot (raises ``ChangesetConflict`` when it cannot apply).

    Mirrors ``ontology.releases.release_publish`` step by step, with one deliberate difference: the
    shadow keeps the active release's text encoder (``encoder_for_documents``) instead of running the
    encoder hooks again — fine-tuning an encoder per candidate would cost minutes, and replay compares
    the candidate with the release it would replace, in that release's vector space.
    """
    from inference.encoder_finetune import encoder_for_documents
    from ontology.analytics import compute_structural_signals, signals_to_json
    from ontology.releases import GRAPH_HOOKS, PUBLISH_HOOKS, _label_index

    applied = apply_in_memory(base.graph, base.documents, ops)
    violations = shadow_violations(applied)
    arrays = graph_to_arrays(applied.graph)
    documents = dict(applied.documents)
    matrices = dict(base.matrices)
    encoder = encoder_for_documents(base.documents)
    matrices["node_embeddings"] = _node_vectors(base, arrays, applied.changed_nodes, encoder)
    if applied.taxonomy_changed:
        label_index, label_texts = _label_index(documents)
        documents["label_index"] = label_index
        matrices["label_embeddings"] = (
            encoder.embed(label_texts) if label_texts else np.zeros((0, encoder.dim), dtype=np.float32)
        )
    community = None
    if arrays.node_count:
        signals = json.loads(signals_to_json(compute_structural_signals(applied.graph, backend="networkx")))
        signals.pop("timings", None)
        signals.pop("seconds", None)
        documents["signals"] = signals
        communities = dict(zip(signals["nodes"], signals["communities"], strict=True))
        community = np.array([communities.get(n, -1) for n in arrays.node_ids], dtype=np.int32)
    if applied.taxonomy_changed:
        for hook in PUBLISH_HOOKS:
            extra_matrices, extra_documents = hook(documents, encoder)
            matrices.update(extra_matrices)
            documents.update(extra_documents)
    for graph_hook in GRAPH_HOOKS:
        extra_matrices, extra_documents = graph_hook(arrays, documents, encoder)
        matrices.update(extra_matrices)
        documents.update(extra_documents)
    digest = hashlib.sha256(f"{base.checksum}|{changeset_fingerprint(kind, ops)}".encode()).hexdigest()
    snapshot = snapshot_build(
        arrays,
        project_id=base.release.project_id,
        release_id=None,
        version=base.release.version,
        checksum=f"shadow-{digest[:40]}",
        embeddings=matrices["node_embeddings"],
        community=community,
        documents={
            **documents,
            **{f"matrix:{k}": v for k, v in matrices.items()},
            "label_embeddings": matrices.get("label_embeddings"),
        },
    )
    return Shadow(snapshot=snapshot, applied=applied, violations=tuple(violations))
