"""Split candidates (ARG §3.2.1): one node that really serves several intents.

For each ACTIVE informational node with enough landings, the interactions landing on it are clustered
by **prompt embedding**, **label activation pattern** (the weaver's top label) and **domain outcome**
(k-means, k = 2…``max_children``, seeded). A split is proposed only when the node's users report a
problem (below), the prompt groups are genuinely apart — silhouette (cosine, prompt part only) ≥
``min_silhouette``, each group ≥ ``min_share`` of the traffic, group centroids' cosine ≤ the project's
**intent separation** (below) and ≤ ``max_centroid_cosine`` — and the node's own chunk supports
distinct children: its sentences are assigned to the group whose prompt centroid they are closest to,
every child must get at least one sentence (otherwise the content cannot be divided and no split is
proposed), and the children's contents (the centroids of their sentences' embeddings) must be as far
apart as their requests must be — a cosine within the same limit. One intent's answer divided by its
sub-groups leaves children that say the same thing; two intents' answer divides into two subjects.

**Two readings of the groups.** The requests' own k-means groups come first. Their clusters can follow
wording instead of intent (two intents each asked in two vocabularies: "vacation" / "PTO"); then every
sentence of the content is closest to one group and the content cannot be divided. Where the node
carries several labels that are distinct intents (ACTIVE, none a refinement of another), the second
reading groups its requests by those labels (``label_groups``): the curators already keep the intents
apart, so their labels stand in for the intent-separation scale: only ``max_centroid_cosine`` bounds
the requests' closeness, and the children's contents are not held to an embedding distance (two
intents of one topic — a balance and a request of days off — are answered by sentences an encoder
finds alike; the labels are the better evidence that they differ). The groups are given, not found in
the content, and one intent's requests can be worded more like the whole answer than the other's; so
each sentence goes to the group it is closer to *than that group is to the content on average*
(affinities centred per group). In either reading, when each group is one of the node's intents (by
the labels, or as the group's most frequent label), each child keeps its own intent's label and drops
its siblings': a child carrying its sibling's label would draw that intent's requests back.
Every other gate — a problem users report, share, silhouette, region, content that divides (a
sentence for each child) — is the same. The proposal's evidence says which reading it came from
(``grouping``).

**A problem users report** — a node is a split candidate only when its users' explicit signals say its
answer serves them worse than the project's answers serve theirs: the share of helpful signals among
its Info requests' explicit ones (confirmed / (confirmed + failures)), with its one-sided Wilson upper
bound at ``satisfaction_z``, must fall below the project's helpful share. Two intents on one node give
each a mixed answer; one intent with sub-groups is answered well, however clearly its prompts cluster.
Without signals the bound is 1: a node nobody complains about is not split (silence proves nothing,
in either direction — a curator can still split it by hand). The test is significance, not a count:
more traffic tightens the bound around the node's true share, so a well-served node never passes.

**Intent separation** — real intents have sub-groups (dishes, banks, card types) whose prompts cluster
as clearly as two intents do, and with more traffic every busy node shows them; silhouette alone cannot
tell the two apart. The scale that can is the curators' own: how far apart two intents they keep as
separate labels are. For every ACTIVE label with at least ``MIN_SEPARATION_EXAMPLES`` validated
examples, the cosine between its examples' centroid and the nearest other such label's centroid; the
project's intent separation is the median of these cosines. A node is split only when its groups are at
least as far apart as that — as distinct as a typical pair of neighbouring intents the taxonomy already
separates. It is an effect size, not a count, so more traffic does not make more nodes pass. A project
with fewer than ``MIN_SEPARATION_LABELS`` such labels has no scale and only ``max_centroid_cosine``
applies: in a handful of labels spread over unrelated topics, a label's nearest neighbour is another
topic, and the median would measure how far topics are apart, not neighbouring intents.

Context Weaver check: each group must map to a plausible taxonomy region — the cluster its requests'
weaver top labels (ACTIVE ones) fall in most often must be one of the node's clusters
(``group_region_label``). A child is attached to the parent's labels and clusters, plus its group's
most frequent label in that region when that label is more specific than, or equal to, one of the
parent's.

Changeset (children first, §3.5.1): ``NodeAdd`` per child (type, risk, Action fields inherited), the
parent's in-edges duplicated onto every child, each out-edge given to the children whose interactions
used it (duplicated onto all when none did), the parent → DEPRECATED, and the redirection
parent → (children) for MemoryRead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from arg_platform.embedder import get_embedder
from ontology.store.port import NodeData
from review.changeset import AliasSet, EdgeAdd, NodeAdd, NodeStatusSet, Op
from review.loop.collection import UnifiedOutcome
from review.loop.generators.base import (
    Candidate,
    GeneratorContext,
    derived_node_id,
    distinctive_words,
    kmeans,
    sentences,
    silhouette,
    unit,
    wilson_upper,
)

NAME = "split"
VERSION = "4"
SPLITTABLE_TYPES = frozenset({"Info", "InfoStable", "FAQ"})
MIN_SEPARATION_EXAMPLES = 3
MIN_SEPARATION_LABELS = 10


def intent_separation(label_docs: dict[str, dict]) -> float | None:
    """Median nearest-neighbour cosine between ACTIVE labels' example centroids (see the module doc)."""
    texts = {
        lid: [e for e in doc.get("examples", []) if e.strip()]
        for lid, doc in sorted(label_docs.items())
        if doc.get("status") == "ACTIVE"
    }
    texts = {lid: ex for lid, ex in texts.items() if len(ex) >= MIN_SEPARATION_EXAMPLES}
    if len(texts) < MIN_SEPARATION_LABELS:
        return None
    embedder = get_embedder()
    centroids = np.array([unit(embedder.embed(ex).mean(axis=0)) for ex in texts.values()])
    cosines = centroids @ centroids.T
    np.fill_diagonal(cosines, -np.inf)
    return float(np.median(cosines.max(axis=1)))


def helpful_share(confirmed: int, failures: int) -> float | None:
    """Share of helpful explicit signals (``None`` without any)."""
    n = confirmed + failures
    return confirmed / n if n else None


def split_changeset(
    parent: NodeData,
    children: list[NodeData],
    *,
    in_edges: list,
    out_edges: list,
    edge_users: dict[tuple[str, str, str], set[int]],
    reason: str,
) -> tuple[Op, ...]:
    """The lifecycle of a split: children first, edges redistributed, parent DEPRECATED, alias."""
    ops: list[Op] = [
        NodeAdd(
            node_id=c.node_id,
            type=c.type,
            title=c.title,
            chunk=c.chunk,
            risk=c.risk,
            labels=c.labels,
            clusters=c.clusters,
            preconditions=parent.preconditions,
            parameters=parent.parameters,
            handler=parent.handler,
        )
        for c in children
    ]
    for e in sorted(in_edges, key=lambda e: e.key):
        for c in children:
            ops.append(EdgeAdd(e.source, c.node_id, e.type, e.weight, e.semantics))
    for e in sorted(out_edges, key=lambda e: e.key):
        users = edge_users.get(e.key) or set(range(len(children)))
        for k in sorted(users):
            ops.append(EdgeAdd(children[k].node_id, e.target, e.type, e.weight, e.semantics))
    ops.append(NodeStatusSet(parent.node_id, "DEPRECATED", reason))
    ops.append(AliasSet(parent.node_id, tuple(c.node_id for c in children), reason))
    return tuple(ops)


def generate(context: GeneratorContext) -> list[Candidate]:
    params = context.params.split
    base, collection = context.base, context.collection
    nodes = base.nodes
    label_docs = {label["id"]: label for label in base.documents.get("labels", [])}
    edges_out: dict[str, list] = {}
    edges_in: dict[str, list] = {}
    for e in base.graph.edges:
        edges_out.setdefault(e.source, []).append(e)
        edges_in.setdefault(e.target, []).append(e)
    out: list[Candidate] = []
    separation: float | None = None
    separation_known = False
    project_helpful = helpful_share(
        sum(m.confirmed for m in collection.node_metrics.values()),
        sum(m.failures for m in collection.node_metrics.values()),
    )
    for node_id, metrics in sorted(collection.node_metrics.items()):
        node = nodes.get(node_id)
        if node is None or node.status != "ACTIVE" or node.type not in SPLITTABLE_TYPES:
            continue
        if metrics.landings < params.min_landings:
            continue
        signals = metrics.confirmed + metrics.failures
        upper = wilson_upper(metrics.confirmed, signals, params.satisfaction_z)
        if project_helpful is None or upper >= project_helpful:
            continue  # no problem users report here (or no signal at all)
        satisfaction = {
            "helpful": round(metrics.confirmed / signals, 4),
            "signals": signals,
            "upper_bound": round(upper, 4),
            "project_helpful": round(project_helpful, 4),
        }
        rows = context.sample(
            collection.rows_at(node_id, by="landing"), params.max_prompts, f"split:{node_id}"
        )
        if not separation_known:
            separation, separation_known = intent_separation(label_docs), True
        limit = (
            params.max_centroid_cosine if separation is None else min(params.max_centroid_cosine, separation)
        )
        candidate = _split_node(context, node, rows, label_docs, edges_in, edges_out, limit, separation)
        if candidate is not None:
            out.append(replace(candidate, evidence={**candidate.evidence, "satisfaction": satisfaction}))
    return out


def _features(context: GeneratorContext, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    params = context.params.split
    collection = context.collection
    x = context.prompt_vectors(rows.tolist())
    tops = [collection.top_labels[r][0][0] if collection.top_labels[r] else "" for r in rows]
    vocab = sorted(set(tops))
    onehot = np.zeros((rows.shape[0], len(vocab)))
    for i, lid in enumerate(tops):
        onehot[i, vocab.index(lid)] = 1.0
    outcome = np.zeros((rows.shape[0], 3))
    for i, r in enumerate(rows):
        o = int(collection.outcome[r])
        if o == UnifiedOutcome.CONFIRMED:
            outcome[i, 0] = 1.0
        elif o == UnifiedOutcome.UNCERTAIN:
            outcome[i, 1] = 1.0
        elif o in (UnifiedOutcome.LOW_CONFIDENCE, UnifiedOutcome.FAILURE):
            outcome[i, 2] = 1.0
    features = np.hstack([x, params.label_weight * onehot, params.outcome_weight * outcome])
    return x, features, tops


def _split_node(context, node, rows, label_docs, edges_in, edges_out, limit, separation) -> Candidate | None:  # type: ignore[no-untyped-def]
    params = context.params.split
    if rows.shape[0] < params.min_landings:
        return None
    x, features, tops = _features(context, rows)
    for score, k, assign, intents in _readings(context, node, rows, x, features, label_docs):
        candidate = _candidate(
            context,
            node,
            rows,
            x,
            tops,
            score,
            k,
            assign,
            label_docs,
            edges_in,
            edges_out,
            limit if intents is None else params.max_centroid_cosine,
            separation,
            intents=intents,
        )
        if candidate is not None:
            grouping = "requests" if intents is None else "labels"
            return replace(candidate, evidence={**candidate.evidence, "grouping": grouping})
    return None


def _readings(
    context, node, rows, x, features, label_docs
) -> Iterator[tuple[float, int, np.ndarray, list[str] | None]]:  # type: ignore[no-untyped-def]
    """The request groupings to try, in order, as (silhouette, k, assignment, intents or ``None``):
    the requests' own k-means groups, best silhouette first (fewer children on a near tie), then the
    node's labels (module doc); each only while its silhouette clears ``min_silhouette``."""
    params = context.params.split
    tried: list[tuple[float, int, np.ndarray]] = []
    for k in range(2, params.max_children + 1):
        assign = kmeans(features, k, context.rng(f"split:{node.node_id}:{k}"))
        sizes = np.bincount(assign, minlength=k)
        if sizes.min() < params.min_share * rows.shape[0]:
            continue
        tried.append((silhouette(x, assign), k, assign))
    for score, k, assign in sorted(tried, key=lambda t: (-round(t[0] / 0.05), t[1])):
        if score < params.min_silhouette:
            break
        yield score, k, assign, None
    # the requests' own groups can follow wording rather than intent; where the curators already keep
    # the node's intents apart as labels, the labels are the second reading
    groups = label_groups(context, node, rows, x, label_docs)
    if groups is not None:
        intents, assign = groups
        score = silhouette(x, assign)
        if score >= params.min_silhouette:
            yield score, len(intents), assign, intents


def node_intents(node: NodeData, label_docs: dict) -> list[str]:
    """The node's intents: its ACTIVE labels none of which refines another (a label and its
    refinement are one intent)."""
    active = [
        lid for lid in node.labels if (doc := label_docs.get(lid)) is not None and doc["status"] == "ACTIVE"
    ]
    return [a for a in active if not any(b != a and _within(a, (b,), label_docs) for b in active)]


def label_groups(
    context: GeneratorContext, node: NodeData, rows: np.ndarray, x: np.ndarray, label_docs: dict
) -> tuple[list[str], np.ndarray] | None:
    """Request groups by the node's own intents: (the label of each group, assignment), or ``None``.

    A request belongs to the first of the node's intents (``node_intents``) in its weaver top-K; one
    that names none goes to the group whose requests' centroid it is closest to. A label drawing less
    than ``min_share`` of the requests gets no group; two to ``max_children`` groups must remain.
    """
    params = context.params.split
    intents = node_intents(node, label_docs)
    if len(intents) < 2:
        return None
    named = np.full(rows.shape[0], -1)
    for i, r in enumerate(rows):
        for lid, _ in context.collection.top_labels[r]:
            if lid in intents:
                named[i] = intents.index(lid)
                break
    counts = np.bincount(named[named >= 0], minlength=len(intents))
    kept = [j for j in range(len(intents)) if counts[j] >= params.min_share * rows.shape[0]]
    if not 2 <= len(kept) <= params.max_children:
        return None
    centroids = np.array([unit(x[named == j].mean(axis=0)) for j in kept])
    assign = np.argmax(x @ centroids.T, axis=1)
    for i, j in enumerate(named):
        if j in kept:
            assign[i] = kept.index(j)
    if np.bincount(assign, minlength=len(kept)).min() < params.min_share * rows.shape[0]:
        return None
    return [intents[j] for j in kept], assign


def _candidate(
    context,
    node,
    rows,
    x,
    tops,
    score,
    k,
    assign,
    label_docs,
    edges_in,
    edges_out,
    limit,
    separation,
    intents=None,
) -> Candidate | None:  # type: ignore[no-untyped-def]
    params = context.params.split
    collection = context.collection
    centroids = np.array([unit(x[assign == j].mean(axis=0)) for j in range(k)])
    pair_cos = max(float(centroids[i] @ centroids[j]) for i in range(k) for j in range(i + 1, k))
    if pair_cos > limit:
        return None
    dominant: list[str] = []
    for j in range(k):
        label = group_region_label([t for t, a in zip(tops, assign, strict=True) if a == j], node, label_docs)
        if label is None:
            return None
        dominant.append(label)
    # the node's content must divide: each sentence goes to the closest group
    parts = sentences(node.chunk)
    if len(parts) < k:
        return None
    sentence_vectors = get_embedder().embed(parts)
    affinity = sentence_vectors @ centroids.T  # (sentences, groups)
    if intents is not None:
        affinity = affinity - affinity.mean(axis=0)
    chunks: list[list[str]] = [[] for _ in range(k)]
    members: list[list[int]] = [[] for _ in range(k)]
    for s, part in enumerate(parts):
        # a sentence close to several groups (within the margin) is shared context: every such child gets it
        top = float(affinity[s].max())
        for j in range(k):
            if affinity[s, j] >= top - params.shared_sentence_margin:
                chunks[j].append(part)
                members[j].append(s)
    if any(not c for c in chunks) or len({" ".join(c) for c in chunks}) < k:
        return None
    # the children's content must be as distinct as their requests: a split of one intent's answer
    # leaves children that say the same thing
    child_vectors = np.array([unit(sentence_vectors[m].mean(axis=0)) for m in members])
    content_cos = max(float(child_vectors[i] @ child_vectors[j]) for i in range(k) for j in range(i + 1, k))
    if content_cos > limit and intents is None:
        return None
    group_rows = [rows[assign == j] for j in range(k)]
    texts = [[collection.prompts[r] for r in g] for g in group_rows]
    # the intent each child answers, when the groups are the node's own intents: by the label reading,
    # or when each request group's label is a different one of them
    own = intents
    if own is None and len(set(dominant)) == k and set(dominant) <= set(node_intents(node, label_docs)):
        own = dominant
    taken = set(context.base.nodes)
    children: list[NodeData] = []
    for j in range(k):
        others = [t for i, ts in enumerate(texts) if i != j for t in ts]
        keys = distinctive_words(texts[j], others, top=3, exclude=())
        title = f"{node.title}: {', '.join(keys)}" if keys else f"{node.title} ({j + 1})"
        labels = list(node.labels)
        if own is not None:  # each child keeps its own intent's label, not its siblings'
            labels = [lid for lid in labels if lid not in own or lid == own[j]]
        if dominant[j] not in labels and _within(dominant[j], tuple(labels), label_docs):
            labels.append(dominant[j])
        child_id = derived_node_id(node.node_id, f".s{j + 1}", taken)
        taken.add(child_id)
        children.append(
            NodeData(
                node_id=child_id,
                type=node.type,
                title=title[:200],
                chunk=" ".join(chunks[j])[:10_000],
                risk=node.risk,
                labels=tuple(labels),
                clusters=node.clusters,
            )
        )
    edge_users: dict[tuple[str, str, str], set[int]] = {}
    for j, g in enumerate(group_rows):
        for r in g:
            for key in collection.path_edges[r]:
                if key[0] == node.node_id:
                    edge_users.setdefault(tuple(key), set()).add(j)  # type: ignore[arg-type]
    reason = f"split by the offline loop into {', '.join(c.node_id for c in children)}"
    ops = split_changeset(
        node,
        children,
        in_edges=[e for e in edges_in.get(node.node_id, []) if e.source not in {c.node_id for c in children}],
        out_edges=edges_out.get(node.node_id, []),
        edge_users=edge_users,
        reason=reason,
    )
    outcome_mix = []
    for g in group_rows:
        counts = Counter(UnifiedOutcome(int(collection.outcome[r])).name for r in g)
        outcome_mix.append(dict(sorted(counts.items())))
    all_rows = collection.rows_at(node.node_id, by="landing")
    return Candidate(
        kind="SPLIT",
        title=f"Split {node.node_id} into {k} nodes",
        summary=(
            f"{node.title!r} receives {k} distinct groups of requests (silhouette {score:.2f}, "
            f"centroid cosine {pair_cos:.2f} ≤ {limit:.2f}); children: "
            + "; ".join(c.title for c in children)
        ),
        ops=ops,
        evidence={
            "node": node.node_id,
            "landings": int(all_rows.shape[0]),
            "sampled": int(rows.shape[0]),
            "silhouette": round(score, 4),
            "centroid_cosine": round(pair_cos, 4),
            "intent_separation": None if separation is None else round(separation, 4),
            "children_content_cosine": round(content_cos, 4),
            "groups": [
                {
                    "child": children[j].node_id,
                    "size": int(group_rows[j].shape[0]),
                    "dominant_label": dominant[j],
                    "outcomes": outcome_mix[j],
                    "examples": texts[j][:5],
                    "log_ids": context.log_refs(group_rows[j]),
                }
                for j in range(k)
            ],
        },
        generator={"name": NAME, "version": VERSION, "params": params.as_json()},
        zone_rows=tuple(int(r) for r in all_rows),
        lineage={c.node_id: (node.node_id,) for c in children},
        subgroups={children[j].node_id: tuple(int(r) for r in group_rows[j]) for j in range(k)},
    )


def group_region_label(tops: list[str], node: NodeData, label_docs: dict) -> str | None:
    """The Context Weaver check for one request group: its taxonomy region, and its label there.

    Each request votes for the cluster of the weaver's top label (ACTIVE labels only). The group's
    region is the cluster with the most votes; it must be one of the node's clusters, otherwise the
    group is not plausibly the node's traffic and ``None`` is returned. The weaver's single top label
    is often a near miss from a neighbouring cluster, so the region is judged by the cluster's votes,
    not by one label. The group's label is its most frequent top label in that region.
    """
    active = [t for t in tops if t and (doc := label_docs.get(t)) is not None and doc["status"] == "ACTIVE"]
    if not active:
        return None
    by_cluster = Counter(label_docs[t]["cluster"] for t in active)
    best = max(by_cluster.values())
    regions = sorted(c for c, n in by_cluster.items() if n == best)
    region = next((c for c in regions if c in node.clusters), None)
    if region is None:
        return None
    return Counter(t for t in active if label_docs[t]["cluster"] == region).most_common(1)[0][0]


def _within(label: str, anchors: tuple[str, ...], label_docs: dict) -> bool:
    """``label`` is one of ``anchors`` or a descendant of one."""
    current = label_docs.get(label)
    seen = set()
    while current is not None and current["id"] not in seen:
        if current["id"] in anchors:
            return True
        seen.add(current["id"])
        current = label_docs.get(current.get("parent") or "")
    return False
