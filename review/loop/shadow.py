"""Shadow releases: a candidate changeset applied in memory to the active release (§3 step C).

Replay never touches the draft or the active release. ``BaseRelease.load`` reads the active release's
bundle once per night; ``shadow_build`` applies a changeset to its state with the changeset interpreter
(``review.changeset_apply``, the code approval applies with) and freezes the result with
``ontology.releases.release_freeze`` — the function that builds the release an approval publishes —
with the active release as parent. So the shadow replay scores *is* the release a reviewer's approval
would publish (same content, same checksum). Its snapshot has ``release_id=None`` and a ``shadow-``
checksum of its own, so the per-release runtime caches of the online pipeline never mix it up with a
stored release.

Violations the shadow exposes (graph validator, taxonomy validator) are returned, not raised: replay
scores them as ``Violations_taxo/ontology`` (§3.3.5).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from arg_platform.errors import Violation
from inference.learning.encoder_finetune import encoder_for_documents
from inference.runtime import taxonomy_view_from_documents
from ontology.graph_arrays import GraphArrays, arrays_to_graph, bundle_load
from ontology.graph_snapshot import GraphSnapshot
from ontology.models import ReleaseBundle
from ontology.releases import FrozenRelease, release_freeze, release_snapshot
from ontology.store.port import GraphData, NodeData
from ontology.validator import validate_graph
from review.changeset import Op, changeset_fingerprint
from review.changeset_apply import Applied, ChangesetConflict, KnowledgeState, changeset_apply
from taxonomy.validator import validate_taxonomy

__all__ = ["BaseRelease", "ChangesetConflict", "Shadow", "shadow_build", "shadow_freeze", "shadow_violations"]


@dataclass(frozen=True, eq=False)
class BaseRelease:
    """A stored release as the parent of the next one: its bundle, graph, state and snapshot."""

    release: Any
    arrays: GraphArrays
    matrices: dict[str, np.ndarray]
    documents: dict[str, Any]
    checksum: str

    @cached_property
    def graph(self) -> GraphData:
        return arrays_to_graph(self.arrays)

    @cached_property
    def state(self) -> KnowledgeState:
        return KnowledgeState(graph=self.graph, documents=self.documents)

    @cached_property
    def nodes(self) -> dict[str, NodeData]:
        return {n.node_id: n for n in self.graph.nodes}

    @cached_property
    def snapshot(self) -> GraphSnapshot:
        return release_snapshot(release=self.release)

    @classmethod
    def load(cls, release: Any) -> BaseRelease:

        blob = ReleaseBundle.objects.values_list("blob", flat=True).get(release_id=release.pk)
        bundle = bundle_load(bytes(blob))
        return cls(
            release=release,
            arrays=bundle.arrays,
            matrices=dict(bundle.matrices),
            documents=dict(bundle.documents),
            checksum=bundle.checksum,
        )


def shadow_violations(applied: Applied) -> list[Violation]:
    """Graph and taxonomy validator findings on the shadow (``Violations_taxo/ontology``)."""

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
    frozen: FrozenRelease
    applied: Applied
    violations: tuple[Violation, ...]


def shadow_freeze(base: BaseRelease, applied: Applied) -> FrozenRelease:
    """Freeze ``applied`` (a changeset applied to ``base.state``) with ``base`` as parent."""
    return release_freeze(
        project_id=base.release.project_id,
        graph=applied.graph,
        documents=applied.documents,
        parent=base,
        encoder=encoder_for_documents(base.documents),
    )


def shadow_build(base: BaseRelease, ops: tuple[Op, ...], *, kind: str = "", reason: str = "") -> Shadow:
    """Freeze ``base`` + ``ops`` into a shadow snapshot (raises ``ChangesetConflict`` when it cannot apply)."""
    applied = changeset_apply(base.state, ops, reason=reason)
    violations = shadow_violations(applied)
    frozen = shadow_freeze(base, applied)
    digest = hashlib.sha256(f"{base.checksum}|{changeset_fingerprint(kind, ops)}".encode()).hexdigest()
    snapshot = frozen.snapshot(
        project_id=base.release.project_id,
        release_id=None,
        version=base.release.version,
        checksum=f"shadow-{digest[:40]}",
    )
    return Shadow(snapshot=snapshot, frozen=frozen, applied=applied, violations=tuple(violations))
