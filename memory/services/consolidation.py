"""Offline consolidation (ARG §4.2): stable episodic facts become semantic InfoUnits.

Terms:

* a *private unit* is an InfoUnit of the USER or ORG scope. Its InfoKey names one subject (a user or an
  org), so the same fact written by three users lives in three private units;
* a *pattern* is a group of private units of one ``(LabelSignature, InfoType)`` that state the same fact:
  the first unit (lowest id) leads, and a unit joins it when the Info Registry's comparator says SAME for
  the pair (identical canonical digest, or cosine in the grey zone and no discriminator firing), with the
  project's merge bar (``selectors.registry_params``). An UNSURE pair is never joined: it stays apart and
  is counted ``unsure_pairs``;
* a *semantic unit* is a GLOBAL-scope InfoUnit. Consolidation writes it through the ordinary MemoryWrite →
  Info Registry path (InfoKey-first: the hard filter on ``(LabelSignature, InfoType, GLOBAL)``, then recall
  and the grey-zone comparator) from a *consolidation episode*: an episodic item of source ``offline``, in
  the GLOBAL scope, with no user, whose text is the pattern's representative statement and whose
  provenance records the pattern's support (how many subjects, sessions, episodes, strong and weak
  signals, segments; the source unit ids), never who;
* a pattern's *fingerprint* is a digest of its units and their evidence counts: the same pattern with no
  new evidence has the same fingerprint.

``memory_consolidate`` reads the private units with evidence in the last ``window_days`` and, for each
pattern, in this order:

1. *personal facts* (UserProfile, UserPreference) never form a pattern: they are about one person;
2. *stable recurrence across time* — its episodes span ≥ ``min_sessions`` sessions and ≥
   ``min_span_hours`` from the first to the last (``skipped_unstable``); a unit a reviewer marked
   PROMOTION_CANDIDATE (``info_unit_promote``, which checked its strong signals and sources) makes its
   pattern stable;
3. *source diversity* — ≥ ``min_subjects`` distinct users (or orgs) wrote it: one user repeating a fact is
   not shared knowledge (``skipped_sources``);
4. *taxonomy coherence* — every label of its signature is still ACTIVE (``skipped_taxonomy``);
5. *no PII* — the representative is the unit closest to the pattern's centroid whose text holds neither
   personal data nor a Memory Guard placeholder; when there is none the pattern is ``skipped_pii``;
6. *idempotence* — a pattern whose fingerprint was already written is ``unchanged``;
7. *the write* (one transaction per pattern) — the registry MATCHes an existing semantic unit
   (``reinforced``), creates one (``promoted``), or stages the consolidation episode UNSURE for a
   reviewer (``unsure``: nothing is merged silently). The semantic unit and the pattern's units get a
   CONSOLIDATED history line (the semantic unit's carries the support the offline loop's memory-node
   generator reads), and the pattern's PROMOTION_CANDIDATE units go back to ACTIVE: they are handled.

A GLOBAL unit marked PROMOTION_CANDIDATE is already semantic: it gets its CONSOLIDATED line (its support
from its own evidence) and goes back to ACTIVE. A personal-fact PROMOTION_CANDIDATE is refused
(PROMOTION_REFUSED line, back to ACTIVE). Nothing here creates graph structure: a semantic unit becomes
a node only through a reviewed NODE_ADD proposal of the offline loop.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone

from arg_platform.errors import RuleViolation
from projects.models import Project
from taxonomy.models import Label, LabelStatus

from .. import pii
from ..canonical import Canonical, InfoType, canonicalize
from ..comparator import RegistryParams, Verdict, compare
from ..models import EpisodicMemory, InfoEvidence, InfoKey, InfoUnit, InfoUnitEvent, RegistryAttempt, Scope
from ..models import Signal as MemorySignal
from ..registry import vector_from_bytes
from ..selectors import registry_params
from .registry_review import PROMOTION_MIN_STRONG
from .writes import label_context_for, memory_write

ACTOR = "consolidation"
PERSONAL_TYPES = frozenset({InfoType.USER_PROFILE, InfoType.USER_PREFERENCE})
PRIVATE_SCOPES = (Scope.USER, Scope.ORG)


@dataclass(frozen=True)
class ConsolidationParams:
    """The bars of §4.2 consolidation (see the module doc); an operator sets them in
    ``settings.MEMORY_CONSOLIDATION`` (``from_settings``)."""

    window_days: int = 30  # private units with evidence this recent are read
    min_subjects: int = 3  # distinct users (orgs) before a private pattern is aggregated
    min_sessions: int = 2  # distinct sessions the pattern's episodes come from
    min_span_hours: float = 24.0  # first → last episode of the pattern at least this far apart

    @classmethod
    def from_settings(cls) -> ConsolidationParams:
        """The defaults above, overridden by ``settings.MEMORY_CONSOLIDATION`` (checked by ``checked``)."""
        return cls.checked(getattr(settings, "MEMORY_CONSOLIDATION", {}) or {})

    @classmethod
    def checked(cls, values: dict[str, Any]) -> ConsolidationParams:
        """``values`` over the defaults; an unknown name or a value out of range is ImproperlyConfigured."""
        unknown = set(values) - {f.name for f in fields(cls)}
        if unknown:
            raise ImproperlyConfigured(f"MEMORY_CONSOLIDATION: unknown {sorted(unknown)}")
        params = replace(cls(), **values)
        # fewer than two subjects would aggregate one person's facts: the diversity bar is the privacy bar
        if not (isinstance(params.min_subjects, int) and params.min_subjects >= 2):
            raise ImproperlyConfigured("MEMORY_CONSOLIDATION['min_subjects'] must be an integer >= 2")
        if not (isinstance(params.min_sessions, int) and params.min_sessions >= 1):
            raise ImproperlyConfigured("MEMORY_CONSOLIDATION['min_sessions'] must be an integer >= 1")
        if not (isinstance(params.window_days, int) and params.window_days >= 1):
            raise ImproperlyConfigured("MEMORY_CONSOLIDATION['window_days'] must be an integer >= 1")
        if not (isinstance(params.min_span_hours, int | float) and params.min_span_hours >= 0):
            raise ImproperlyConfigured("MEMORY_CONSOLIDATION['min_span_hours'] must be a number >= 0")
        return params


@dataclass
class _Pattern:
    units: list[InfoUnit]
    key: InfoKey

    @property
    def candidates(self) -> list[InfoUnit]:
        return [u for u in self.units if u.status == InfoUnit.Status.PROMOTION_CANDIDATE]


def has_personal_data(text: str) -> bool:
    """``text`` holds personal data, or a placeholder where the Memory Guard replaced some."""
    return bool(pii.PLACEHOLDER_RE.search(text or "")) or bool(pii.detect(text or ""))


def memory_consolidate(
    *, project: Project, params: ConsolidationParams | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """Consolidate ``project``'s stable private facts into semantic InfoUnits (see the module doc).

    Returns the counts the offline loop records: ``patterns`` considered, ``promoted`` (new semantic
    units), ``reinforced`` (evidence added to one), ``unsure`` (staged for review), ``unchanged``,
    ``skipped_unstable``, ``skipped_sources``, ``skipped_taxonomy``, ``skipped_pii``, ``unsure_pairs``
    (private units left apart because the comparator was not sure), ``candidates_handled`` and
    ``candidates_refused`` (PROMOTION_CANDIDATE units consumed), and ``params``.
    """
    params = params or ConsolidationParams.from_settings()
    now = now or timezone.now()
    stats: Counter[str] = Counter()
    stats["patterns"] = 0
    for name in ("promoted", "reinforced", "unsure", "unchanged", "candidates_handled", "candidates_refused"):
        stats[name] = 0
    for name in ("skipped_unstable", "skipped_sources", "skipped_taxonomy", "skipped_pii", "unsure_pairs"):
        stats[name] = 0
    _consume_global_candidates(project, stats)
    units = list(
        InfoUnit.objects.filter(
            project=project,
            scope__in=PRIVATE_SCOPES,
            status__in=(InfoUnit.Status.ACTIVE, InfoUnit.Status.PROMOTION_CANDIDATE),
            last_evidence_at__gte=now - timedelta(days=params.window_days),
        )
        .select_related("info_key")
        .order_by("pk")
    )
    personal = [u for u in units if u.info_type in PERSONAL_TYPES]
    for unit in personal:
        if unit.status == InfoUnit.Status.PROMOTION_CANDIDATE:
            _refuse_personal(unit, stats)
    for pattern in _patterns(project, [u for u in units if u.info_type not in PERSONAL_TYPES], stats):
        stats["patterns"] += 1
        _consolidate_one(project, pattern, params, stats)
    return {**dict(stats), "params": asdict(params)}


# --- patterns ----------------------------------------------------------------------------------------


def _patterns(project: Project, units: list[InfoUnit], stats: Counter[str]) -> list[_Pattern]:
    """Private units grouped by ``(LabelSignature, InfoType)`` then by the comparator, with the project's
    registry parameters (its merge bar; see module doc)."""
    registry = registry_params(project=project)
    groups: dict[tuple[str, str], list[InfoUnit]] = {}
    for unit in units:
        groups.setdefault((unit.label_signature, unit.info_type), []).append(unit)
    out: list[_Pattern] = []
    for members in groups.values():
        key = members[0].info_key
        canonicals = _canonicals(project, key, members)
        vectors = np.stack([_vector(u) for u in members])
        free = [True] * len(members)
        by_digest: dict[str, list[int]] = {}
        for j, canonical in enumerate(canonicals):
            by_digest.setdefault(canonical.digest, []).append(j)
        for i, leader in enumerate(members):
            if not free[i]:
                continue
            free[i] = False
            pattern = [leader]
            cosines = vectors @ vectors[i]  # one product per leader; the comparator only in the grey zone up
            near = np.flatnonzero(cosines >= registry.grey).tolist()
            for j in sorted(set(near) | set(by_digest[canonicals[i].digest])):
                if j <= i or not free[j]:
                    continue
                verdict = _same_fact(canonicals[i], canonicals[j], float(cosines[j]), registry)
                if verdict == Verdict.SAME:
                    free[j] = False
                    pattern.append(members[j])
                elif verdict == Verdict.UNSURE:
                    stats["unsure_pairs"] += 1
            out.append(_Pattern(units=pattern, key=key))
    return out


def _canonicals(project: Project, key: InfoKey, units: Sequence[InfoUnit]) -> list[Canonical]:
    labels, _ = label_context_for(
        project=project, label_ids=key.label_ids, primary_label_id=key.primary_label_id or None, trusted=True
    )
    return [
        canonicalize(
            u.founding_text, info_type=u.info_type, synonyms=labels.synonyms, module=labels.primary_name
        )
        for u in units
    ]


def _same_fact(a: Canonical, b: Canonical, cosine: float, registry: RegistryParams) -> str:
    if a.digest == b.digest:
        return Verdict.SAME
    if cosine < registry.grey:
        return Verdict.DIFFERENT
    return compare(a, b, cosine, registry).verdict


def _vector(unit: InfoUnit) -> np.ndarray:
    vector = vector_from_bytes(unit.embedding)
    assert vector is not None  # an InfoUnit always has its embedding
    return vector


# --- one pattern -------------------------------------------------------------------------------------


def _support(units: Iterable[InfoUnit]) -> dict[str, Any]:
    """The pattern's support, read from its evidence episodes: counts only, never who."""
    units = list(units)
    rows = list(
        InfoEvidence.objects.filter(unit__in=units).select_related("episode").defer("episode__embedding")
    )
    episodes = {r.episode.pk: r for r in rows}
    sessions = {r.episode.session_id or r.episode.request_id or f"#{pk}" for pk, r in episodes.items()}
    times = sorted(r.episode.occurred_at for r in episodes.values())
    segments = Counter(
        f"{(r.episode.provenance or {}).get('role') or ''}|{(r.episode.provenance or {}).get('channel') or ''}"
        for r in episodes.values()
    )
    strong = sum(1 for r in episodes.values() if r.signal == MemorySignal.STRONG)
    return {
        "subjects": len({(u.scope, u.subject) for u in units}),
        "sessions": len(sessions),
        "episodes": len(episodes),
        "strong": strong,
        "weak": len(episodes) - strong,
        "span_hours": round((times[-1] - times[0]).total_seconds() / 3600, 2) if times else 0.0,
        "segments": dict(segments.most_common(10)),
    }


def _fingerprint(units: Iterable[InfoUnit]) -> str:
    parts = sorted(f"{u.pk}:{u.evidence_count}" for u in units)
    return hashlib.sha256(",".join(parts).encode()).hexdigest()[:32]


def _representative(pattern: _Pattern) -> InfoUnit | None:
    """The pattern's unit closest to its centroid whose text holds no personal data (None: none)."""
    vectors = np.stack([_vector(u) for u in pattern.units])
    centroid = vectors.mean(axis=0)
    order: list[int] = np.argsort(-(vectors @ centroid), kind="stable").tolist()
    for position in order:
        unit = pattern.units[position]
        if not has_personal_data(unit.founding_text) and not has_personal_data(unit.canonical_text):
            return unit
    return None


def _consolidate_one(
    project: Project, pattern: _Pattern, params: ConsolidationParams, stats: Counter[str]
) -> None:
    if not pattern.candidates and sum(u.evidence_count for u in pattern.units) < params.min_sessions:
        stats["skipped_unstable"] += 1  # fewer episodes than sessions needed (most one-off facts): no query
        return
    support = _support(pattern.units)
    stable = support["sessions"] >= params.min_sessions and support["span_hours"] >= params.min_span_hours
    if not stable and not pattern.candidates:
        stats["skipped_unstable"] += 1
        return
    if support["subjects"] < params.min_subjects:
        stats["skipped_sources"] += 1  # PROMOTION_CANDIDATE units wait for more users
        return
    signature = pattern.key.label_signature.split("+")
    active = Label.objects.filter(project=project, label_id__in=signature, status=LabelStatus.ACTIVE).count()
    if active != len(signature):
        stats["skipped_taxonomy"] += 1
        return
    representative = _representative(pattern)
    if representative is None:
        stats["skipped_pii"] += 1
        return
    fingerprint = _fingerprint(pattern.units)
    details = {**support, "fingerprint": fingerprint, "units": [u.pk for u in pattern.units]}
    strong = support["strong"] >= PROMOTION_MIN_STRONG
    with transaction.atomic():
        # the pattern's units locked first: a concurrent run waits here, then finds the fingerprint
        list(InfoUnit.objects.select_for_update().filter(pk__in=details["units"]).values_list("pk"))
        if EpisodicMemory.objects.filter(
            project=project,
            source=EpisodicMemory.Source.OFFLINE,
            provenance__consolidation__fingerprint=fingerprint,
        ).exists():
            stats["unchanged"] += 1
            return
        try:
            result = memory_write(
                project=project,
                text=representative.founding_text,
                scope=Scope.GLOBAL,
                info_type=representative.info_type,
                label_ids=pattern.key.label_ids,
                primary_label_id=pattern.key.primary_label_id or None,
                labels_trusted=True,
                signal=MemorySignal.STRONG if strong else MemorySignal.WEAK,
                source=EpisodicMemory.Source.OFFLINE,
                provenance={"consolidation": details},
                vector=_vector(representative),
            )
        except RuleViolation:  # the Memory Guard found personal data the representative check did not
            stats["skipped_pii"] += 1
            return
        decision = result.decision
        if decision == RegistryAttempt.Decision.UNSURE:
            stats["unsure"] += 1
        else:
            stats["promoted" if decision == RegistryAttempt.Decision.NEW else "reinforced"] += 1
        semantic = result.unit
        if semantic is not None:
            InfoUnitEvent.objects.create(
                unit=semantic,
                kind=InfoUnitEvent.Kind.CONSOLIDATED,
                details={**details, "decision": decision},
                actor_name=ACTOR,
            )
        for unit in pattern.units:
            InfoUnitEvent.objects.create(
                unit=unit,
                kind=InfoUnitEvent.Kind.CONSOLIDATED,
                details={
                    "fingerprint": fingerprint,
                    "decision": decision,
                    "semantic_unit": semantic.pk if semantic else None,
                    "episode": result.episode.pk,
                },
                actor_name=ACTOR,
            )
        handled = [u.pk for u in pattern.candidates]
        if handled:
            InfoUnit.objects.filter(pk__in=handled).update(
                status=InfoUnit.Status.ACTIVE, updated_at=timezone.now()
            )
            stats["candidates_handled"] += len(handled)


def _consume_global_candidates(project: Project, stats: Counter[str]) -> None:
    """A GLOBAL PROMOTION_CANDIDATE is already semantic: record its support, mark it handled."""
    for unit in InfoUnit.objects.filter(
        project=project, scope=Scope.GLOBAL, status=InfoUnit.Status.PROMOTION_CANDIDATE
    ).order_by("pk"):
        if unit.info_type in PERSONAL_TYPES:
            _refuse_personal(unit, stats)
            continue
        with transaction.atomic():
            locked = InfoUnit.objects.select_for_update().get(pk=unit.pk)
            if locked.status != InfoUnit.Status.PROMOTION_CANDIDATE:
                continue  # handled meanwhile
            support = _support([locked])
            support["subjects"] = locked.distinct_sources  # a GLOBAL unit's sources are its writers
            InfoUnitEvent.objects.create(
                unit=locked,
                kind=InfoUnitEvent.Kind.CONSOLIDATED,
                details={
                    **support,
                    "fingerprint": _fingerprint([locked]),
                    "units": [locked.pk],
                    "decision": "MATCH",
                },
                actor_name=ACTOR,
            )
            locked.status = InfoUnit.Status.ACTIVE
            locked.save(update_fields=["status", "updated_at"])
            stats["candidates_handled"] += 1


def _refuse_personal(unit: InfoUnit, stats: Counter[str]) -> None:
    with transaction.atomic():
        updated = InfoUnit.objects.filter(pk=unit.pk, status=InfoUnit.Status.PROMOTION_CANDIDATE).update(
            status=InfoUnit.Status.ACTIVE, updated_at=timezone.now()
        )
        if updated:
            InfoUnitEvent.objects.create(
                unit=unit,
                kind=InfoUnitEvent.Kind.PROMOTION_REFUSED,
                details={"rules": ["memory.personal_fact"], "by": ACTOR},
                actor_name=ACTOR,
            )
            stats["candidates_refused"] += 1
