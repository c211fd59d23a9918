"""Releases: publish, activate (roll back), diff, and load into a snapshot.

The *draft* is what experts and the offline loop edit: the taxonomy tables and the graph store.
A *release* freezes the draft — taxonomy, typologies, policies, roles, graph, aliases, structural
signals, node and label embeddings — into one bundle under a version and a checksum. Exactly one
release per project is active; the online path serves only from it (through ``ontology.snapshot_registry``).
Publishing refuses an invalid draft; nothing about the active release changes until the new bundle is
complete and stored.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Protocol

import numpy as np
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from arg_platform.audit import Actor, actor_user, audit_record
from arg_platform.embedder import get_embedder
from arg_platform.errors import NotFound, RuleViolation, Violation
from projects.models import Project
from taxonomy.packs import PackDocument, pack_export
from taxonomy.packs.importer import pack_validate
from taxonomy.term_guard import draft_term_warnings

from .analytics import compute_structural_signals, default_backend, signals_to_json
from .ask_threshold import threshold_in_force
from .graph_arrays import (
    GraphArrays,
    arrays_to_graph,
    bundle_checksum,
    bundle_dump,
    bundle_load,
    bundle_members,
    graph_to_arrays,
)
from .graph_snapshot import GraphSnapshot, snapshot_build
from .models import Release, ReleaseBundle
from .pack_graph import alias_to_pack, edge_to_pack, node_to_pack
from .snapshot_registry import registry
from .store import get_graph_store
from .store.port import GraphData
from .validator import graph_warnings


def node_texts(arrays: GraphArrays) -> list[str]:
    """What a node's embedding is computed from: its title, its client text (chunk) and, when it has
    one, its internal description (what the node does — a memory node's client text may be empty).
    Staff notes are not embedded."""
    return [
        f"{title}\n{chunk}" + (f"\n{extra['description']}" if extra.get("description") else "")
        for title, chunk, extra in zip(arrays.titles, arrays.chunks, arrays.extras, strict=True)
    ]


def knowledge_violations(graph: GraphData, documents: dict[str, Any]) -> list[Violation]:
    """Every rule a pack import must pass, checked on a knowledge state (the draft, or a release's
    parent + changesets) — what publication refuses."""
    pack = {
        **{k: v for k, v in documents.items() if k in ("format", "project", *KNOWLEDGE_DOCUMENTS)},
        "nodes": [node_to_pack(n) for n in graph.nodes],
        "edges": [edge_to_pack(e) for e in graph.edges],
        "aliases": [alias_to_pack(a) for a in graph.aliases],
    }
    return pack_validate(PackDocument(data=pack, source="release"), project=None)


def knowledge_validate(graph: GraphData, documents: dict[str, Any]) -> None:
    """Raise ``RuleViolation`` (rule ``release.invalid_draft``) when ``knowledge_violations`` finds any."""
    violations = knowledge_violations(graph, documents)
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
They must depend on the taxonomy only: a release built on a parent re-runs them only when its label
index changed (and keeps the parent's results otherwise). Apps register them in ``AppConfig.ready`` so
the ontology app never imports them."""

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


ContextHook = Callable[[dict[str, Any]], Any]
CONTEXT_HOOKS: dict[str, ContextHook] = {}
"""Documents a release takes from outside the draft, by document name (the offline loop's boost zones):
each gets the release documents and returns the document, or ``None`` for none. They are computed at
every freeze and are part of ``knowledge_digest``, so a draft publication with new context is not a
no-op. Apps register them in ``AppConfig.ready``."""


def _with_context(documents: dict[str, Any]) -> dict[str, Any]:
    for name, hook in CONTEXT_HOOKS.items():
        value = hook(documents)
        if value is None:
            documents.pop(name, None)
        else:
            documents[name] = value
    return documents


@dataclass(frozen=True)
class PublishOptions:
    """Knobs for publication; benchmarks pass precomputed embeddings to time the rest alone."""

    node_embeddings: np.ndarray | None = None
    compute_signals: bool = True
    notes: str = ""
    extra_documents: dict[str, Any] = field(default_factory=dict)
    force: bool = False  # publish even a draft identical to the active release (benchmarks time it)
    draft_digest: str = ""  # the digest of the draft the admin reviewed (``draft_review``): it must still be
    job_id: int | None = None  # the job publishing it (``Release.job``: a retried job publishes once)
    progress: Callable[[float, str], None] | None = None  # ``progress(fraction, stage)`` as it goes


KNOWLEDGE_DOCUMENTS = (
    "clusters",
    "labels",
    "incompatibilities",
    "typologies",
    "policies",
    "roles",
    "distinct_terms",
)
"""The curated documents of a pack (besides the graph) — what a release freezes and a diff compares."""


def knowledge_digest(graph: GraphData, documents: dict[str, Any]) -> str:
    """SHA-256 of what a release is built from: the graph (without stored embeddings), the
    ``KNOWLEDGE_DOCUMENTS`` and the ``CONTEXT_HOOKS`` documents. Two states with the same digest
    publish the same release content."""
    content = {
        "nodes": [
            node_to_pack(replace(n, embedding=None)) for n in sorted(graph.nodes, key=lambda n: n.node_id)
        ],
        # a release stores weights as float32: compare them at that precision
        "edges": [
            edge_to_pack(replace(e, weight=float(np.float32(e.weight))))
            for e in sorted(graph.edges, key=lambda e: e.key)
        ],
        "aliases": [alias_to_pack(a) for a in sorted(graph.aliases, key=lambda a: a.source)],
        **{key: documents.get(key, []) for key in KNOWLEDGE_DOCUMENTS},
        "context": {name: documents.get(name) for name in sorted(CONTEXT_HOOKS)},
    }
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def draft_state(project: Project) -> tuple[GraphData, dict[str, Any]]:
    """The project's draft as data: the graph store's graph and the pack documents."""
    graph = get_graph_store().export_graph(project.pk)
    documents = pack_export(project=project, graph=graph)
    for key in ("nodes", "edges", "aliases"):
        documents.pop(key)
    return graph, documents


class ParentContent(Protocol):
    """What a release built on a parent reuses from it (``review.loop.shadow.BaseRelease`` is one)."""

    @property
    def arrays(self) -> GraphArrays: ...

    @property
    def matrices(self) -> dict[str, np.ndarray]: ...

    @property
    def documents(self) -> dict[str, Any]: ...


@dataclass(frozen=True, eq=False)
class FrozenRelease:
    """A release's content, built and not yet stored: graph columns, matrices and documents."""

    arrays: GraphArrays
    matrices: dict[str, np.ndarray]
    documents: dict[str, Any]
    digest: str
    community: np.ndarray | None
    timings: dict[str, float]

    @cached_property
    def members(self) -> dict[str, np.ndarray]:
        return bundle_members(arrays=self.arrays, matrices=self.matrices, documents=self.documents)

    @cached_property
    def checksum(self) -> str:
        return bundle_checksum(self.members)

    def snapshot(
        self, *, project_id: int, release_id: int | None, version: int, checksum: str
    ) -> GraphSnapshot:
        """The frozen content as the snapshot the online path serves (what ``release_snapshot`` loads)."""
        return snapshot_build(
            self.arrays,
            project_id=project_id,
            release_id=release_id,
            version=version,
            checksum=checksum,
            embeddings=self.matrices.get("node_embeddings"),
            community=self.community,
            documents={
                **self.documents,
                **{f"matrix:{k}": v for k, v in self.matrices.items()},
                "label_embeddings": self.matrices.get("label_embeddings"),
            },
        )


def _communities(documents: dict[str, Any], arrays: GraphArrays) -> np.ndarray | None:
    signals = documents.get("signals")
    if not signals or "communities" not in signals:
        return None
    communities = dict(zip(signals["nodes"], signals["communities"], strict=True))
    return np.array([communities.get(node_id, -1) for node_id in arrays.node_ids], dtype=np.int32)


def _reused_vectors(parent: ParentContent, arrays: GraphArrays, encoder: Any) -> np.ndarray:
    """Node vectors: the parent's for a node whose text is unchanged, the encoder's for the others."""
    parent_vectors = parent.matrices.get("node_embeddings")
    parent_text = dict(zip(parent.arrays.node_ids, node_texts(parent.arrays), strict=True))
    parent_rows = {node_id: i for i, node_id in enumerate(parent.arrays.node_ids)}
    texts = node_texts(arrays)
    out = np.zeros((arrays.node_count, encoder.dim), dtype=np.float32)
    missing: list[int] = []
    for i, (node_id, text) in enumerate(zip(arrays.node_ids, texts, strict=True)):
        if parent_vectors is not None and parent_text.get(node_id) == text:
            out[i] = parent_vectors[parent_rows[node_id]]
        else:
            missing.append(i)
    if missing:
        out[missing] = encoder.embed([texts[i] for i in missing])
    return out


def _label_vectors(parent: ParentContent | None, texts: list[str], encoder: Any) -> np.ndarray:
    """Label vectors: the parent's for an unchanged label index text, the encoder's for the others."""
    out = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    known: dict[str, np.ndarray] = {}
    if parent is not None and parent.matrices.get("label_embeddings") is not None:
        entries = parent.documents.get("label_index", {}).get("entries", [])
        known = dict(zip((e["text"] for e in entries), parent.matrices["label_embeddings"], strict=False))
    missing = [i for i, text in enumerate(texts) if text not in known]
    for i, text in enumerate(texts):
        if text in known:
            out[i] = known[text]
    if missing:
        out[missing] = encoder.embed([texts[i] for i in missing])
    return out


def release_freeze(
    *,
    project_id: int,
    graph: GraphData,
    documents: dict[str, Any],
    parent: ParentContent | None = None,
    encoder: Any = None,
    signals_backend: str = "networkx",
    node_embeddings: np.ndarray | None = None,
    compute_signals: bool = True,
    progress: Callable[[float, str], None] | None = None,
) -> FrozenRelease:
    """Freeze a knowledge state into a release's content — the one function every release is built by.

    * ``parent=None`` (a draft publication): the ``ENCODER_HOOKS`` may give the release its own text
      encoder; every node and label is embedded; the ``PUBLISH_HOOKS`` run.
    * With a ``parent`` (a release of parent + changesets, and replay's shadow release): the release
      keeps the parent's text encoder (``encoder``, its vector space), reuses the parent's vector of
      every node whose text is unchanged, and re-runs the label embedding and the ``PUBLISH_HOOKS``
      only when the label index changed; the release's documents are the parent's derived documents
      (encoder, classifier…) with the curated ones (``KNOWLEDGE_DOCUMENTS``) of ``documents``.

    The label index, the structural signals (``signals_backend``: ``gds`` reads the project's graph in
    the store, so only a draft publication may ask for it) and the ``GRAPH_HOOKS`` are always rebuilt.
    ``progress(fraction, stage)`` hears of each stage as it starts (fractions of the freeze).
    """
    report = progress or (lambda fraction, stage: None)
    timings: dict[str, float] = {}
    if parent is not None:  # the parent's derived documents, the state's curated ones
        curated = ("format", "project", *KNOWLEDGE_DOCUMENTS)
        documents = {**parent.documents, **{k: v for k, v in documents.items() if k in curated}}
    documents = _with_context(dict(documents))
    arrays = graph_to_arrays(graph)
    label_index, label_texts = _label_index(documents)
    labels_changed = parent is None or parent.documents.get("label_index") != label_index
    documents["label_index"] = label_index
    matrices: dict[str, np.ndarray] = dict(parent.matrices) if parent is not None else {}

    t = time.perf_counter()
    report(0.0, "text encoder (fine-tuned when the labels ask for it)")
    if encoder is None:
        encoder = get_embedder()
    if parent is None:
        for encoder_hook in ENCODER_HOOKS:
            found = encoder_hook(documents, encoder)
            if found is not None:
                encoder, encoder_documents = found
                documents.update(encoder_documents)
                node_embeddings = None
                break
    timings["encoder_s"] = time.perf_counter() - t

    t = time.perf_counter()
    report(0.3, f"embedding {arrays.node_count} nodes and the labels")
    if node_embeddings is not None:
        matrices["node_embeddings"] = node_embeddings
    elif parent is not None:
        matrices["node_embeddings"] = _reused_vectors(parent, arrays, encoder)
    else:
        matrices["node_embeddings"] = (
            encoder.embed(node_texts(arrays)) if arrays.node_count else np.zeros((0, encoder.dim))
        )
    if labels_changed:
        matrices["label_embeddings"] = _label_vectors(parent, label_texts, encoder)
    timings["embed_s"] = time.perf_counter() - t

    t = time.perf_counter()
    report(0.6, f"structural signals ({signals_backend})")
    documents.pop("signals", None)
    if compute_signals and arrays.node_count:
        signals = json.loads(
            signals_to_json(
                compute_structural_signals(graph, backend=signals_backend, project_id=project_id)  # type: ignore[arg-type]
            )
        )
        # run times vary between two freezes of the same state: they go to Release.timings, not into
        # the bundle, so the checksum stays a function of the content
        timings.update({f"signals_{k}": v for k, v in signals.pop("timings", {}).items()})
        signals.pop("seconds", None)
        documents["signals"] = signals
    timings["signals_s"] = time.perf_counter() - t

    t = time.perf_counter()
    report(0.8, "label classifier and release indexes")
    if labels_changed:
        for hook in PUBLISH_HOOKS:
            extra_matrices, extra_documents = hook(documents, encoder)
            matrices.update(extra_matrices)
            documents.update(extra_documents)
    timings["hooks_s"] = time.perf_counter() - t
    t = time.perf_counter()
    for graph_hook in GRAPH_HOOKS:
        extra_matrices, extra_documents = graph_hook(arrays, documents, encoder)
        matrices.update(extra_matrices)
        documents.update(extra_documents)
    timings["graph_hooks_s"] = time.perf_counter() - t
    return FrozenRelease(
        arrays=arrays,
        matrices=matrices,
        documents=documents,
        digest=knowledge_digest(graph, documents),
        community=_communities(documents, arrays),
        timings=timings,
    )


def release_store(
    *,
    project: Project,
    actor: Actor,
    frozen: FrozenRelease,
    source: str,
    parent: Release | None,
    notes: str = "",
    knowledge_revision: int = 0,
    timings: dict[str, float] | None = None,
    job_id: int | None = None,
) -> Release:
    """Store ``frozen`` as the project's next version and make it the active release (one transaction).

    ``source`` says what it froze (``Release.Source``): the expert draft, or ``parent`` + the approved
    changesets. ``knowledge_revision`` is the draft revision whose content the release equals (0: none).
    ``job_id`` is the job publishing it, recorded in the same transaction (``Release.job``).
    """
    t = time.perf_counter()
    checksum = frozen.checksum
    blob = bundle_dump(frozen.members)
    timings = {**frozen.timings, **(timings or {}), "bundle_s": time.perf_counter() - t}
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # serialize publications
        version = (Release.objects.filter(project=project).aggregate(v=Max("version"))["v"] or 0) + 1
        Release.objects.filter(project=project, is_active=True).update(is_active=False)
        release = Release.objects.create(
            project=project,
            version=version,
            checksum=checksum,
            content_digest=frozen.digest,
            source=source,
            parent=parent,
            is_active=True,
            knowledge_revision=knowledge_revision,
            notes=notes[:500],
            created_by=actor_user(actor),
            job_id=job_id,
            activated_at=timezone.now(),
            counts={
                "nodes": frozen.arrays.node_count,
                "edges": frozen.arrays.edge_count,
                "labels": len(frozen.documents["labels"]),
                "aliases": len(frozen.arrays.aliases),
                "bytes": len(blob),
            },
            languages=list(frozen.documents.get("languages") or []),  # inference.steps.language
            ask_threshold=threshold_in_force(frozen.documents),  # ontology.ask_threshold
            timings={k: round(v, 4) for k, v in timings.items()},
        )
        ReleaseBundle.objects.create(release=release, blob=blob, size_bytes=len(blob))
        audit_record(
            project=project,
            actor=actor,
            action="publish",
            object_type="release",
            object_key=f"v{version}",
            after={
                "checksum": checksum,
                "source": source,
                "parent": f"v{parent.version}" if parent else None,
                **release.counts,
            },
            reason=notes,
        )
    registry.invalidate(project.pk)  # this process re-reads the active release at its next pin
    return release


def draft_publish(
    *, project: Project, actor: Actor, options: PublishOptions | None = None
) -> tuple[Release, bool]:
    """Freeze the project's draft into a new active release: ``(release, True)``.

    Refused (``RuleViolation``) when the draft is invalid. A draft whose content equals the active
    release's is not published again: ``(active release, False)`` — unless ``options.force``.
    """
    options = options or PublishOptions()
    report = options.progress or (lambda fraction, stage: None)
    started = time.perf_counter()
    report(0.0, "reading and validating the draft")
    project.refresh_from_db(fields=["knowledge_revision"])
    revision = project.knowledge_revision
    graph, documents = draft_state(project)
    export_s = time.perf_counter() - started
    t = time.perf_counter()
    knowledge_validate(graph, documents)
    validate_s = time.perf_counter() - t
    documents.update(options.extra_documents)
    _with_context(documents)
    digest = knowledge_digest(graph, documents)
    if options.draft_digest and options.draft_digest != digest:
        raise RuleViolation(
            Violation(
                "release.draft_moved",
                "the draft changed since its diff was reviewed: review the new diff, then publish",
                "draft_digest",
            )
        )
    active = release_active(project_id=project.pk)
    if not options.force and active is not None and active.content_digest == digest:
        if active.knowledge_revision != revision:  # the draft came back to the release's content
            Release.objects.filter(pk=active.pk).update(knowledge_revision=revision)
            active.knowledge_revision = revision
        return active, False
    frozen = release_freeze(
        project_id=project.pk,
        graph=graph,
        documents=documents,
        signals_backend=default_backend(),
        node_embeddings=options.node_embeddings,
        compute_signals=options.compute_signals,
        progress=lambda fraction, stage: report(0.1 + 0.8 * fraction, stage),
    )
    report(0.9, f"storing the release ({frozen.arrays.node_count} nodes)")
    release = release_store(
        project=project,
        actor=actor,
        frozen=frozen,
        source=Release.Source.DRAFT,
        parent=active,
        notes=options.notes,
        knowledge_revision=revision,
        timings={"validate_s": validate_s, "export_s": export_s},
        job_id=options.job_id,
    )
    release.timings["total_s"] = round(time.perf_counter() - started, 4)
    Release.objects.filter(pk=release.pk).update(timings=release.timings)
    return release, True


def release_publish(*, project: Project, actor: Actor, options: PublishOptions | None = None) -> Release:
    """Freeze the project's draft into a new active release; the active release when nothing changed."""
    return draft_publish(project=project, actor=actor, options=options)[0]


@transaction.atomic
def release_activate(*, release: Release, actor: Actor, reason: str = "") -> Release:
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


def release_snapshot_load(project_id: int, release_id: int) -> GraphSnapshot:
    """The frozen snapshot of release ``release_id`` of project ``project_id`` (the snapshot registry's
    loader)."""
    return release_snapshot(release=Release.objects.get(pk=release_id, project_id=project_id))


def release_snapshot(*, release: Release) -> GraphSnapshot:
    """Load a release's bundle into a frozen snapshot."""
    blob = ReleaseBundle.objects.values_list("blob", flat=True).get(release_id=release.pk)
    bundle = bundle_load(bytes(blob))
    frozen = FrozenRelease(
        arrays=bundle.arrays,
        matrices=dict(bundle.matrices),
        documents=dict(bundle.documents),
        digest=release.content_digest,
        community=_communities(bundle.documents, bundle.arrays),
        timings={},
    )
    return frozen.snapshot(
        project_id=release.project_id,
        release_id=release.pk,
        version=release.version,
        checksum=bundle.checksum,
    )


@dataclass(frozen=True)
class ReleaseDiff:
    """What changed between two states of a project's knowledge (two releases, or a release and the
    draft: ``new_version`` 0), by stable id. A node's changed fields include ``handler``."""

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
    aliases_changed: tuple[str, ...]
    aliases_removed: tuple[str, ...]
    clusters_changed: tuple[str, ...]
    policies_changed: tuple[str, ...]
    typologies_changed: tuple[str, ...]
    roles_changed: tuple[str, ...]
    incompatibilities_changed: bool
    distinct_terms_changed: bool

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


def _changed_keys(old: list[dict[str, Any]], new: list[dict[str, Any]], key: str = "key") -> tuple[str, ...]:
    a, b = {item[key]: item for item in old}, {item[key]: item for item in new}
    return tuple(sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)))


def knowledge_diff(
    *,
    old: tuple[GraphData, dict[str, Any]],
    new: tuple[GraphData, dict[str, Any]],
    old_version: int,
    new_version: int,
) -> ReleaseDiff:
    """Compare two knowledge states (graph + pack documents). Weights compare at float32 precision
    (what a release keeps) and stored node embeddings play no part."""
    (ga, da), (gb, db) = old, new
    labels = _keyed_diff(
        {x["id"]: x for x in da.get("labels", [])}, {x["id"]: x for x in db.get("labels", [])}
    )

    def node_fields(graph: GraphData) -> dict[str, dict[str, Any]]:
        return {n.node_id: {**n.__dict__, "embedding": None} for n in graph.nodes}

    nodes = _keyed_diff(node_fields(ga), node_fields(gb))
    ea = {e.key: round(float(np.float32(e.weight)), 6) for e in ga.edges}
    eb = {e.key: round(float(np.float32(e.weight)), 6) for e in gb.edges}
    aa = {a.source: (tuple(a.targets), a.reason) for a in ga.aliases}
    ab = {a.source: (tuple(a.targets), a.reason) for a in gb.aliases}
    return ReleaseDiff(
        old_version=old_version,
        new_version=new_version,
        labels_added=labels[0],
        labels_removed=labels[1],
        labels_changed=labels[2],
        nodes_added=nodes[0],
        nodes_removed=nodes[1],
        nodes_changed=nodes[2],
        edges_added=tuple(sorted(set(eb) - set(ea))),
        edges_removed=tuple(sorted(set(ea) - set(eb))),
        edges_reweighted=tuple(sorted((*k, ea[k], eb[k]) for k in set(ea) & set(eb) if ea[k] != eb[k])),
        aliases_added=tuple(sorted(set(ab) - set(aa))),
        aliases_changed=tuple(sorted(k for k in set(aa) & set(ab) if aa[k] != ab[k])),
        aliases_removed=tuple(sorted(set(aa) - set(ab))),
        clusters_changed=_changed_keys(da.get("clusters", []), db.get("clusters", [])),
        policies_changed=_changed_keys(da.get("policies", []), db.get("policies", [])),
        typologies_changed=_changed_keys(da.get("typologies", []), db.get("typologies", [])),
        roles_changed=_changed_keys(da.get("roles", []), db.get("roles", [])),
        incompatibilities_changed=da.get("incompatibilities", []) != db.get("incompatibilities", []),
        distinct_terms_changed=da.get("distinct_terms", []) != db.get("distinct_terms", []),
    )


def _release_state(release: Release) -> tuple[GraphData, dict[str, Any]]:
    bundle = bundle_load(
        bytes(ReleaseBundle.objects.values_list("blob", flat=True).get(release_id=release.pk))
    )
    return arrays_to_graph(bundle.arrays), dict(bundle.documents)


def release_diff(*, old: Release, new: Release) -> ReleaseDiff:
    """Compare two releases of the same project."""
    if old.project_id != new.project_id:
        raise RuleViolation(
            Violation("release.diff_project", "releases of different projects cannot be compared")
        )
    return knowledge_diff(
        old=_release_state(old), new=_release_state(new), old_version=old.version, new_version=new.version
    )


@dataclass(frozen=True)
class DraftReview:
    """What publishing the draft would change: the diff against the active release, the validator's
    refusals and warnings, and the draft's digest (a publication may require the draft to still have it)."""

    active: Release | None
    diff: ReleaseDiff
    digest: str
    violations: tuple[Violation, ...]
    warnings: tuple[Violation, ...] = ()  # the validator's warnings (``graph_warnings``): never refused

    @property
    def unchanged(self) -> bool:
        """The draft equals the active release's content (publishing would be a no-op)."""
        return self.active is not None and self.active.content_digest == self.digest


def draft_review(*, project: Project) -> DraftReview:
    """The draft against the active release (an empty state when there is none)."""
    graph, documents = draft_state(project)
    active = release_active(project_id=project.pk)
    old = _release_state(active) if active is not None else (GraphData(), {})
    return DraftReview(
        active=active,
        diff=knowledge_diff(
            old=old, new=(graph, documents), old_version=active.version if active else 0, new_version=0
        ),
        digest=knowledge_digest(graph, _with_context(documents)),
        violations=tuple(knowledge_violations(graph, documents)),
        warnings=(*graph_warnings(graph), *draft_term_warnings(project=project)),
    )
