"""The Info Registry benchmark (``manage.py bench_registry``).

* **pairs** — for each ``{"a", "b", "same"}`` pair, write ``a`` then ``b`` through the registry's real
  write path (``memory.services.memory_write``: PII guard, canonicalization, embedding, InfoKey lock,
  recall, comparator, log) under one InfoKey of their own (a USER scope per pair), and count the
  decision on ``b``. False-merge rate = wrong MATCH / all MATCH; duplicate recall = MATCH / same pairs;
  UNSURE counts as neither (it waits for a reviewer).
* **latency** — pre-fill ``units`` InfoUnits with a fast bulk path (synthetic unit vectors spread over
  InfoKeys of ~``units_per_key`` units), then time ``writes`` real writes (``memory_write``, end to end)
  into random pre-filled InfoKeys; P50/P95 of the whole write and of the registry step alone.

Both run in a throw-away project that is deleted afterwards.
"""

from __future__ import annotations

import hashlib
import random
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memory.canonical import InfoType
from memory.pairs import Pair

Report = Callable[[str], None]


def _bench_project(label_names: Sequence[str]) -> tuple[Any, dict[str, str]]:
    from projects.services import project_create
    from taxonomy import services as taxonomy

    project = project_create(slug=f"bench-registry-{uuid.uuid4().hex[:8]}", name="Info Registry benchmark")
    taxonomy.cluster_create(project=project, actor=None, key="bench", name="Benchmark")
    labels = {}
    for name in sorted(set(label_names)):
        label = taxonomy.label_create(
            project=project,
            actor=None,
            name=name[:80],
            cluster_key="bench",
            parent_id=None,
            description=f"benchmark label {name}",
        )
        labels[name] = label.label_id
    return project, labels


def bench_project_delete(project: Any) -> None:
    """Delete a benchmark project, memory rows first (bulk, in dependency order)."""
    from memory.models import (
        EpisodicMemory,
        InfoEvidence,
        InfoKey,
        InfoUnit,
        InfoUnitEvent,
        MemoryEdge,
        RegistryAttempt,
    )

    MemoryEdge.objects.filter(project=project).delete()
    InfoEvidence.objects.filter(unit__project=project).delete()
    InfoUnitEvent.objects.filter(unit__project=project).delete()
    RegistryAttempt.objects.filter(project=project).delete()
    EpisodicMemory.objects.filter(project=project).update(info_unit=None, corrects=None)
    EpisodicMemory.objects.filter(project=project).delete()
    InfoUnit.objects.filter(project=project).delete()
    InfoKey.objects.filter(project=project).delete()
    from arg_platform.models import AuditEvent
    from taxonomy.models import Cluster, Label  # labels and clusters are PROTECTed: leaves first

    Label.objects.filter(project=project).update(parent=None)
    Label.objects.filter(project=project).delete()
    Cluster.objects.filter(project=project).delete()
    AuditEvent.objects.filter(project=project).delete()  # PROTECTed like labels: the bench's own project
    project.delete()


@dataclass
class PairsResult:
    pairs: int = 0
    same: int = 0
    matches: int = 0
    false_merges: int = 0
    true_merges: int = 0
    unsure: int = 0
    by_kind: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    errors: list[str] = field(default_factory=list)

    @property
    def fmr(self) -> float:
        return self.false_merges / self.matches if self.matches else 0.0

    @property
    def dup_recall(self) -> float:
        return self.true_merges / self.same if self.same else 0.0

    @property
    def unsure_rate(self) -> float:
        return self.unsure / self.pairs if self.pairs else 0.0

    def summary(self) -> str:
        return (
            f"SUMMARY fmr={100 * self.fmr:.2f} dup_recall={100 * self.dup_recall:.2f} "
            f"unsure={100 * self.unsure_rate:.2f} pairs={self.pairs}"
        )


def run_pairs(
    pairs: Sequence[Pair], *, report: Report = print, keep: bool = False, params: Any = None
) -> PairsResult:
    """Write every pair through the real write path and count the decisions on ``b`` (``params``: the
    registry's ``RegistryParams``, None for the defaults)."""
    from memory.comparator import DEFAULT_PARAMS
    from memory.services import memory_write, recall_cache_clear

    recall_cache_clear()
    project, labels = _bench_project([p.label for p in pairs])
    result = PairsResult()
    try:
        for i, pair in enumerate(pairs):
            subject = f"pair-{i}"
            common = {
                "project": project,
                "scope": pair.scope,
                "info_type": pair.info_type,
                "label_ids": [labels[pair.label]],
                "user_id": subject if pair.scope == "USER" else "",
                "org_id": subject if pair.scope == "ORG" else "",
                "source": "bench",
                "params": params or DEFAULT_PARAMS,
            }
            try:
                memory_write(text=pair.a, session_id=f"{subject}-a", **common)
                written = memory_write(text=pair.b, session_id=f"{subject}-b", **common)
            except Exception as exc:  # a refused fact is reported, not fatal: the run goes on
                result.errors.append(f"pair {i}: {exc}")
                continue
            decision = written.decision
            result.pairs += 1
            result.same += int(pair.same)
            result.by_kind[pair.kind][decision] += 1
            if decision == "MATCH":
                result.matches += 1
                if pair.same:
                    result.true_merges += 1
                else:
                    result.false_merges += 1
                    report(f"false merge ({pair.kind}): {pair.a!r} ~ {pair.b!r}")
            elif decision == "UNSURE":
                result.unsure += 1
    finally:
        if not keep:
            bench_project_delete(project)
    report(f"{'kind':<12} {'pairs':>5} {'MATCH':>6} {'NEW':>5} {'UNSURE':>7}")
    for kind in sorted(result.by_kind):
        counts = result.by_kind[kind]
        report(
            f"{kind:<12} {sum(counts.values()):>5} {counts['MATCH']:>6} {counts['NEW']:>5} {counts['UNSURE']:>7}"
        )
    for error in result.errors:
        report(f"error: {error}")
    return result


@dataclass
class LatencyResult:
    units: int
    keys: int
    writes: int
    prefill_s: float
    write_ms: list[float]
    registry_ms: list[float]
    decisions: Counter[str]
    distinctions: int = 0

    @staticmethod
    def _pct(values: list[float], q: float) -> float:
        return float(np.percentile(values, q)) if values else 0.0

    def summary(self) -> str:
        return (
            f"LATENCY units={self.units} keys={self.keys} writes={self.writes} "
            f"write_p50_ms={self._pct(self.write_ms, 50):.1f} write_p95_ms={self._pct(self.write_ms, 95):.1f} "
            f"registry_p50_ms={self._pct(self.registry_ms, 50):.1f} "
            f"registry_p95_ms={self._pct(self.registry_ms, 95):.1f} prefill_s={self.prefill_s:.1f}"
            + (f" distinctions={self.distinctions}" if self.distinctions else "")
        )


def _unit_vectors(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def prefill(project: Any, labels: dict[str, str], *, units: int, units_per_key: int, seed: int) -> list[Any]:
    """Bulk-create ``units`` InfoUnits over ``ceil(units / units_per_key)`` InfoKeys (synthetic vectors:
    the fast path; the measured writes then go through the real one). Returns the InfoKeys."""
    from django.db import transaction

    from memory.models import InfoKey, InfoUnit
    from memory.registry import InfoKeyValue

    rng = np.random.default_rng(seed)
    label_ids = sorted(labels.values())
    info_types = [t for t in InfoType.ALL if t != InfoType.EVENT]
    n_keys = max(1, -(-units // units_per_key))
    keys = []
    for k in range(n_keys):
        value = InfoKeyValue(
            label_ids[k % len(label_ids)],
            info_types[(k // len(label_ids)) % len(info_types)],
            "USER",
            f"user-{k}",
        )
        keys.append(
            InfoKey(
                project=project,
                key=value.key,
                label_signature=value.label_signature,
                primary_label_id=value.label_signature,
                label_ids=[value.label_signature],
                info_type=value.info_type,
                scope="USER",
                subject=value.subject,
                unit_count=0,
            )
        )
    with transaction.atomic():
        keys = InfoKey.objects.bulk_create(keys, batch_size=1000)
    keys = list(InfoKey.objects.filter(project=project).order_by("pk"))
    batch = 5000
    counts: Counter[int] = Counter()
    for start in range(0, units, batch):
        size = min(batch, units - start)
        vectors = _unit_vectors(rng, size, 384)
        rows = []
        for j in range(size):
            n = start + j
            key = keys[n % n_keys]
            counts[key.pk] += 1
            text = f"synthetic fact {n} about setting {n % 97} with value {n}"
            rows.append(
                InfoUnit(
                    project=project,
                    info_key=key,
                    info_type=key.info_type,
                    scope=key.scope,
                    subject=key.subject,
                    label_signature=key.label_signature,
                    canonical_text=text,
                    canonical_statement=text,
                    canonical_fields={},
                    canonical_digest=hashlib.sha256(text.encode()).hexdigest(),
                    founding_text=text,
                    simhash=int(rng.integers(-(2**63), 2**63 - 1)),
                    embedding=vectors[j].tobytes(),
                    evidence_count=1,
                    weak_signals=1,
                    distinct_sources=1,
                )
            )
        with transaction.atomic():
            InfoUnit.objects.bulk_create(rows, batch_size=1000)
    with transaction.atomic():
        for key in keys:
            InfoKey.objects.filter(pk=key.pk).update(unit_count=counts[key.pk])
    return list(InfoKey.objects.filter(project=project).order_by("pk"))


def prefill_distinctions(project: Any, texts: Sequence[str], *, count: int, seed: int) -> None:
    """``count`` term distinctions between random words of ``texts`` (bulk insert)."""
    from memory.distinctions import term_normalize
    from memory.models import TermDistinction

    vocabulary = sorted({word for text in texts for word in term_normalize(text).split() if len(word) > 3})
    rng = random.Random(seed)
    pairs: set[tuple[str, str]] = set()
    while len(pairs) < min(count, len(vocabulary) * (len(vocabulary) - 1) // 2):
        first, second = sorted(rng.sample(vocabulary, 2))
        pairs.add((first, second))
    TermDistinction.objects.bulk_create(
        [TermDistinction(project=project, first=a, second=b) for a, b in sorted(pairs)], batch_size=1000
    )


def run_latency(
    texts: Sequence[str],
    *,
    units: int,
    writes: int,
    units_per_key: int = 100,
    seed: int = 7,
    report: Report = print,
    keep: bool = False,
    distinctions: int = 0,
) -> LatencyResult:
    """Pre-fill ``units`` InfoUnits (and ``distinctions`` term distinctions between words of ``texts``,
    so that the registry's lookup finds candidates), then time ``writes`` real writes into pre-filled
    InfoKeys."""
    from memory.models import RegistryAttempt
    from memory.services import memory_write, recall_cache_clear

    recall_cache_clear()
    project, labels = _bench_project([f"topic {i:02d}" for i in range(50)])
    try:
        started = time.perf_counter()
        keys = prefill(project, labels, units=units, units_per_key=units_per_key, seed=seed)
        prefill_s = time.perf_counter() - started
        report(f"pre-filled {units} InfoUnits over {len(keys)} InfoKeys in {prefill_s:.1f} s")
        if distinctions:
            prefill_distinctions(project, texts, count=distinctions, seed=seed)
            report(f"pre-filled {distinctions} term distinctions")
        rng = random.Random(seed)
        unique = list(dict.fromkeys(texts))
        rng.shuffle(unique)
        write_ms: list[float] = []
        registry_ms: list[float] = []
        decisions: Counter[str] = Counter()
        for i in range(writes):
            key = keys[rng.randrange(len(keys))]
            text = unique[i % len(unique)]
            t = time.perf_counter()
            result = memory_write(
                project=project,
                text=text,
                scope="USER",
                user_id=key.subject,
                info_type=key.info_type,
                label_ids=[key.label_signature],
                session_id=f"latency-{i}",
                source="bench",
            )
            write_ms.append((time.perf_counter() - t) * 1000)
            decisions[result.decision] += 1
            if result.registry is not None:
                attempt = RegistryAttempt.objects.only("latency_ms").get(pk=result.registry.attempt.pk)
                registry_ms.append(attempt.latency_ms)
        return LatencyResult(
            units, len(keys), writes, prefill_s, write_ms, registry_ms, decisions, distinctions
        )
    finally:
        if not keep:
            bench_project_delete(project)
