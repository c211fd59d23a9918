"""Memory edges between episodic items (an edge table: typed, weighted rows) and the reads they power.

Edges are built online when an item is written, each from one bounded indexed query:

* **TEMPORAL** — previous item of the same session → the new one, weight ``1 / (1 + gap_hours)``
  (1.0 back to back, ~0.5 after an hour, ~0.1 after ten hours), metadata ``{session_id, gap_seconds}``;
* **CAUSAL** — correction → the item it corrects: an explicit ``corrects`` reference (weight 1.0), or
  a correction marker ("actually", "correction:", "I meant", …) answering the previous item of the
  session about the same labels (weight 0.8);
* **REFERENTIAL** — new item → up to ``REFERENTIAL_LIMIT`` recent items of the same subject attached to
  the same node (the "shared file" they both belong to), weight = cosine;
* **CATEGORICAL** — new item → the latest item of the same InfoKey category (same label signature and
  InfoType, same subject), weight = cosine;
* **TRAJECTORY** — first item of the session → its latest item (moved forward as the session grows),
  metadata ``{session_id, turns}``.

Reads: ``graph_rerank`` (vector hits boosted by their edges to the other hits), ``expand`` (multi-hop
traversal from seeds, ranked by path weight and similarity) and ``session_reconstruct`` (follow
temporal edges back and forth from any item).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from django.db.models import Q

from .models import EpisodicMemory, MemoryEdge, MemoryEdgeType

REFERENTIAL_LIMIT = 3
CORRECTION_RE = re.compile(
    r"^\s*(?:actually|correction|sorry|oops|i meant|i mean|no,|not quite|to correct|update:|scratch that|wait)\b",
    re.IGNORECASE,
)
SESSION_MAX_TURNS = 20


def _vector(episode: EpisodicMemory) -> np.ndarray | None:
    return np.frombuffer(bytes(episode.embedding), dtype=np.float32) if episode.embedding else None


def _cosine(a: np.ndarray | None, b: np.ndarray | None) -> float:
    if a is None or b is None or a.shape != b.shape:
        return 0.0
    return float(np.clip(a @ b, -1.0, 1.0))


def temporal_weight(gap_seconds: float) -> float:
    """1.0 for consecutive items, ~0.5 after an hour, ~0.1 after ten hours."""
    return round(1.0 / (1.0 + max(gap_seconds, 0.0) / 3600.0), 4)


def edges_for_new_episode(episode: EpisodicMemory, vector: np.ndarray) -> list[MemoryEdge]:
    """Create the edges of a just-written item (inside the write's transaction)."""
    edges: list[MemoryEdge] = []
    project_id = episode.project_id
    previous = None
    if episode.session_id:
        previous = (
            EpisodicMemory.objects.filter(project_id=project_id, session_id=episode.session_id)
            .exclude(pk=episode.pk)
            .filter(occurred_at__lte=episode.occurred_at)
            .order_by("-occurred_at", "-id")
            .only("pk", "occurred_at", "label_signature", "info_type", "embedding")
            .first()
        )
    if previous is not None:
        gap = (episode.occurred_at - previous.occurred_at).total_seconds()
        edges.append(
            MemoryEdge(
                project_id=project_id,
                source=previous,
                target=episode,
                type=MemoryEdgeType.TEMPORAL,
                weight=temporal_weight(gap),
                metadata={"session_id": episode.session_id, "gap_seconds": round(gap, 3)},
            )
        )
    if episode.corrects_id:
        edges.append(
            MemoryEdge(
                project_id=project_id,
                source=episode,
                target_id=episode.corrects_id,
                type=MemoryEdgeType.CAUSAL,
                weight=1.0,
                metadata={"correction_type": "explicit"},
            )
        )
    elif previous is not None and CORRECTION_RE.search(episode.text):
        same_topic = (episode.label_signature and episode.label_signature == previous.label_signature) or (
            episode.info_type == previous.info_type
        )
        if same_topic:
            edges.append(
                MemoryEdge(
                    project_id=project_id,
                    source=episode,
                    target=previous,
                    type=MemoryEdgeType.CAUSAL,
                    weight=0.8,
                    metadata={
                        "correction_type": "marker",
                        "overlap": round(_cosine(vector, _vector(previous)), 4),
                    },
                )
            )
    if episode.node_id:
        for other in (
            EpisodicMemory.objects.filter(
                project_id=project_id, node_id=episode.node_id, scope=episode.scope, subject=episode.subject
            )
            .exclude(pk=episode.pk)
            .order_by("-id")
            .only("pk", "embedding")[:REFERENTIAL_LIMIT]
        ):
            edges.append(
                MemoryEdge(
                    project_id=project_id,
                    source=episode,
                    target=other,
                    type=MemoryEdgeType.REFERENTIAL,
                    weight=round(max(_cosine(vector, _vector(other)), 0.0), 4),
                    metadata={"node_id": episode.node_id},
                )
            )
    if episode.label_signature:
        same_category = (
            EpisodicMemory.objects.filter(
                project_id=project_id,
                label_signature=episode.label_signature,
                info_type=episode.info_type,
                scope=episode.scope,
                subject=episode.subject,
            )
            .exclude(pk=episode.pk)
            .order_by("-id")
            .only("pk", "embedding")
            .first()
        )
        if same_category is not None:
            edges.append(
                MemoryEdge(
                    project_id=project_id,
                    source=episode,
                    target=same_category,
                    type=MemoryEdgeType.CATEGORICAL,
                    weight=round(max(_cosine(vector, _vector(same_category)), 0.0), 4),
                    metadata={"category": f"{episode.label_signature}|{episode.info_type}"},
                )
            )
    if previous is not None:
        first = (
            EpisodicMemory.objects.filter(project_id=project_id, session_id=episode.session_id)
            .order_by("occurred_at", "id")
            .only("pk")
            .first()
        )
        if first is not None and first.pk != episode.pk:
            MemoryEdge.objects.filter(source=first, type=MemoryEdgeType.TRAJECTORY).delete()
            turns = EpisodicMemory.objects.filter(
                project_id=project_id, session_id=episode.session_id
            ).count()
            edges.append(
                MemoryEdge(
                    project_id=project_id,
                    source=first,
                    target=episode,
                    type=MemoryEdgeType.TRAJECTORY,
                    weight=1.0,
                    metadata={"session_id": episode.session_id, "turns": turns},
                )
            )
    unique: dict[tuple[int, int, str], MemoryEdge] = {}
    for edge in edges:
        key = (edge.source_id, edge.target_id, edge.type)
        if edge.source_id != edge.target_id and key not in unique:
            unique[key] = edge
    return MemoryEdge.objects.bulk_create(unique.values())


# --- reads -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """One episodic item a read returns: its similarity, graph score, final score and how it came."""

    episode_id: int
    similarity: float
    graph_score: float = 0.0
    score: float = 0.0
    via: str = "vector"  # "vector" | "graph" (multi-hop expansion)
    hops: int = 0


def _adjacency(
    ids: Iterable[int], *, types: Sequence[str] | None = None
) -> list[tuple[int, int, float, str]]:
    ids = list(ids)
    edges = MemoryEdge.objects.filter(Q(source_id__in=ids) | Q(target_id__in=ids))
    if types:
        edges = edges.filter(type__in=types)
    return list(edges.values_list("source_id", "target_id", "weight", "type"))


def graph_rerank(candidates: Sequence[tuple[int, float]], *, boost: float = 0.3, k: int = 10) -> list[Hit]:
    """Graph re-ranking: ``final = (1 − boost)·similarity + boost·graph_score``, where graph_score is
    the summed weight of a hit's edges to the *other* hits, normalized by the best one."""
    ids = {episode_id for episode_id, _ in candidates}
    strength: dict[int, float] = defaultdict(float)
    if len(ids) > 1:
        for source, target, weight, _type in _adjacency(ids):
            if source in ids and target in ids and source != target:
                strength[source] += max(weight, 0.0)
                strength[target] += max(weight, 0.0)
    top = max(strength.values(), default=0.0)
    hits = []
    for episode_id, similarity in candidates:
        graph_score = strength[episode_id] / top if top > 0 else 0.0
        hits.append(
            Hit(
                episode_id,
                similarity,
                round(graph_score, 4),
                round((1 - boost) * similarity + boost * graph_score, 4),
            )
        )
    hits.sort(key=lambda h: (-h.score, -h.similarity, h.episode_id))
    return hits[:k]


def expand(
    seeds: Sequence[int],
    *,
    query: np.ndarray | None,
    max_hops: int = 2,
    types: Sequence[str] | None = None,
    k: int = 10,
    allowed: set[int] | None = None,
) -> list[Hit]:
    """Multi-hop expansion: follow edges (both directions) up to ``max_hops`` from ``seeds``; each reached
    item scores ``0.4·path weight + 0.6·cosine(query)``. ``allowed`` bounds what may be returned (the
    caller's scope filter)."""
    best: dict[int, tuple[float, int]] = {}
    frontier = {s: 1.0 for s in seeds}
    seen = set(seeds)
    for hop in range(1, max_hops + 1):
        if not frontier:
            break
        nxt: dict[int, float] = {}
        for source, target, weight, _type in _adjacency(frontier, types=types):
            for here, there in ((source, target), (target, source)):
                if here in frontier and there not in seen:
                    path = frontier[here] * max(weight, 0.0)
                    if path > nxt.get(there, 0.0):
                        nxt[there] = path
        for episode_id, path in nxt.items():
            best[episode_id] = (path, hop)
        seen |= set(nxt)
        frontier = nxt
    if allowed is not None:
        best = {e: v for e, v in best.items() if e in allowed}
    vectors = dict(EpisodicMemory.objects.filter(pk__in=list(best)).values_list("pk", "embedding"))
    hits = []
    for episode_id, (path, hop) in best.items():
        blob = vectors.get(episode_id)
        similarity = _cosine(query, np.frombuffer(bytes(blob), dtype=np.float32) if blob else None)
        hits.append(
            Hit(
                episode_id,
                round(similarity, 4),
                round(path, 4),
                round(0.4 * path + 0.6 * similarity, 4),
                "graph",
                hop,
            )
        )
    hits.sort(key=lambda h: (-h.score, h.episode_id))
    return hits[:k]


def session_reconstruct(
    episode: EpisodicMemory, *, max_turns: int = SESSION_MAX_TURNS
) -> list[EpisodicMemory]:
    """Session reconstruction: the item's session, in order, by following temporal edges back and forth
    (at most ``max_turns`` each way)."""
    backward: list[int] = []
    current = episode.pk
    for _ in range(max_turns):
        edge = (
            MemoryEdge.objects.filter(target_id=current, type=MemoryEdgeType.TEMPORAL).order_by("-id").first()
        )
        if edge is None or edge.source_id in backward:
            break
        backward.append(edge.source_id)
        current = edge.source_id
    forward: list[int] = []
    current = episode.pk
    for _ in range(max_turns):
        edge = (
            MemoryEdge.objects.filter(source_id=current, type=MemoryEdgeType.TEMPORAL).order_by("id").first()
        )
        if edge is None or edge.target_id in forward:
            break
        forward.append(edge.target_id)
        current = edge.target_id
    order = [*reversed(backward), episode.pk, *forward]
    rows = EpisodicMemory.objects.in_bulk(order)
    return [rows[i] for i in order if i in rows]
