"""Writes of the memory app: the guarded episodic write (MemoryWrite, §2.10) and the Info Registry's
human and offline verbs. Every write is atomic; a refused write raises ``RuleViolation`` and writes
nothing.

``memory_write`` runs §2.10 in order: validate (scope, subject, size, labels, node) → Memory Guard (PII
detected and scrubbed; PII in a GLOBAL write is refused) → classify the InfoType → label gate (no
validated label: episodic only, MISSING_LABEL_CANDIDATE) → canonicalize + embed (outside the
transaction) → episodic item + memory edges → Info Registry (label-gated) — all in one transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from arg_platform.audit import Actor, actor_user, audit_record
from arg_platform.errors import NotFound, RuleViolation, Violation, ViolationCollector
from projects.models import Project

from . import pii
from .canonical import Canonical, InfoType, canonicalize, classify_info_type, normalize
from .comparator import DEFAULT_PARAMS, Method, RegistryParams
from .distinctions import Distinction, separates, term_normalize, term_pairs, term_problem, term_set
from .edges import edges_for_new_episode
from .models import (
    EpisodicMemory,
    InfoEvidence,
    InfoKey,
    InfoUnit,
    InfoUnitEvent,
    MemoryFlag,
    RegistryAttempt,
    Scope,
    Signal,
    TermDistinction,
)
from .registry import (
    InfoKeyValue,
    RegistryOutcome,
    evidence_attach,
    label_signature_for,
    recall_index,
    registry_write,
    unit_create,
    unit_recount,
    vector_to_bytes,
)
from .selectors import info_unit_founding_episodes, term_distinctions_cache_clear, term_distinctions_for

logger = logging.getLogger(__name__)

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
    from taxonomy.models import Label, LabelIncompatibility, LabelStatus

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
    from ontology.snapshot_registry import pin_snapshot
    from ontology.store import get_graph_store

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
    params: RegistryParams = DEFAULT_PARAMS,
) -> MemoryWriteResult:
    """Write one memorizable fact (§2.10): guarded, label-gated, deduplicated; see the module doc.

    ``labels_trusted`` marks LabelIDs the Context Weaver already validated (the pipeline); client labels
    must be ACTIVE and compatible. ``allowed_scopes`` (None: any) are the scopes the caller's policy
    lets it write. ``vector`` may carry a precomputed embedding of the canonical statement (benchmarks).
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
        from arg_platform.embedder import get_embedder

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
                params=params,
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


# --- the UNSURE staging list ---------------------------------------------------------------------


def _canonical_in_key(info_key: InfoKey, episode: EpisodicMemory) -> Canonical:
    """The canonical form of ``episode``'s fact under ``info_key``'s labels (their validated synonyms)."""
    labels, _ = label_context_for(
        project=info_key.project, label_ids=info_key.label_ids, primary_label_id=None, trusted=True
    )
    return canonicalize(
        episode.text, info_type=info_key.info_type, synonyms=labels.synonyms, module=labels.primary_name
    )


def _unit_founded_by_review(
    *,
    info_key: InfoKey,
    episode: EpisodicMemory,
    canonical: Canonical,
    attempt: RegistryAttempt | None,
    actor_name: str,
) -> InfoUnit:
    """A reviewer's "different fact": ``episode`` founds a new InfoUnit of ``info_key`` and is its first
    evidence (method ``REVIEW``). The caller holds the InfoKey lock."""
    from arg_platform.embedder import get_embedder

    vector = np.frombuffer(bytes(episode.embedding), dtype=np.float32) if episode.embedding else None
    if vector is None:
        vector = get_embedder().embed_one(canonical.statement)
    unit = unit_create(
        info_key=info_key, episode=episode, canonical=canonical, vector=vector, actor_name=actor_name
    )
    evidence_attach(
        unit=unit,
        episode=episode,
        attempt=attempt,
        similarity=1.0,
        method=Method.REVIEW,
        actor_name=actor_name,
    )
    return unit


def _actor_name(actor: Actor) -> str:
    """The name a history or audit line records for ``actor`` (a user, a name, or "system")."""
    return getattr(actor, "username", "") or str(actor or "system")


def _person(actor: Actor) -> User | None:
    """``actor`` when it is a signed-in user (recorded as ``resolved_by``), else ``None``."""
    return actor_user(actor)


# --- term distinctions: what a reviewer's "different fact" teaches (``memory.distinctions``) --------


def _distinction_checked(
    terms: tuple[str, str] | None, *, unit: InfoUnit, fact_statement: str
) -> Distinction | None:
    """The distinction a reviewer states with a DIFFERENT verdict — ``terms`` is (the term of the
    InfoUnit, the term of the fact) — checked against the two statements it must keep apart; ``None``
    when no term is given. Raises ``RuleViolation`` (rule ``memory.distinction``, fields ``unit_term``
    / ``fact_term``) before anything is written."""
    unit_term, fact_term = (term_normalize(t) for t in (terms or ("", "")))
    raw = tuple((t or "").strip() for t in (terms or ("", "")))
    if not any(raw):
        return None
    errors = ViolationCollector()
    for field_name, given, term in (("unit_term", raw[0], unit_term), ("fact_term", raw[1], fact_term)):
        if not given:
            errors.add("memory.distinction", "name the term on both sides, or neither", field_name)
        elif problem := term_problem(term, given):
            errors.add("memory.distinction", problem, field_name)
    errors.raise_if_any()
    if unit_term == fact_term:
        raise RuleViolation(Violation("memory.distinction", "the two terms are the same", "fact_term"))
    candidate = Distinction(min(unit_term, fact_term), max(unit_term, fact_term))
    if not separates(candidate, unit.canonical_statement, fact_statement):
        raise RuleViolation(
            Violation(
                "memory.distinction",
                f"InfoUnit #{unit.pk} must say “{unit_term}” and not “{fact_term}”, and the fact the reverse "
                f"(the unit: “{unit.canonical_statement}”; the fact: “{fact_statement}”)",
                "unit_term",
            )
        )
    return candidate


def _distinction_learn(
    distinction: Distinction | None,
    *,
    project: Project,
    attempt: RegistryAttempt | None,
    actor: Actor,
    reason: str,
) -> TermDistinction | None:
    """Store a checked distinction (once per pair of terms; a pair already taught is kept as it is)."""
    if distinction is None:
        return None
    row, created = TermDistinction.objects.get_or_create(
        project=project,
        first=distinction.first,
        second=distinction.second,
        defaults={"reason": reason[:500], "attempt": attempt, "created_by": _person(actor)},
    )
    if created:
        audit_record(
            project=project,
            actor=actor,
            action="create",
            object_type="term_distinction",
            object_key=str(row),
            after={"first": row.first, "second": row.second, "attempt": attempt.pk if attempt else None},
            reason=reason,
        )
    return row


@transaction.atomic
def term_distinctions_declare(
    *, project: Project, terms: Sequence[str], actor: Actor, reason: str = ""
) -> list[TermDistinction]:
    """Declare a set of mutually distinct terms up front ("window seat, aisle seat, middle seat";
    "wool, linen, cotton") — every pair of them becomes a term distinction, as if a reviewer had
    detached a wrong merge of each pair. Pairs already taught are kept as they are. Returns the
    distinctions created.

    Refused (``RuleViolation`` rule ``memory.distinction``, field ``terms``; nothing written) for the
    problems ``memory.distinctions.term_set`` finds."""
    normalized, problems = term_set(terms)
    if problems:
        raise RuleViolation([Violation("memory.distinction", problem, "terms") for problem in problems])
    created: list[TermDistinction] = []
    for pair in term_pairs(normalized):
        row, new = TermDistinction.objects.get_or_create(
            project=project,
            first=pair.first,
            second=pair.second,
            defaults={"reason": (reason or "declared as distinct")[:500], "created_by": _person(actor)},
        )
        if new:
            created.append(row)
    audit_record(
        project=project,
        actor=actor,
        action="declare",
        object_type="term_distinction",
        object_key=", ".join(normalized)[:200],
        after={"terms": normalized, "created": [str(row) for row in created]},
        reason=reason,
    )
    return created


@transaction.atomic
def term_distinction_delete(*, distinction: TermDistinction, actor: Actor, reason: str = "") -> None:
    """Forget a term distinction: later pairs are left to the comparator again (units already kept
    apart stay apart). ``NotFound`` when it is already gone (two reviewers forgetting it at once)."""
    locked = TermDistinction.objects.select_for_update().filter(pk=distinction.pk).first()
    if locked is None:
        raise NotFound(f"term distinction {distinction} is already forgotten")
    distinction = locked
    audit_record(
        project=distinction.project,
        actor=actor,
        action="delete",
        object_type="term_distinction",
        object_key=str(distinction),
        before={"first": distinction.first, "second": distinction.second},
        reason=reason,
    )
    distinction.delete()


def _candidate_unit(attempt: RegistryAttempt) -> InfoUnit:
    """The InfoUnit an UNSURE attempt was staged against; ``NotFound`` when it is gone."""
    unit_id = attempt.candidate_unit_id
    unit = InfoUnit.objects.filter(pk=unit_id).first() if unit_id is not None else None
    if unit is None:
        raise NotFound(f"the candidate InfoUnit of attempt #{attempt.pk} no longer exists")
    return unit


@transaction.atomic
def registry_unsure_resolve(
    *,
    attempt: RegistryAttempt,
    decision: str,
    actor: Actor,
    reason: str = "",
    terms: tuple[str, str] | None = None,
) -> RegistryAttempt:
    """Resolve one UNSURE Info Registry attempt from the staging list (the review queue calls this).

    ``decision`` is ``"SAME"`` — the staged episode becomes evidence of the attempt's candidate
    InfoUnit (method ``REVIEW``, counted as a strong signal: a person checked it) — or ``"DIFFERENT"``
    — the episode founds a new InfoUnit in the same InfoKey. ``actor`` is the reviewer (recorded on the
    attempt, the unit's history and the audit trail); ``reason`` is free text (≤ 500 characters).

    Raises ``RuleViolation`` (rule ``memory.review_decision``) for another decision, (rule
    ``memory.review_state``) when the attempt is not PENDING — it was already resolved, or it was not
    UNSURE — and ``NotFound`` when its candidate unit is gone. Returns the updated attempt; nothing is
    written on a refusal.
    """
    # the InfoKey first, as every registry write takes it, then the attempt: no lock-order inversion
    info_key_id = RegistryAttempt.objects.filter(pk=attempt.pk).values_list("info_key_id", flat=True).first()
    if info_key_id is None:
        raise NotFound(f"registry attempt #{attempt.pk} not found")
    info_key = InfoKey.objects.select_for_update().get(pk=info_key_id)
    attempt = (
        RegistryAttempt.objects.select_for_update(of=("self",))
        .select_related("episode", "info_key")
        .get(pk=attempt.pk)
    )
    if decision not in (RegistryAttempt.Review.SAME, RegistryAttempt.Review.DIFFERENT):
        raise RuleViolation(Violation("memory.review_decision", "decide SAME or DIFFERENT", "decision"))
    if attempt.review_status != RegistryAttempt.Review.PENDING:
        state = attempt.review_status or attempt.decision
        raise RuleViolation(
            Violation(
                "memory.review_state", f"attempt #{attempt.pk} is not pending review ({state})", "decision"
            )
        )
    episode = attempt.episode
    actor_name = _actor_name(actor)
    taught = None
    if any((t or "").strip() for t in (terms or ())):
        if decision != RegistryAttempt.Review.DIFFERENT:
            raise RuleViolation(
                Violation("memory.distinction", "terms are taught with a DIFFERENT decision", "unit_term")
            )
        candidate = _candidate_unit(attempt)
        taught = _distinction_checked(
            terms, unit=candidate, fact_statement=_canonical_in_key(info_key, episode).statement
        )
    if decision == RegistryAttempt.Review.SAME:
        unit = _candidate_unit(attempt)
        if episode.signal != Signal.STRONG:
            EpisodicMemory.objects.filter(pk=episode.pk).update(signal=Signal.STRONG)
            episode.signal = Signal.STRONG
        top: dict[str, Any] = next((c for c in attempt.top_k if c.get("unit_id") == unit.pk), {})
        evidence_attach(
            unit=unit,
            episode=episode,
            attempt=attempt,
            similarity=float(top.get("cosine", 0.0)),
            method=Method.REVIEW,
            actor_name=actor_name,
        )
    else:
        unit = _unit_founded_by_review(
            info_key=info_key,
            episode=episode,
            canonical=_canonical_in_key(info_key, episode),
            attempt=attempt,
            actor_name=actor_name,
        )
    attempt.review_status = decision
    attempt.unit = unit
    attempt.resolved_by = _person(actor)
    attempt.resolved_at = timezone.now()
    attempt.resolution_reason = (reason or "")[:500]
    attempt.save(update_fields=["review_status", "unit", "resolved_by", "resolved_at", "resolution_reason"])
    InfoUnitEvent.objects.create(
        unit=unit,
        kind=InfoUnitEvent.Kind.REVIEWED,
        details={
            "attempt": attempt.pk,
            "decision": decision,
            "episode": episode.pk,
            "reason": attempt.resolution_reason,
            **({"distinction": f"{taught.first} ≠ {taught.second}"} if taught is not None else {}),
        },
        actor_name=actor_name,
    )
    audit_record(
        project=info_key.project,
        actor=actor,
        action="resolve",
        object_type="registry_attempt",
        object_key=str(attempt.pk),
        before={"review_status": RegistryAttempt.Review.PENDING},
        after={"review_status": decision, "unit": unit.pk},
        reason=reason,
    )
    _distinction_learn(taught, project=info_key.project, attempt=attempt, actor=actor, reason=reason)
    return attempt


@transaction.atomic
def info_evidence_detach(
    *, evidence: InfoEvidence, actor: Actor, reason: str, terms: tuple[str, str] | None = None
) -> InfoUnit:
    """Undo a wrong merge: take one piece of evidence off its InfoUnit and let its episode found an
    InfoUnit of its own in the same InfoKey (a reviewer's correction of a false MATCH).

    Under the InfoKey lock, like every registry write: the evidence row is removed, the old unit's
    counters (evidence, sources, strong/weak signals, last evidence) and reliability are recounted from
    the evidence it keeps, the episode founds a new unit (method ``REVIEW``) and points to it, and the
    registry attempt that made the MATCH is marked reviewed as DIFFERENT with the reviewer and the
    reason: a labelled false merge, kept for whoever tunes the comparator (nothing reads it automatically
    yet). Both units' histories and the audit trail record it.

    Refused (``RuleViolation``, nothing written): without a reason (rule ``memory.detach_reason``); for
    the episode that founded the unit (``memory.detach_founding`` — the unit *is* that fact); when the
    episode's canonical statement equals the unit's or another unit's of the key
    (``memory.detach_identical``: the registry would merge it again at once). ``NotFound`` when the
    evidence is gone (already detached).
    """
    reason = (reason or "").strip()
    if not reason:
        raise RuleViolation(
            Violation("memory.detach_reason", "say why this fact is not the unit's", "reason")
        )
    found = InfoEvidence.objects.filter(pk=evidence.pk).values_list("unit__info_key_id", flat=True).first()
    if found is None:
        raise NotFound("this evidence is no longer attached (already detached?)")
    # the InfoKey first, as every registry write takes it, then the rows under it: no lock-order inversion
    info_key = InfoKey.objects.select_for_update().get(pk=found)
    locked = (
        InfoEvidence.objects.select_for_update(of=("self",))
        .select_related("episode", "attempt")
        .filter(pk=evidence.pk)
        .first()
    )
    if locked is None:  # detached by someone else while this waited for the lock
        raise NotFound("this evidence is no longer attached (already detached?)")
    evidence = locked
    old = InfoUnit.objects.select_for_update().get(pk=evidence.unit_id)
    episode = evidence.episode
    if episode.pk in info_unit_founding_episodes(unit=old):
        raise RuleViolation(
            Violation(
                "memory.detach_founding", f"memory #{episode.pk} founded InfoUnit #{old.pk}: it is that fact"
            )
        )
    canonical = _canonical_in_key(info_key, episode)
    same = InfoUnit.objects.filter(info_key=info_key, canonical_digest=canonical.digest).first()
    if same is not None:
        raise RuleViolation(
            Violation(
                "memory.detach_identical",
                f"memory #{episode.pk} states the canonical fact of InfoUnit #{same.pk} word for word",
            )
        )
    taught = _distinction_checked(terms, unit=old, fact_statement=canonical.statement)
    actor_name = _actor_name(actor)
    evidence_id, attempt = evidence.pk, evidence.attempt
    evidence.delete()
    unit_recount(old)
    unit = _unit_founded_by_review(
        info_key=info_key, episode=episode, canonical=canonical, attempt=attempt, actor_name=actor_name
    )
    if attempt is not None:
        attempt.review_status = RegistryAttempt.Review.DIFFERENT
        attempt.unit = unit
        attempt.resolved_by = _person(actor)
        attempt.resolved_at = timezone.now()
        attempt.resolution_reason = reason[:500]
        attempt.save(
            update_fields=["review_status", "unit", "resolved_by", "resolved_at", "resolution_reason"]
        )
    details: dict[str, Any] = {"episode": episode.pk, "evidence": evidence_id, "reason": reason[:500]}
    if taught is not None:
        details["distinction"] = f"{taught.first} ≠ {taught.second}"
    InfoUnitEvent.objects.create(
        unit=old,
        kind=InfoUnitEvent.Kind.DETACHED,
        details={**details, "new_unit": unit.pk},
        actor_name=actor_name,
    )
    InfoUnitEvent.objects.create(
        unit=unit,
        kind=InfoUnitEvent.Kind.DETACHED,
        details={**details, "from_unit": old.pk},
        actor_name=actor_name,
    )
    audit_record(
        project=info_key.project,
        actor=actor,
        action="detach",
        object_type="info_evidence",
        object_key=str(evidence_id),
        before={"unit": old.pk},
        after={"unit": unit.pk},
        reason=reason,
    )
    _distinction_learn(taught, project=info_key.project, attempt=attempt, actor=actor, reason=reason)
    return unit


# --- protections, taxonomy metadata, alias redirection ------------------------------------------


PROMOTION_MIN_STRONG = 2
PROMOTION_MIN_SOURCES = 2


def info_unit_promote(*, unit: InfoUnit, actor: Actor, reason: str = "") -> InfoUnit:
    """Mark an InfoUnit as a candidate for offline consolidation into stable knowledge (§4.2).

    Anti-confirmation bias (§2.10.5.9.1): refused when the unit rests on weak signals alone (rule
    ``memory.weak_signals_only``), however many there are, when fewer than ``PROMOTION_MIN_STRONG``
    strong signals (``memory.strong_signals``) or ``PROMOTION_MIN_SOURCES`` distinct sources
    (``memory.single_source``) back it, and when its canonical text holds PII
    (``memory.pii_in_canonical``). The unit is left unchanged by a refusal, which is recorded in its
    history.
    """
    actor_name = _actor_name(actor)
    with transaction.atomic():
        unit = InfoUnit.objects.select_for_update().get(pk=unit.pk)
        violations = []
        if unit.strong_signals == 0:
            violations.append(
                Violation(
                    "memory.weak_signals_only",
                    f"InfoUnit #{unit.pk} rests on {unit.weak_signals} weak signal(s) only: repetition is not truth",
                )
            )
        elif unit.strong_signals < PROMOTION_MIN_STRONG:
            violations.append(
                Violation(
                    "memory.strong_signals",
                    f"needs {PROMOTION_MIN_STRONG} strong signals ({unit.strong_signals})",
                )
            )
        if unit.distinct_sources < PROMOTION_MIN_SOURCES:
            violations.append(
                Violation(
                    "memory.single_source",
                    f"needs {PROMOTION_MIN_SOURCES} distinct sources ({unit.distinct_sources})",
                )
            )
        if pii.detect(unit.canonical_text):
            violations.append(Violation("memory.pii_in_canonical", "the canonical text holds personal data"))
        if not violations:
            unit.status = InfoUnit.Status.PROMOTION_CANDIDATE
            unit.save(update_fields=["status", "updated_at"])
            InfoUnitEvent.objects.create(
                unit=unit,
                kind=InfoUnitEvent.Kind.PROMOTION,
                details={"reason": reason[:500]},
                actor_name=actor_name,
            )
            return unit
    InfoUnitEvent.objects.create(
        unit=unit,
        kind=InfoUnitEvent.Kind.PROMOTION_REFUSED,
        details={"rules": [v.rule for v in violations]},
        actor_name=actor_name,
    )
    raise RuleViolation(violations)


@transaction.atomic
def info_key_label_paths_refresh(*, project: Project) -> int:
    """Bring LabelPath_current (metadata) of every InfoKey, InfoUnit and labelled episode up to date with
    the taxonomy after labels were renamed or moved. InfoKeys never change (§4.3). Returns the number of
    InfoKeys whose path changed."""
    from taxonomy.models import Label

    paths = dict(Label.objects.filter(project=project).values_list("label_id", "path"))
    changed = 0
    for info_key in InfoKey.objects.filter(project=project):
        path = " + ".join(paths[i] for i in info_key.label_signature.split("+") if paths.get(i))
        if path and path != info_key.label_path_current:
            old = info_key.label_path_current
            InfoKey.objects.filter(pk=info_key.pk).update(label_path_current=path)
            units = list(InfoUnit.objects.filter(info_key=info_key).values_list("pk", flat=True))
            InfoUnit.objects.filter(pk__in=units).update(label_path_current=path)
            EpisodicMemory.objects.filter(project=project, label_signature=info_key.label_signature).update(
                label_path_current=path
            )
            InfoUnitEvent.objects.bulk_create(
                InfoUnitEvent(
                    unit_id=pk, kind=InfoUnitEvent.Kind.LABEL_PATH, details={"from": old, "to": path}
                )
                for pk in units
            )
            changed += 1
    return changed


@transaction.atomic
def memory_redirect_soft_update(*, redirects: dict[int, tuple[str, ...]], release_version: int | None) -> int:
    """Soft-update the user context after a MemoryRead followed the alias table (§4.3): each episode's
    ``node_ids_current`` becomes the nodes its original node lives on in. ``node_id`` never changes, so
    the update is reversible and the memory is never orphaned. Returns the number of episodes updated."""
    updated = 0
    now = timezone.now()
    current = dict(
        EpisodicMemory.objects.filter(pk__in=list(redirects)).values_list("pk", "node_ids_current")
    )
    for episode_id, targets in redirects.items():
        if episode_id in current and list(current[episode_id] or []) != list(targets):
            updated += EpisodicMemory.objects.filter(pk=episode_id).update(
                node_ids_current=list(targets), redirected_at=now, redirect_release_version=release_version
            )
    return updated


def recall_cache_clear() -> None:
    """Forget the in-process recall matrices and term distinctions (tests and the benchmark start clean)."""
    recall_index.clear()
    term_distinctions_cache_clear()
