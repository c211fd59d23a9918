"""The Info Registry's human verbs: a reviewer settles what the comparator could not or got wrong.

* the *staging list* holds the UNSURE attempts; ``registry_unsure_resolve`` decides one SAME (the staged
  episode becomes evidence of the candidate InfoUnit) or DIFFERENT (it founds a new InfoUnit);
* ``info_evidence_detach`` undoes a wrong merge (a false MATCH): the episode leaves its InfoUnit and
  founds one of its own;
* both may teach a term distinction with a DIFFERENT verdict (``term_distinctions``);
* ``info_unit_promote`` marks an InfoUnit as a candidate for offline consolidation, refused when weak
  signals or a single source are all that back it.

A unit *founded by review* is created from a staged or detached episode with method ``REVIEW``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from arg_platform.audit import Actor, actor_user, audit_record
from arg_platform.embedder import get_embedder
from arg_platform.errors import NotFound, RuleViolation, Violation

from .. import pii
from ..canonical import Canonical, canonicalize
from ..comparator import Method
from ..models import EpisodicMemory, InfoEvidence, InfoKey, InfoUnit, InfoUnitEvent, RegistryAttempt, Signal
from ..registry import evidence_attach, unit_create, unit_recount
from ..selectors import info_unit_founding_episodes
from .term_distinctions import _distinction_checked, _distinction_learn
from .writes import label_context_for


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
    attempt.resolved_by = actor_user(actor)
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
        attempt.resolved_by = actor_user(actor)
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
