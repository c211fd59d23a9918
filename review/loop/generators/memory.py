"""New semantic node candidates from episodic memory (ARG §3.2.5, §4.2), InfoUnit-first.

Reads the window's episodes (``review.loop.collection.episodes_for``; none → no candidates). Episodes are grouped by
the **InfoUnit** the memory registry deduplicated them into (episodes without one by embedding, cosine
≥ ``infounit_cosine``): a pattern is the InfoUnit, never a wording.

* **InfoUnit-first dedup** (§3.2.5.1) — a pattern whose content already exists as a graph node (node
  embedding cosine ≥ ``node_cosine``) proposes nothing: the knowledge is there, the memory registry
  enriches the InfoUnit's evidence. Only a new stable InfoUnit becomes a node proposal.
* **Shared knowledge only** — USER-scoped episodes and facts about one person (UserProfile,
  UserPreference) never become graph nodes by themselves. Private facts reach this generator only as
  the *consolidated units* of memory consolidation (``memory.services.memory_consolidate``, §4.2): a
  GLOBAL InfoUnit aggregating a PII-free fact several users wrote. Such a unit is judged with the same
  gates on the support consolidation recorded, its *sources* being the distinct users (orgs) who wrote
  it; the window's episodes of that unit are not counted a second time.
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
from dataclasses import dataclass

import numpy as np

from arg_platform.embedder import get_embedder
from memory import pii
from memory.selectors import ConsolidatedUnit, consolidated_units
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
    consolidated = consolidated_units(project=context.project)
    handled = {str(c.unit_id) for c in consolidated}  # judged on the consolidated support below
    episodes = [
        e
        for e in context.collection.episodes
        if e.label_ids
        and "MISSING_LABEL_CANDIDATE" not in e.flags
        and e.scope != "USER"
        and e.info_type not in PERSONAL_TYPES
        and e.info_unit not in handled
    ]
    out: list[Candidate] = []
    if episodes:
        for group in _patterns(context, episodes):
            candidate = _from_episodes(context, group)
            if candidate is not None:
                out.append(candidate)
    for semantic in consolidated:
        candidate = _from_consolidated(context, semantic)
        if candidate is not None:
            out.append(candidate)
    return out


def _from_episodes(context: GeneratorContext, group: list[Episode]) -> Candidate | None:
    """A pattern of the window's shared (ORG, GLOBAL) episodes → a NODE_ADD candidate, or None."""
    params = context.params.memory
    if len(group) < params.min_recurrence:
        return None
    sources = Counter(e.source for e in group)
    strong = sum(1 for e in group if e.outcome == UnifiedOutcome.CONFIRMED)
    against = sum(1 for e in group if e.outcome == UnifiedOutcome.FAILURE)
    weak = len(group) - strong - against
    texts = [e.text for e in group]
    x = get_embedder().embed(texts)
    centroid = unit(x.mean(axis=0))
    return _node_candidate(
        context,
        canonical=texts[int(np.argmax(x @ centroid))],
        label_counts=Counter(lid for e in group for lid in e.label_ids),
        info_type=Counter(e.info_type for e in group).most_common(1)[0][0],
        support=_Support(len(group), len(sources), strong, weak, against, Counter(e.segment for e in group)),
        evidence={
            "info_unit": group[0].info_unit,
            "episode_ids": [e.episode_id for e in group[:30]],
        },
    )


def _from_consolidated(context: GeneratorContext, consolidated: ConsolidatedUnit) -> Candidate | None:
    """A semantic unit of memory consolidation (private facts of several users, aggregated as a PII-free
    pattern) → a NODE_ADD candidate, or None. Its sources are the distinct users (orgs) that wrote it."""
    c = consolidated
    return _node_candidate(
        context,
        canonical=c.text,
        label_counts=Counter({lid: c.episodes for lid in c.label_ids}),
        info_type=c.info_type,
        support=_Support(c.episodes, c.subjects, c.strong, c.weak, 0, Counter(c.segments)),
        evidence={"info_unit": str(c.unit_id), "consolidated": True, "sessions": c.sessions},
    )


@dataclass(frozen=True)
class _Support:
    """How many episodes back a pattern, from how many distinct sources, with which outcomes (strong =
    confirmed, weak = uncertain, against = failure) and from which user segments."""

    episodes: int
    sources: int
    strong: int
    weak: int
    against: int
    segments: Counter[str]


def _node_candidate(
    context: GeneratorContext,
    *,
    canonical: str,
    label_counts: Counter[str],
    info_type: str,
    support: _Support,
    evidence: dict[str, object],
) -> Candidate | None:
    """The gates of the module doc on one pattern, then its NODE_ADD (+ ELABORATES edge) candidate."""
    params = context.params.memory
    if support.episodes < params.min_recurrence or info_type in PERSONAL_TYPES:
        return None
    if support.sources < params.min_sources:
        return None  # repetition from one place is not a stable fact
    strong, weak, against = support.strong, support.weak, support.against
    weighted = strong + params.weak_weight * weak - against
    if weighted < params.min_weighted_support:
        return None
    if _contains_pii(canonical):
        return None
    embedder = get_embedder()
    vector = embedder.embed_one(canonical)
    snapshot = context.base.snapshot
    if snapshot.embeddings is not None and snapshot.node_count:
        active = snapshot.status == STATUS_CODE["ACTIVE"]
        sims = snapshot.embeddings @ vector
        if active.any() and float(sims[active].max()) >= params.node_cosine:
            return None  # InfoUnit-first: the graph already carries this knowledge
    labels = {label["id"]: label for label in context.base.documents.get("labels", [])}
    counts = Counter(
        {lid: c for lid, c in label_counts.items() if labels.get(lid, {}).get("status") == "ACTIVE"}
    )
    if not counts:
        return None
    top_labels = [lid for lid, c in counts.most_common(2) if c >= 0.5 * support.episodes] or [
        counts.most_common(1)[0][0]
    ]
    clusters = tuple(dict.fromkeys(labels[lid]["cluster"] for lid in top_labels))
    segments = support.segments or Counter({"": support.episodes})
    uncertain_share = weak / max(1, strong + weak)
    top_segment_share = segments.most_common(1)[0][1] / max(1, sum(segments.values()))
    reasons = []
    if uncertain_share > params.max_uncertain_share:
        reasons.append(f"support dominated by uncertain outcomes ({uncertain_share:.0%} weak)")
    if len(segments) < params.min_segments or top_segment_share > params.max_segment_share:
        reasons.append(f"supporting user segment too homogeneous ({top_segment_share:.0%} from one segment)")
    digest = hashlib.sha256(canonical.lower().encode()).hexdigest()[:10]
    node_id = f"N-mem-{digest}"
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
    anchor = _anchor(context, top_labels, vector)
    if anchor is not None:
        ops.append(EdgeAdd(anchor, node_id, "ELABORATES", 0.5, "semantic node promoted from memory"))
    zone = [i for i, ls in enumerate(context.collection.labels) if set(ls) & set(top_labels)]
    return Candidate(
        kind="NODE_ADD",
        title=f"Semantic node from memory: {canonical[:60]}",
        summary=(
            f"{support.episodes} episodes from {support.sources} sources and {len(segments)} segments recur "
            f"on this fact ({strong} strong, {weak} weak, {against} against)"
        ),
        ops=tuple(ops),
        evidence={
            **evidence,
            "episodes": support.episodes,
            "sources": support.sources,
            "segments": dict(segments.most_common(5)),
            "strong": strong,
            "weak": weak,
            "against": against,
            "weighted_support": round(weighted, 3),
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
