"""New semantic node candidates from episodic memory (ARG §3.2.5, §4.2), InfoUnit-first.

Reads the window's episodes (``review.loop.collection.episodes_for``; none → no candidates). Episodes are grouped by
the **InfoUnit** the memory registry deduplicated them into (episodes without one by embedding, cosine
≥ ``infounit_cosine``): a pattern is the InfoUnit, never a wording.

* **InfoUnit-first dedup** (§3.2.5.1) — a pattern whose content already exists as a graph node (node
  embedding cosine ≥ ``node_cosine``) proposes nothing: the knowledge is there, the memory registry
  enriches the InfoUnit's evidence. Only a new stable InfoUnit becomes a node proposal.
* **Shared knowledge only** — USER-scoped episodes and facts about one person (UserProfile,
  UserPreference) never become graph nodes.
* **Label-gated** — only episodes with validated labels count (MISSING_LABEL_CANDIDATE ones feed the
  taxonomy generator instead); the node is attached to the pattern's dominant ACTIVE labels and their
  clusters, and linked (ELABORATES) from the closest node attached to them.
* **Slow-poisoning protection** (§3.2.5.2) — never validated by repetition, feedback loops or weak
  signals alone: strong (CONFIRMED) episodes weigh 1, weak ones ``weak_weight``, FAILURE ones count
  against; a pattern needs ``min_recurrence`` episodes, ``min_sources`` distinct sources and a
  weighted support ≥ ``min_weighted_support`` to be proposed at all. Auto-commit is then forbidden
  (the proposal's guard) when the support is dominated by uncertain outcomes (weak share >
  ``max_uncertain_share``), when fewer than ``min_segments`` user segments back it, or when one segment
  holds more than ``max_segment_share`` of it. Text holding PII (memory's Memory Guard) is refused.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict

import numpy as np

from arg_platform.embedder import get_embedder
from memory import pii
from ontology.graph_arrays import STATUS_CODE
from review.changeset import EdgeAdd, NodeAdd, Op
from review.loop.collection import Episode, UnifiedOutcome
from review.loop.generators.base import Candidate, GeneratorContext, unit

NAME = "memory.semantic_node"
VERSION = "1"
STABLE_TYPES = frozenset({"ProductConfig"})  # memory InfoTypes that become InfoStable nodes
PERSONAL_TYPES = frozenset({"UserProfile", "UserPreference"})  # about one person: never domain knowledge


def _contains_pii(text: str) -> bool:
    """The text holds PII, or a placeholder where the Memory Guard replaced some (never domain knowledge)."""
    return bool(pii.PLACEHOLDER_RE.search(text)) or bool(pii.detect(text))


def _patterns(context: GeneratorContext, episodes: list[Episode]) -> list[list[Episode]]:
    params = context.params.memory
    by_unit: dict[str, list[Episode]] = defaultdict(list)
    loose: list[Episode] = []
    for e in episodes:
        if e.info_unit:
            by_unit[e.info_unit].append(e)
        else:
            loose.append(e)
    groups = [g for _, g in sorted(by_unit.items())]
    if loose:
        x = get_embedder().embed([e.text for e in loose])
        free = np.ones(len(loose), dtype=bool)
        for i in range(len(loose)):
            if not free[i]:
                continue
            members = np.flatnonzero(free & (x @ x[i] >= params.infounit_cosine))
            free[members] = False
            groups.append([loose[j] for j in members.tolist()])
    return groups


def generate(context: GeneratorContext) -> list[Candidate]:
    params = context.params.memory
    base = context.base
    episodes = [
        e
        for e in context.collection.episodes
        if e.label_ids
        and "MISSING_LABEL_CANDIDATE" not in e.flags
        and e.scope != "USER"
        and e.info_type not in PERSONAL_TYPES
    ]
    if not episodes:
        return []
    embedder = get_embedder()
    labels = {label["id"]: label for label in base.documents.get("labels", [])}
    snapshot = base.snapshot
    out: list[Candidate] = []
    for group in _patterns(context, episodes):
        if len(group) < params.min_recurrence:
            continue
        sources = Counter(e.source for e in group)
        if len(sources) < params.min_sources:
            continue  # repetition from one place is not a stable fact
        strong = sum(1 for e in group if e.outcome == UnifiedOutcome.CONFIRMED)
        against = sum(1 for e in group if e.outcome == UnifiedOutcome.FAILURE)
        weak = len(group) - strong - against
        support = strong + params.weak_weight * weak - against
        if support < params.min_weighted_support:
            continue
        texts = [e.text for e in group]
        x = embedder.embed(texts)
        centroid = unit(x.mean(axis=0))
        canonical = texts[int(np.argmax(x @ centroid))]
        if _contains_pii(canonical):
            continue
        if snapshot.embeddings is not None and snapshot.node_count:
            active = snapshot.status == STATUS_CODE["ACTIVE"]
            sims = snapshot.embeddings @ embedder.embed_one(canonical)
            if active.any() and float(sims[active].max()) >= params.node_cosine:
                continue  # InfoUnit-first: the graph already carries this knowledge
        label_counts = Counter(
            lid for e in group for lid in e.label_ids if labels.get(lid, {}).get("status") == "ACTIVE"
        )
        if not label_counts:
            continue
        top_labels = [lid for lid, c in label_counts.most_common(2) if c >= 0.5 * len(group)] or [
            label_counts.most_common(1)[0][0]
        ]
        clusters = tuple(dict.fromkeys(labels[lid]["cluster"] for lid in top_labels))
        segments = Counter(e.segment for e in group)
        uncertain_share = weak / max(1, strong + weak)
        top_segment_share = segments.most_common(1)[0][1] / len(group)
        reasons = []
        if uncertain_share > params.max_uncertain_share:
            reasons.append(f"support dominated by uncertain outcomes ({uncertain_share:.0%} weak)")
        if len(segments) < params.min_segments or top_segment_share > params.max_segment_share:
            reasons.append(
                f"supporting user segment too homogeneous ({top_segment_share:.0%} from one segment)"
            )
        digest = hashlib.sha256(canonical.lower().encode()).hexdigest()[:10]
        node_id = f"N-mem-{digest}"
        info_type = Counter(e.info_type for e in group).most_common(1)[0][0]
        ops: list[Op] = [
            NodeAdd(
                node_id=node_id,
                type="InfoStable" if info_type in STABLE_TYPES else "Info",
                title=canonical[:80].rstrip(" .") or node_id,
                chunk=canonical[:10_000],
                labels=tuple(top_labels),
                clusters=clusters,
            )
        ]
        anchor = _anchor(context, top_labels, embedder.embed_one(canonical))
        if anchor is not None:
            ops.append(EdgeAdd(anchor, node_id, "ELABORATES", 0.5, "semantic node promoted from memory"))
        zone = [i for i, ls in enumerate(context.collection.labels) if set(ls) & set(top_labels)]
        out.append(
            Candidate(
                kind="NODE_ADD",
                title=f"Semantic node from memory: {canonical[:60]}",
                summary=(
                    f"{len(group)} episodes from {len(sources)} sources and {len(segments)} segments recur on "
                    f"this fact ({strong} strong, {weak} weak, {against} against)"
                ),
                ops=tuple(ops),
                evidence={
                    "info_unit": group[0].info_unit,
                    "episodes": len(group),
                    "episode_ids": [e.episode_id for e in group[:30]],
                    "sources": len(sources),
                    "segments": dict(segments.most_common(5)),
                    "strong": strong,
                    "weak": weak,
                    "against": against,
                    "weighted_support": round(support, 3),
                    "uncertain_share": round(uncertain_share, 4),
                    "labels": top_labels,
                    "anchor": anchor,
                },
                generator={"name": NAME, "version": VERSION, "params": params.as_json()},
                zone_rows=tuple(zone),
                guard={
                    "no_autocommit": bool(reasons),
                    "reason": "; ".join(reasons),
                    "uncertain_share": round(uncertain_share, 4),
                    "segment_share": round(top_segment_share, 4),
                    "source": "memory",
                },
            )
        )
    return out


def _anchor(context: GeneratorContext, label_ids: list[str], vector: np.ndarray) -> str | None:
    params = context.params.memory
    snapshot = context.base.snapshot
    best, best_score = None, params.attach_cosine
    for lid in label_ids:
        positions = snapshot.label_nodes.get(lid)
        if positions is None or snapshot.embeddings is None:
            continue
        for p in positions.tolist():
            node = snapshot.node(p)
            if node.status != "ACTIVE" or node.type in ("OutOfScope", "Action", "DirectAction"):
                continue
            score = float(snapshot.embeddings[p] @ vector)
            if score > best_score:
                best, best_score = node.node_id, score
    return best
