"""MemoryWrite (§2.10): the guarded write of one memorizable fact.

``memory_write`` runs §2.10 in order: validate (scope, subject, size, labels, node) → Memory Guard (PII
detected and scrubbed; PII in a GLOBAL write is refused) → classify the InfoType → label gate (no
validated label: episodic only, MISSING_LABEL_CANDIDATE) → canonicalize + embed (outside the
transaction) → episodic item + memory edges → Info Registry (label-gated) — all in one transaction.

A write's *label context* (``LabelContext``, built by ``label_context_for``) is what the registry needs
from the taxonomy: the validated LabelIDs, the label signature that keys the InfoKey, the labels'
current paths and their validated synonyms. ``MemoryWriteResult`` is the episode written and, for a
labelled write, the registry's outcome.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from arg_platform.embedder import get_embedder
from arg_platform.errors import Violation, ViolationCollector
from ontology.snapshot_registry import pin_snapshot
from ontology.store import get_graph_store
from projects.models import Project
from taxonomy.models import Label, LabelIncompatibility, LabelStatus

from .. import pii
from ..canonical import InfoType, canonicalize, classify_info_type, normalize
from ..comparator import RegistryParams
from ..edges import edges_for_new_episode
from ..models import EpisodicMemory, InfoUnit, MemoryFlag, Scope, Signal
from ..registry import InfoKeyValue, RegistryOutcome, label_signature_for, registry_write, vector_to_bytes
from ..selectors import registry_params, term_distinctions_for

SUBJECT_MAX = 128


def max_fact_chars() -> int:
    return int(getattr(settings, "MEMORY_MAX_FACT_CHARS", 2000))


@dataclass(frozen=True)
class LabelContext:
    """What the registry needs from the taxonomy for one write: validated LabelIDs, the signature, the
    current paths (metadata) and the validated synonyms to harmonize (synonym → label name)."""

    label_ids: tuple[str, ...] = ()
    signature: str = ""
    primary_name: str = ""
    path: str = ""
    synonyms: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MemoryWriteResult:
    episode: EpisodicMemory
    registry: RegistryOutcome | None
    flags: tuple[str, ...]
    pii_types: tuple[str, ...]

    @property
    def decision(self) -> str:
        return self.registry.decision.decision if self.registry else ""

    @property
    def unit(self) -> InfoUnit | None:
        return self.registry.unit if self.registry else None


def label_context_for(
    *, project: Project, label_ids: Sequence[str], primary_label_id: str | None, trusted: bool
) -> tuple[LabelContext, list[Violation]]:
    """Validate LabelIDs against the project's taxonomy (they must exist; when they come from a client
    rather than the Context Weaver they must be ACTIVE and pairwise compatible) and build the context."""
    violations: list[Violation] = []
    ids = [str(i).strip() for i in dict.fromkeys(label_ids) if str(i).strip()]
    if not ids:
        return LabelContext(), violations
    labels = {label.label_id: label for label in Label.objects.filter(project=project, label_id__in=ids)}
    for label_id in ids:
        label = labels.get(label_id)
        if label is None:
            violations.append(Violation("memory.label_unknown", f"unknown label {label_id}", "labels"))
        elif not trusted and label.status != LabelStatus.ACTIVE:
            violations.append(
                Violation(
                    "memory.label_not_active", f"label {label_id} is {label.status}, not ACTIVE", "labels"
                )
            )
    if not trusted and len(labels) > 1:
        pairs = LabelIncompatibility.objects.filter(
            project=project, label_a__label_id__in=ids, label_b__label_id__in=ids
        ).select_related("label_a", "label_b")
        for inc in pairs:
            violations.append(
                Violation(
                    "memory.labels_incompatible",
                    f"labels {inc.label_a.label_id} and {inc.label_b.label_id} are incompatible",
                    "labels",
                )
            )
    if primary_label_id and primary_label_id not in ids:
        violations.append(
            Violation(
                "memory.primary_label", f"primary label {primary_label_id} is not among the labels", "labels"
            )
        )
    if violations:
        return LabelContext(), violations
    mode = getattr(settings, "MEMORY_LABEL_SIGNATURE", "primary")
    signature = label_signature_for(ids, primary=primary_label_id, mode=mode)
    in_signature = signature.split("+")
    paths = " + ".join(labels[i].path for i in in_signature if labels[i].path)
    synonyms: dict[str, str] = {}
    for label_id in in_signature:
        name = normalize(labels[label_id].name)
        for synonym in labels[label_id].synonyms or []:
            key = normalize(str(synonym))
            if key and len(key) > 1:
                synonyms[key] = name
    return (
        LabelContext(
            label_ids=tuple(ids),
            signature=signature,
            primary_name=labels[in_signature[0]].name,
            path=paths,
            synonyms=synonyms,
        ),
        violations,
    )


def _node_exists(project: Project, node_id: str) -> bool:
    snapshot = pin_snapshot(project.pk)
    if snapshot is not None and node_id in snapshot.position:
        return True
    return get_graph_store().get_node(project.pk, node_id) is not None


def memory_write(
    *,
    project: Project,
    text: str,
    scope: str,
    info_type: str | None = None,
    user_id: str = "",
    org_id: str = "",
    session_id: str = "",
    request_id: str = "",
    label_ids: Sequence[str] = (),
    primary_label_id: str | None = None,
    labels_trusted: bool = False,
    node_id: str = "",
    signal: str = Signal.WEAK,
    source: str = EpisodicMemory.Source.API,
    provenance: dict[str, Any] | None = None,
    flags: Iterable[str] = (),
    corrects_id: int | None = None,
    occurred_at: datetime | None = None,
    allowed_scopes: Iterable[str] | None = None,
    vector: np.ndarray | None = None,
    params: RegistryParams | None = None,
) -> MemoryWriteResult:
    """Write one memorizable fact (§2.10): guarded, label-gated, deduplicated; see the module doc.

    ``labels_trusted`` marks LabelIDs the Context Weaver already validated (the pipeline); client labels
    must be ACTIVE and compatible. ``allowed_scopes`` (None: any) are the scopes the caller's policy
    lets it write. ``vector`` may carry a precomputed embedding of the canonical statement (benchmarks).
    ``params`` are the registry's parameters; None: the project's (``selectors.registry_params``, its
    merge bar) — only benchmarks pass their own.
    """
    errors = ViolationCollector()
    text = text if isinstance(text, str) else ""
    scope = (scope or "").upper()
    user_id, org_id, session_id = (str(v or "").strip() for v in (user_id, org_id, session_id))
    if not text.strip():
        errors.add("memory.fact_empty", "the fact is empty", "text")
    elif len(text) > max_fact_chars():
        errors.add(
            "memory.fact_size", f"a fact is at most {max_fact_chars()} characters ({len(text)} sent)", "text"
        )
    if not scope:
        errors.add("memory.scope_missing", "scope is required: USER, ORG or GLOBAL", "scope")
    elif scope not in Scope.values:
        errors.add("memory.scope", f"unknown scope {scope!r}: use USER, ORG or GLOBAL", "scope")
    elif allowed_scopes is not None and scope not in set(allowed_scopes):
        allowed = ", ".join(sorted(allowed_scopes)) or "none"
        errors.add(
            "memory.scope_not_allowed",
            f"your policy may not write {scope} memory (allowed: {allowed})",
            "scope",
        )
    if scope == Scope.USER and not user_id:
        errors.add("memory.subject_missing", "a USER memory names its user_id", "user_id")
    if scope == Scope.ORG and not org_id:
        errors.add("memory.subject_missing", "an ORG memory names its org_id", "org_id")
    for name, value in (("user_id", user_id), ("org_id", org_id), ("session_id", session_id)):
        if len(value) > SUBJECT_MAX:
            errors.add("memory.field_size", f"{name} is at most {SUBJECT_MAX} characters", name)
    if info_type and info_type not in InfoType.ALL:
        errors.add(
            "memory.info_type",
            f"unknown InfoType {info_type!r}: one of {', '.join(InfoType.ALL)}",
            "info_type",
        )
    if signal not in Signal.values:
        errors.add("memory.signal", "signal is weak or strong", "signal")
    if node_id and not _node_exists(project, node_id):
        errors.add("memory.node_unknown", f"node {node_id} does not exist in this project", "node_id")
    corrects = None
    if corrects_id is not None:
        corrects = EpisodicMemory.objects.filter(project=project, pk=corrects_id).first()
        if corrects is None:
            errors.add(
                "memory.corrects_unknown", f"memory #{corrects_id} does not exist in this project", "corrects"
            )
    labels, label_violations = label_context_for(
        project=project, label_ids=label_ids, primary_label_id=primary_label_id, trusted=labels_trusted
    )
    errors.violations.extend(label_violations)
    findings = pii.detect(text) if text.strip() and len(text) <= max_fact_chars() else ()
    if scope == Scope.GLOBAL and findings:
        kinds = ", ".join(sorted({f.type for f in findings}))
        errors.add(
            "memory.pii_in_global", f"a GLOBAL memory may not hold personal data ({kinds} found)", "text"
        )
    errors.raise_if_any()

    scrubbed = pii.scrub(text, findings)
    flag_set = set(flags)
    if findings:
        flag_set.add(MemoryFlag.PII_SCRUBBED)
    info_type = info_type or classify_info_type(scrubbed)
    semantic = bool(labels.signature)
    if not semantic:
        flag_set.add(MemoryFlag.MISSING_LABEL_CANDIDATE)
    if corrects is not None:
        flag_set.add(MemoryFlag.CORRECTION)
    canonical = canonicalize(
        scrubbed, info_type=info_type, synonyms=labels.synonyms, module=labels.primary_name
    )
    if vector is None:
        vector = get_embedder().embed_one(canonical.statement)
    subjects: dict[str, str] = {Scope.USER: user_id, Scope.ORG: org_id}
    subject = subjects.get(scope, "")
    with transaction.atomic():
        episode = EpisodicMemory.objects.create(
            project=project,
            scope=scope,
            subject=subject,
            user_id=user_id,
            org_id=org_id,
            session_id=session_id,
            request_id=request_id[:64],
            info_type=info_type,
            text=scrubbed,
            pii=[{"type": f.type, "detector": f.detector} for f in findings],
            node_id=node_id,
            node_ids_current=[node_id] if node_id else [],
            label_ids=list(labels.label_ids),
            label_signature=labels.signature,
            label_path_current=labels.path,
            flags=sorted(flag_set),
            semantic_candidate=semantic,
            signal=signal,
            source=source,
            provenance=dict(provenance or {}),
            embedding=vector_to_bytes(vector),
            corrects=corrects,
            occurred_at=occurred_at or timezone.now(),
        )
        outcome = None
        if semantic:
            outcome = registry_write(
                episode=episode,
                canonical=canonical,
                vector=vector,
                value=InfoKeyValue(labels.signature, info_type, scope, subject),
                label_ids=labels.label_ids,
                flags=sorted(flag_set),
                params=params or registry_params(project=project),
                synonyms=labels.synonyms,
                distinctions=term_distinctions_for(project_id=project.pk),
            )
        edges_for_new_episode(episode, np.asarray(vector, dtype=np.float32))
    return MemoryWriteResult(
        episode=episode,
        registry=outcome,
        flags=tuple(sorted(flag_set)),
        pii_types=tuple(sorted({f.type for f in findings})),
    )
