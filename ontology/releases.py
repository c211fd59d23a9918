"""Releases: publish, activate (roll back), diff, and load into a snapshot.

The *draft* is what experts and the offline loop edit: the taxonomy tables and the graph store.
A *release* freezes the draft — taxonomy, typologies, policies, roles, graph, aliases, structural
signals, node and label embeddings — into one bundle under a version and a checksum. Exactly one
release per project is active; the online path serves only from it (through ``ontology.snapshots``).
Publishing refuses an invalid draft; nothing about the active release changes until the new bundle is
complete and stored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from arg_platform.audit import audit_record
from arg_platform.errors import NotFound, RuleViolation, Violation
from projects.models import Project

from .graph_arrays import (
    GraphArrays,
    arrays_to_graph,
    bundle_checksum,
    bundle_dump,
    bundle_load,
    bundle_members,
    graph_to_arrays,
)
from .models import Release, ReleaseBundle
from .snapshot import GraphSnapshot, snapshot_build
from .snapshots import registry
from .store import get_graph_store


def node_texts(arrays: GraphArrays) -> list[str]:
    """What a node's embedding is computed from: its title and its chunk."""
    return [f"{title}\n{chunk}" for title, chunk in zip(arrays.titles, arrays.chunks, strict=True)]


def _draft_documents(project: Project) -> dict[str, Any]:
    from taxonomy.packs import pack_export

    pack = pack_export(project=project)
    for key in ("nodes", "edges", "aliases"):
        pack.pop(key)
    return pack


def _validate_draft(project: Project) -> None:
    from taxonomy.packs import pack_export
    from taxonomy.packs.importer import pack_validate
    from taxonomy.packs.reader import PackDocument

    violations = pack_validate(PackDocument(data=pack_export(project=project), source="draft"), project=None)
    if violations:
        raise RuleViolation(
            [
                Violation("release.invalid_draft", f"[{v.rule}] {v.message}", v.field, v.location)
                for v in violations
            ]
        )


def _label_index(documents: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The label index inputs (ARG §2.3.1) of ACTIVE and SHADOW labels and the texts to embed."""
    clusters = {c["key"]: c["name"] for c in documents["clusters"]}
    by_id = {label["id"]: label for label in documents["labels"]}
    entries, texts = [], []
    for label in documents["labels"]:
        if label["status"] not in ("ACTIVE", "SHADOW"):
            continue
        chain, current = [], label
        while current is not None:
            chain.append(current["name"])
            current = by_id.get(current["parent"]) if current.get("parent") else None
        path = " › ".join([clusters.get(label["cluster"], label["cluster"]), *reversed(chain)])
        text = " | ".join(filter(None, [path, label["description"], ", ".join(label["synonyms"])]))
        entries.append(
            {"label_id": label["id"], "cluster": label["cluster"], "status": label["status"], "text": text}
        )
        texts.append(text)
    return {"entries": entries}, texts


PublishHook = Callable[[dict[str, Any], Any], tuple[dict[str, np.ndarray], dict[str, Any]]]
PUBLISH_HOOKS: list[PublishHook] = []
"""Steps other apps add to publication (e.g. the inference app trains its distilled label classifier):
each gets the release documents and the embedder and returns extra matrices and documents to freeze.
Apps register them in ``AppConfig.ready`` so the ontology app never imports them."""

EncoderHook = Callable[[dict[str, Any], Any], "tuple[Any, dict[str, Any]] | None"]
ENCODER_HOOKS: list[EncoderHook] = []
"""Steps that may give a release its own text encoder (the inference app fine-tunes MiniLM on the
validated label examples when there are enough): each gets the release documents and the platform
embedder and returns ``None`` or ``(encoder, documents to freeze)``. The first encoder returned embeds
the release's nodes and labels (precomputed ``node_embeddings`` are then ignored: they live in the
platform embedder's space) and is the embedder the ``PUBLISH_HOOKS`` receive."""

GraphHook = Callable[[GraphArrays, dict[str, Any], Any], tuple[dict[str, np.ndarray], dict[str, Any]]]
GRAPH_HOOKS: list[GraphHook] = []
"""Publish steps that also read the frozen graph columns (the inference app embeds the sentences of the
content nodes' chunks for ARG-Info, so that no serving process has to): each gets the graph arrays, the
release documents and the release's embedder, and returns extra matrices and documents to freeze."""


@dataclass(frozen=True)
class PublishOptions:
    """Knobs for publication; benchmarks pass precomputed embeddings to time the rest alone."""

    node_embeddings: np.ndarray | None = None
    compute_signals: bool = True
    notes: str = ""
    extra_documents: dict[str, Any] = field(default_factory=dict)


def release_publish(*, project: Project, actor: Any, options: PublishOptions | None = None) -> Release:
    """Freeze the project's draft into a new active release (refused when the draft is invalid)."""
    options = options or PublishOptions()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    _validate_draft(project)
    timings["validate_s"] = time.perf_counter() - started
    project.refresh_from_db(fields=["knowledge_revision"])
    revision = project.knowledge_revision

    t = time.perf_counter()
    arrays = graph_to_arrays(get_graph_store().export_graph(project.pk))
    documents = _draft_documents(project)
    label_index, label_texts = _label_index(documents)
    documents["label_index"] = label_index
    documents.update(options.extra_documents)
    timings["export_s"] = time.perf_counter() - t

    t = time.perf_counter()
    from arg_platform.embedder import get_embedder

    embedder = get_embedder()
    node_vectors = options.node_embeddings
    for encoder_hook in ENCODER_HOOKS:
        found = encoder_hook(documents, embedder)
        if found is not None:
            embedder, encoder_documents = found
            documents.update(encoder_documents)
            node_vectors = None
            break
    timings["encoder_s"] = time.perf_counter() - t
    t = time.perf_counter()
    if node_vectors is None:
        node_vectors = (
            embedder.embed(node_texts(arrays)) if arrays.node_count else np.zeros((0, embedder.dim))
        )
    label_vectors = embedder.embed(label_texts) if label_texts else np.zeros((0, embedder.dim))
    timings["embed_s"] = time.perf_counter() - t

    t = time.perf_counter()
    if options.compute_signals and arrays.node_count:
        from .analytics import compute_structural_signals, default_backend, signals_to_json

        signals = json.loads(
            signals_to_json(
                compute_structural_signals(
                    arrays_to_graph(arrays), backend=default_backend(), project_id=project.pk
                )
            )
        )
        # run times vary between two publications of the same draft: they go to Release.timings,
        # not into the bundle, so the checksum stays a function of the content
        timings.update({f"signals_{k}": v for k, v in signals.pop("timings", {}).items()})
        signals.pop("seconds", None)
        documents["signals"] = signals
    timings["signals_s"] = time.perf_counter() - t

    t = time.perf_counter()
    matrices = {"node_embeddings": node_vectors, "label_embeddings": label_vectors}
    for hook in PUBLISH_HOOKS:
        extra_matrices, extra_documents = hook(documents, embedder)
        matrices.update(extra_matrices)
        documents.update(extra_documents)
    timings["hooks_s"] = time.perf_counter() - t
    t = time.perf_counter()
    for graph_hook in GRAPH_HOOKS:
        extra_matrices, extra_documents = graph_hook(arrays, documents, embedder)
        matrices.update(extra_matrices)
        documents.update(extra_documents)
    timings["graph_hooks_s"] = time.perf_counter() - t

    t = time.perf_counter()
    members = bundle_members(arrays=arrays, matrices=matrices, documents=documents)
    checksum = bundle_checksum(members)
    blob = bundle_dump(members)
    timings["bundle_s"] = time.perf_counter() - t
    timings["total_s"] = time.perf_counter() - started

    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # serialize publications
        version = (Release.objects.filter(project=project).aggregate(v=Max("version"))["v"] or 0) + 1
        Release.objects.filter(project=project, is_active=True).update(is_active=False)
        release = Release.objects.create(
            project=project,
            version=version,
            checksum=checksum,
            is_active=True,
            knowledge_revision=revision,
            notes=options.notes[:500],
            created_by=actor if getattr(actor, "pk", None) else None,
            activated_at=timezone.now(),
            counts={
                "nodes": arrays.node_count,
                "edges": arrays.edge_count,
                "labels": len(documents["labels"]),
                "aliases": len(arrays.aliases),
                "bytes": len(blob),
            },
            timings={k: round(v, 4) for k, v in timings.items()},
        )
        ReleaseBundle.objects.create(release=release, blob=blob, size_bytes=len(blob))
        audit_record(
            project=project,
            actor=actor,
            action="publish",
            object_type="release",
            object_key=f"v{version}",
            after={"checksum": checksum, **release.counts},
            reason=options.notes,
        )
    registry.invalidate(project.pk)  # this process re-reads the active release at its next pin
    return release


@transaction.atomic
def release_activate(*, release: Release, actor: Any, reason: str = "") -> Release:
    """Make ``release`` the active one (a rollback when it is older than the current one)."""
    release = Release.objects.select_for_update().get(pk=release.pk)
    if release.is_active:
        return release
    previous = Release.objects.filter(project_id=release.project_id, is_active=True).first()
    Release.objects.filter(project_id=release.project_id, is_active=True).update(is_active=False)
    release.is_active = True
    release.activated_at = timezone.now()
    release.save(update_fields=["is_active", "activated_at"])
    audit_record(
        project=release.project,
        actor=actor,
        action="activate",
        object_type="release",
        object_key=f"v{release.version}",
        before={"active": f"v{previous.version}" if previous else None},
        after={"active": f"v{release.version}"},
        reason=reason,
    )
    registry.invalidate(release.project_id)
    return release


def release_active(*, project_id: int) -> Release | None:
    return Release.objects.filter(project_id=project_id, is_active=True).first()


def release_get(*, project: Project, version: int) -> Release:
    release = Release.objects.filter(project=project, version=version).first()
    if release is None:
        raise NotFound(f"release v{version} not found")
    return release


def release_snapshot(*, release: Release) -> GraphSnapshot:
    """Load a release's bundle into a frozen snapshot."""
    blob = ReleaseBundle.objects.values_list("blob", flat=True).get(release_id=release.pk)
    bundle = bundle_load(bytes(blob))
    community = None
    signals = bundle.documents.get("signals")
    if signals and "communities" in signals:
        communities = dict(zip(signals["nodes"], signals["communities"], strict=True))
        community = np.array(
            [communities.get(node_id, -1) for node_id in bundle.arrays.node_ids], dtype=np.int32
        )
    return snapshot_build(
        bundle.arrays,
        project_id=release.project_id,
        release_id=release.pk,
        version=release.version,
        checksum=bundle.checksum,
        embeddings=bundle.matrices.get("node_embeddings"),
        community=community,
        documents={
            **bundle.documents,
            **{f"matrix:{k}": v for k, v in bundle.matrices.items()},
            "label_embeddings": bundle.matrices.get("label_embeddings"),
        },
    )


@dataclass(frozen=True)
class ReleaseDiff:
    """What changed between two releases, by stable id."""

    old_version: int
    new_version: int
    labels_added: tuple[str, ...]
    labels_removed: tuple[str, ...]
    labels_changed: tuple[tuple[str, tuple[str, ...]], ...]  # (LabelID, changed fields)
    nodes_added: tuple[str, ...]
    nodes_removed: tuple[str, ...]
    nodes_changed: tuple[tuple[str, tuple[str, ...]], ...]
    edges_added: tuple[tuple[str, str, str], ...]
    edges_removed: tuple[tuple[str, str, str], ...]
    edges_reweighted: tuple[tuple[str, str, str, float, float], ...]
    aliases_added: tuple[str, ...]
    policies_changed: tuple[str, ...]
    typologies_changed: tuple[str, ...]

    @property
    def is_empty(self) -> bool:
        return not any(
            getattr(self, f) for f in self.__dataclass_fields__ if f not in ("old_version", "new_version")
        )


def _keyed_diff(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> tuple[tuple, tuple, tuple]:
    added = tuple(sorted(set(new) - set(old)))
    removed = tuple(sorted(set(old) - set(new)))
    changed = tuple(
        (key, tuple(sorted(f for f in set(old[key]) | set(new[key]) if old[key].get(f) != new[key].get(f))))
        for key in sorted(set(old) & set(new))
        if old[key] != new[key]
    )
    return added, removed, changed


def release_diff(*, old: Release, new: Release) -> ReleaseDiff:
    """Compare two releases of the same project."""
    if old.project_id != new.project_id:
        raise RuleViolation(
            Violation("release.diff_project", "releases of different projects cannot be compared")
        )
    a = bundle_load(bytes(ReleaseBundle.objects.values_list("blob", flat=True).get(release_id=old.pk)))
    b = bundle_load(bytes(ReleaseBundle.objects.values_list("blob", flat=True).get(release_id=new.pk)))
    ga, gb = arrays_to_graph(a.arrays), arrays_to_graph(b.arrays)
    la = {label["id"]: label for label in a.documents["labels"]}
    lb = {label["id"]: label for label in b.documents["labels"]}
    labels = _keyed_diff(la, lb)
    na = {n.node_id: n.__dict__ for n in ga.nodes}
    nb = {n.node_id: n.__dict__ for n in gb.nodes}
    nodes = _keyed_diff(na, nb)
    ea = {e.key: e.weight for e in ga.edges}
    eb = {e.key: e.weight for e in gb.edges}
    pa = {p["key"]: p for p in a.documents["policies"]}
    pb = {p["key"]: p for p in b.documents["policies"]}
    ta = {t["key"]: t for t in a.documents["typologies"]}
    tb = {t["key"]: t for t in b.documents["typologies"]}
    return ReleaseDiff(
        old_version=old.version,
        new_version=new.version,
        labels_added=labels[0],
        labels_removed=labels[1],
        labels_changed=labels[2],
        nodes_added=nodes[0],
        nodes_removed=nodes[1],
        nodes_changed=nodes[2],
        edges_added=tuple(sorted(set(eb) - set(ea))),
        edges_removed=tuple(sorted(set(ea) - set(eb))),
        edges_reweighted=tuple(sorted((*k, ea[k], eb[k]) for k in set(ea) & set(eb) if ea[k] != eb[k])),
        aliases_added=tuple(
            sorted({s for s, _, _ in b.arrays.aliases} - {s for s, _, _ in a.arrays.aliases})
        ),
        policies_changed=tuple(sorted(k for k in set(pa) | set(pb) if pa.get(k) != pb.get(k))),
        typologies_changed=tuple(sorted(k for k in set(ta) | set(tb) if ta.get(k) != tb.get(k))),
    )
