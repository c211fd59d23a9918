"""The Info Registry (ARG §2.10.5): InfoKey hard filter, soft recall, uniqueness decision, the write.

``registry_write`` is the one write path (the memory service, the API and the benchmark all call it):

1. **hard filter** — take the InfoKey row ``(LabelSignature, InfoType, Scope)`` *for update*: every
   write of one key is serialized on it (two requests writing the same fact at once make one InfoUnit);
2. **soft recall** — cosine of the canonical statement's embedding against the key's InfoUnits (an
   in-process matrix per key, refreshed incrementally: units are append-only), top-K, plus SimHash
   neighbours within ``simhash_max_distance`` bits, plus an exact canonical-digest hit;
3. **decision** — the comparator (``memory.comparator.compare``) on each candidate, best cosine first:
   a pair the project's reviewers taught apart (``memory.distinctions``) is DIFFERENT whatever the
   comparator said; the first SAME is a MATCH (evidence attached, reliability updated), else the best
   UNSURE is staged, else NEW; a NEW that hits the unique (InfoKey, canonical digest) constraint becomes
   a MATCH;
4. **log** — one ``RegistryAttempt`` with InfoKey, LabelPath_current, top-K + scores, decision, method,
   flags (§2.10.5.10).

Nothing here calls the embedder: the caller passes the vector, computed before the transaction so the
lock is held for milliseconds.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from .canonical import Canonical, canonicalize, hamming64
from .comparator import DEFAULT_PARAMS, Comparison, Method, RegistryParams, Verdict, compare
from .distinctions import NO_DISTINCTIONS, Distinctions
from .models import (
    EpisodicMemory,
    InfoEvidence,
    InfoKey,
    InfoUnit,
    InfoUnitEvent,
    MemoryFlag,
    RegistryAttempt,
    Signal,
)

EMBEDDING_DTYPE = np.float32


def vector_to_bytes(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=EMBEDDING_DTYPE).tobytes()


def vector_from_bytes(blob: bytes | memoryview | None) -> np.ndarray | None:
    if blob is None:
        return None
    return np.frombuffer(bytes(blob), dtype=EMBEDDING_DTYPE)


# --- InfoKey ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InfoKeyValue:
    """``InfoKey = (LabelSignature, InfoType, Scope)``; Scope carries its subject (``USER:u-42``)."""

    label_signature: str
    info_type: str
    scope: str
    subject: str = ""

    @property
    def key(self) -> str:
        scope = f"{self.scope}:{self.subject}" if self.subject else self.scope
        return f"{self.label_signature}|{self.info_type}|{scope}"


def label_signature_for(
    label_ids: Sequence[str], *, primary: str | None = None, mode: str = "primary"
) -> str:
    """The LabelSignature of §2.10.5.3 from stable LabelIDs: the PrimaryLabelID (``mode="primary"``,
    the Weaver's first label unless ``primary`` is given) or the sorted LabelID set (``mode="set"``)."""
    ids = [i for i in dict.fromkeys(label_ids) if i]
    if not ids:
        return ""
    if mode == "set":
        return "+".join(sorted(ids))
    return primary if primary in ids else ids[0]


# --- recall index ------------------------------------------------------------------------------------


@dataclass
class _KeyIndex:
    last_id: int = 0
    count: int = 0
    ids: list[int] = field(default_factory=list)
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=EMBEDDING_DTYPE))
    simhashes: list[int] = field(default_factory=list)
    digests: dict[str, int] = field(default_factory=dict)
    canonicals: dict[int, Canonical] = field(default_factory=dict)


class RecallIndex:
    """Per-process cache of each InfoKey's unit vectors (LRU over keys). Units are never deleted by the
    registry, so a refresh only reads the units with an id above the last one it saw; a count that
    does not add up (units removed by hand) reloads the key."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._keys: OrderedDict[tuple[int, float], _KeyIndex] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()

    def for_key(self, info_key: InfoKey) -> _KeyIndex:
        # the creation time is part of the cache key: a rolled-back key's id may be issued again
        cache_key = (info_key.pk, info_key.created_at.timestamp())
        with self._lock:
            entry = self._keys.get(cache_key)
            if entry is not None:
                self._keys.move_to_end(cache_key)
        if entry is None or entry.count > info_key.unit_count:
            entry = _KeyIndex()
        if entry.count < info_key.unit_count:
            rows = list(
                InfoUnit.objects.filter(info_key=info_key, pk__gt=entry.last_id)
                .order_by("pk")
                .values_list("pk", "embedding", "simhash", "canonical_digest")
            )
            if rows:
                vectors = np.stack([np.frombuffer(bytes(r[1]), dtype=EMBEDDING_DTYPE) for r in rows])
                matrix = vectors if entry.matrix.size == 0 else np.vstack([entry.matrix, vectors])
                entry = _KeyIndex(
                    last_id=rows[-1][0],
                    count=entry.count + len(rows),
                    ids=entry.ids + [r[0] for r in rows],
                    matrix=matrix,
                    simhashes=entry.simhashes + [int(r[2]) for r in rows],
                    digests={**entry.digests, **{r[3]: r[0] for r in rows}},
                    canonicals=entry.canonicals,
                )
            if entry.count != info_key.unit_count:  # rows went missing: start over from the table
                entry = self._reload(info_key)
            with self._lock:
                self._keys[cache_key] = entry
                self._keys.move_to_end(cache_key)
                while len(self._keys) > self.capacity:
                    self._keys.popitem(last=False)
        return entry

    def _reload(self, info_key: InfoKey) -> _KeyIndex:
        rows = list(
            InfoUnit.objects.filter(info_key=info_key)
            .order_by("pk")
            .values_list("pk", "embedding", "simhash", "canonical_digest")
        )
        if not rows:
            return _KeyIndex()
        return _KeyIndex(
            last_id=rows[-1][0],
            count=len(rows),
            ids=[r[0] for r in rows],
            matrix=np.stack([np.frombuffer(bytes(r[1]), dtype=EMBEDDING_DTYPE) for r in rows]),
            simhashes=[int(r[2]) for r in rows],
            digests={r[3]: r[0] for r in rows},
        )


recall_index = RecallIndex()


# --- decision ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    unit_id: int
    cosine: float
    simhash_distance: int
    via: str  # "vector" | "simhash" | "exact"
    comparison: Comparison | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "unit_id": self.unit_id,
            "cosine": round(self.cosine, 4),
            "simhash_distance": self.simhash_distance,
            "via": self.via,
        }
        if self.comparison is not None:
            out["verdict"] = self.comparison.verdict
            out["reasons"] = list(self.comparison.reasons)
        return out


@dataclass(frozen=True)
class RegistryDecision:
    decision: str  # MATCH | NEW | UNSURE
    method: str
    candidates: tuple[Candidate, ...] = ()
    unit_id: int | None = None  # MATCH: the unit; UNSURE: the staged candidate
    reasons: tuple[str, ...] = ()


def _candidate_canonical(index: _KeyIndex, unit_id: int, synonyms: dict[str, str] | None) -> Canonical:
    cached = index.canonicals.get(unit_id)
    if cached is None:
        unit = InfoUnit.objects.only("founding_text", "info_type", "canonical_fields").get(pk=unit_id)
        cached = canonicalize(
            unit.founding_text,
            info_type=unit.info_type,
            synonyms=synonyms,
            module=str(unit.canonical_fields.get("module", "")),
        )
        index.canonicals[unit_id] = cached
    return cached


def registry_decide(
    *,
    info_key: InfoKey,
    canonical: Canonical,
    vector: np.ndarray,
    params: RegistryParams = DEFAULT_PARAMS,
    synonyms: dict[str, str] | None = None,
    distinctions: Distinctions = NO_DISTINCTIONS,
) -> RegistryDecision:
    """Hard filter (the key's units only) → soft recall → comparator, then the project's term
    distinctions (``memory.distinctions``: a reviewer's rule outranks the comparator); see the module doc."""
    index = recall_index.for_key(info_key)
    if not index.ids:
        return RegistryDecision(RegistryAttempt.Decision.NEW, Method.VECTOR_ONLY)
    exact = index.digests.get(canonical.digest)
    cosines = index.matrix @ np.asarray(vector, dtype=EMBEDDING_DTYPE)
    order = np.argsort(-cosines)[: params.top_k]
    picked: dict[int, Candidate] = {}
    for position in order:
        unit_id = index.ids[int(position)]
        picked[unit_id] = Candidate(
            unit_id,
            float(cosines[position]),
            hamming64(canonical.simhash, index.simhashes[position]),
            "vector",
        )
    simhashes = np.array(index.simhashes, dtype=np.int64).view(np.uint64)
    distances = _popcount(simhashes ^ np.uint64(canonical.simhash & ((1 << 64) - 1)))
    for position in np.nonzero(distances <= params.simhash_max_distance)[0][: params.top_k]:
        unit_id = index.ids[int(position)]
        if unit_id not in picked:
            picked[unit_id] = Candidate(
                unit_id, float(cosines[position]), int(distances[position]), "simhash"
            )
    if exact is not None:
        position = index.ids.index(exact)
        return RegistryDecision(
            RegistryAttempt.Decision.MATCH,
            Method.CANONICAL_EXACT,
            (Candidate(exact, float(cosines[position]), 0, "exact"),),
            exact,
        )
    judged: list[Candidate] = []
    for candidate in sorted(picked.values(), key=lambda c: -c.cosine):
        if candidate.cosine < params.grey and candidate.simhash_distance > params.simhash_max_distance:
            comparison = Comparison(Verdict.DIFFERENT, Method.VECTOR_ONLY, ("below_grey_zone",))
        else:
            other = _candidate_canonical(index, candidate.unit_id, synonyms)
            comparison = compare(canonical, other, candidate.cosine, params)
            if comparison.verdict != Verdict.DIFFERENT:
                taught = distinctions.firing(canonical.statement, other.statement)
                if taught is not None:
                    comparison = Comparison(Verdict.DIFFERENT, Method.VECTOR_RULES, (taught.reason,))
        judged.append(
            Candidate(
                candidate.unit_id, candidate.cosine, candidate.simhash_distance, candidate.via, comparison
            )
        )
    for candidate in judged:
        assert candidate.comparison is not None
        if candidate.comparison.verdict == Verdict.SAME:
            method = Method.SIMHASH_ASSIST if candidate.via == "simhash" else candidate.comparison.method
            return RegistryDecision(
                RegistryAttempt.Decision.MATCH,
                method,
                tuple(judged),
                candidate.unit_id,
                candidate.comparison.reasons,
            )
    unsure = [c for c in judged if c.comparison and c.comparison.verdict == Verdict.UNSURE]
    if unsure:
        best = unsure[0]
        assert best.comparison is not None
        return RegistryDecision(
            RegistryAttempt.Decision.UNSURE,
            best.comparison.method,
            tuple(judged),
            best.unit_id,
            best.comparison.reasons,
        )
    reasons = tuple(r for c in judged[:1] if c.comparison for r in c.comparison.reasons)
    method = judged[0].comparison.method if judged and judged[0].comparison else Method.VECTOR_ONLY
    return RegistryDecision(RegistryAttempt.Decision.NEW, method, tuple(judged), None, reasons)


def _popcount(values: np.ndarray) -> np.ndarray:
    """Bit counts of uint64 values (numpy < 2.0 has no bitwise_count)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(values).astype(np.int64)
    bytes_view = values.view(np.uint8).reshape(-1, 8)
    return np.unpackbits(bytes_view, axis=1).sum(axis=1).astype(np.int64)


# --- the write -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegistryOutcome:
    attempt: RegistryAttempt
    unit: InfoUnit | None
    decision: RegistryDecision


def reliability_of(unit: InfoUnit) -> float:
    """Beta-style reliability in [0, 1]: strong signals count fully, weak ones a tenth, and a single
    source cannot push it past 0.5 (repetition is not truth)."""
    score = (unit.strong_signals + 0.1 * unit.weak_signals) / (
        1.0 + unit.strong_signals + 0.1 * unit.weak_signals
    )
    if unit.distinct_sources <= 1:
        score = min(score, 0.5)
    return round(score, 4)


def _source_key(episode: EpisodicMemory) -> str:
    return (
        episode.user_id or episode.session_id or str(episode.provenance.get("token_id") or "") or "anonymous"
    )


def evidence_attach(
    *,
    unit: InfoUnit,
    episode: EpisodicMemory,
    attempt: RegistryAttempt | None,
    similarity: float,
    method: str,
    actor_name: str = "",
) -> InfoEvidence:
    """Attach ``episode`` as evidence of ``unit`` (§2.10.5.8) and update its reliability counters.

    Precondition: the caller holds the InfoKey lock (inside ``registry_write`` or a review resolution).
    """
    source = _source_key(episode)
    new_source = not InfoEvidence.objects.filter(unit=unit, source_key=source).exists()
    evidence = InfoEvidence.objects.create(
        unit=unit,
        episode=episode,
        attempt=attempt,
        similarity=similarity,
        method=method,
        signal=episode.signal,
        source_key=source,
    )
    strong = episode.signal == Signal.STRONG
    InfoUnit.objects.filter(pk=unit.pk).update(
        evidence_count=F("evidence_count") + 1,
        distinct_sources=F("distinct_sources") + (1 if new_source else 0),
        strong_signals=F("strong_signals") + (1 if strong else 0),
        weak_signals=F("weak_signals") + (0 if strong else 1),
        last_evidence_at=timezone.now(),
        label_path_current=episode.label_path_current or F("label_path_current"),
    )
    unit.refresh_from_db()
    unit.reliability = reliability_of(unit)
    unit.save(update_fields=["reliability"])
    EpisodicMemory.objects.filter(pk=episode.pk).update(info_unit=unit)
    episode.info_unit = unit
    InfoUnitEvent.objects.create(
        unit=unit,
        kind=InfoUnitEvent.Kind.EVIDENCE,
        details={
            "episode": episode.pk,
            "similarity": round(similarity, 4),
            "method": method,
            "signal": episode.signal,
            "reliability": unit.reliability,
        },
        actor_name=actor_name,
    )
    return evidence


def unit_recount(unit: InfoUnit) -> InfoUnit:
    """Recount ``unit``'s evidence counters (evidence, distinct sources, strong/weak signals, last
    evidence) and its reliability from the evidence rows it has now — after evidence was taken off
    (``memory.services.info_evidence_detach``); ``evidence_attach`` keeps them by increments.

    Precondition: the caller holds the InfoKey lock."""
    kept = InfoEvidence.objects.filter(unit=unit)
    unit.evidence_count = kept.count()
    unit.distinct_sources = kept.values("source_key").distinct().count()
    unit.strong_signals = kept.filter(signal=Signal.STRONG).count()
    unit.weak_signals = unit.evidence_count - unit.strong_signals
    unit.last_evidence_at = kept.order_by("-created_at").values_list("created_at", flat=True).first()
    unit.reliability = reliability_of(unit)
    unit.save(
        update_fields=[
            "evidence_count",
            "distinct_sources",
            "strong_signals",
            "weak_signals",
            "last_evidence_at",
            "reliability",
            "updated_at",
        ]
    )
    return unit


def unit_create(
    *,
    info_key: InfoKey,
    episode: EpisodicMemory,
    canonical: Canonical,
    vector: np.ndarray,
    actor_name: str = "",
) -> InfoUnit:
    """Register a new InfoUnit founded by ``episode`` (§2.10.5.7.3). Raises ``IntegrityError`` when the
    same canonical statement already has a unit in this key (the caller turns that into a MATCH)."""
    with transaction.atomic():  # a savepoint: the IntegrityError leaves the outer transaction usable
        unit = InfoUnit.objects.create(
            project_id=info_key.project_id,
            info_key=info_key,
            info_type=info_key.info_type,
            scope=info_key.scope,
            subject=info_key.subject,
            label_signature=info_key.label_signature,
            label_path_current=info_key.label_path_current,
            canonical_text=canonical.text,
            canonical_statement=canonical.statement,
            canonical_fields=canonical.fields,
            canonical_digest=canonical.digest,
            founding_text=episode.text,
            simhash=canonical.simhash,
            embedding=vector_to_bytes(vector),
        )
    InfoKey.objects.filter(pk=info_key.pk).update(unit_count=F("unit_count") + 1)
    info_key.unit_count += 1
    InfoUnitEvent.objects.create(
        unit=unit,
        kind=InfoUnitEvent.Kind.CREATED,
        details={"episode": episode.pk, "info_key": info_key.key},
        actor_name=actor_name,
    )
    return unit


def info_key_lock(
    *, project_id: int, value: InfoKeyValue, label_ids: Sequence[str], label_path: str
) -> InfoKey:
    """Get or create the InfoKey row and lock it for the rest of the transaction."""
    defaults = {
        "label_signature": value.label_signature,
        "primary_label_id": value.label_signature if "+" not in value.label_signature else "",
        "label_ids": list(label_ids),
        "info_type": value.info_type,
        "scope": value.scope,
        "subject": value.subject,
        "label_path_current": label_path,
    }
    info_key = InfoKey.objects.select_for_update().filter(project_id=project_id, key=value.key).first()
    if info_key is None:
        try:
            with transaction.atomic():
                info_key = InfoKey.objects.create(project_id=project_id, key=value.key, **defaults)
        except IntegrityError:  # created meanwhile by a concurrent writer: lock theirs
            info_key = InfoKey.objects.select_for_update().get(project_id=project_id, key=value.key)
    if label_path and info_key.label_path_current != label_path:  # metadata follows the taxonomy
        InfoKey.objects.filter(pk=info_key.pk).update(label_path_current=label_path)
        info_key.label_path_current = label_path
    return info_key


def registry_write(
    *,
    episode: EpisodicMemory,
    canonical: Canonical,
    vector: np.ndarray,
    value: InfoKeyValue,
    label_ids: Sequence[str],
    flags: Sequence[str] = (),
    params: RegistryParams = DEFAULT_PARAMS,
    synonyms: dict[str, str] | None = None,
    distinctions: Distinctions = NO_DISTINCTIONS,
) -> RegistryOutcome:
    """Run one Info Registry attempt for ``episode`` (already saved) and log it; see the module doc.

    Must run inside the caller's transaction (``memory.services.memory_write`` opens it).
    """
    started = time.perf_counter()
    info_key = info_key_lock(
        project_id=episode.project_id, value=value, label_ids=label_ids, label_path=episode.label_path_current
    )
    decision = registry_decide(
        info_key=info_key,
        canonical=canonical,
        vector=vector,
        params=params,
        synonyms=synonyms,
        distinctions=distinctions,
    )
    unit: InfoUnit | None = None
    if decision.decision == RegistryAttempt.Decision.NEW:
        try:
            unit = unit_create(info_key=info_key, episode=episode, canonical=canonical, vector=vector)
        except IntegrityError:  # the same canonical statement landed meanwhile: it is a MATCH
            existing = InfoUnit.objects.get(info_key=info_key, canonical_digest=canonical.digest)
            unit = existing
            decision = RegistryDecision(
                RegistryAttempt.Decision.MATCH,
                Method.CANONICAL_EXACT,
                decision.candidates + (Candidate(existing.pk, 1.0, 0, "exact"),),
                existing.pk,
            )
    elif decision.decision == RegistryAttempt.Decision.MATCH:
        assert decision.unit_id is not None  # a MATCH names its unit
        unit = InfoUnit.objects.get(pk=decision.unit_id)
    attempt = RegistryAttempt.objects.create(
        project_id=episode.project_id,
        episode=episode,
        info_key=info_key,
        label_path_current=info_key.label_path_current,
        top_k=[c.as_json() for c in decision.candidates],
        decision=decision.decision,
        method=decision.method,
        flags=sorted(set(flags) - {MemoryFlag.PII_SCRUBBED}),
        reasons=list(decision.reasons),
        unit=unit,
        candidate_unit_id=decision.unit_id if decision.decision == RegistryAttempt.Decision.UNSURE else None,
        review_status=(
            RegistryAttempt.Review.PENDING
            if decision.decision == RegistryAttempt.Decision.UNSURE
            else RegistryAttempt.Review.NONE
        ),
        request_id=episode.request_id,
    )
    if unit is not None:
        top = next((c for c in decision.candidates if c.unit_id == unit.pk), None)
        evidence_attach(
            unit=unit,
            episode=episode,
            attempt=attempt,
            similarity=top.cosine if top is not None else 1.0,
            method=decision.method,
        )
    attempt.latency_ms = round((time.perf_counter() - started) * 1000, 3)
    RegistryAttempt.objects.filter(pk=attempt.pk).update(latency_ms=attempt.latency_ms)
    return RegistryOutcome(attempt=attempt, unit=unit, decision=decision)
