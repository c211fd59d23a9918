"""Lifecycle candidates (ARG §3.5, §3.2.4): obsolescence, DEPRECATED → REMOVED, label re-attachment.

Thresholds are ``settings.OFFLINE_LOOP["lifecycle"]`` (``LifecycleParams``). Every candidate goes through
replay and the bins like any other; none of these kinds is auto-committed unless ``autocommit_kinds``
names it.

**OBSOLESCENCE** (§3.5.3, fast deprecation) — an ACTIVE node is proposed DEPRECATED when either

* *persistent failures*: among the window's interactions that ended on the node (its target: an
  outcome judges the answer or action that ended the route, not a Decision it passed on the way or the
  landing point it started from) at least ``min_landings`` carry an outcome (CONFIRMED, UNCERTAIN,
  LOW_CONFIDENCE or FAILURE); the FAILUREs — a failed action, or an answer a user reported — fall on
  at least ``min_nights`` distinct days; and the one-sided Wilson lower bound at ``z`` of the failure
  share of those landings reaches ``negative_share`` — a bound, so a handful of bad answers never
  qualifies and the same share qualifies with more evidence. A silent landing counts as a landing
  that did not fail: silence never confirms (§2.9.7), and here it never condemns either — a
  low-confidence answer nobody reported is the router's own doubt, often two nodes competing for one
  intent, not a collapse of the node — so a deprecation never rests on silence; or
* *no traffic*: over the last ``idle_days`` no interaction landed on it, ended on it or passed through
  it, although it was *reachable* all that time: ACTIVE already in the release that served
  ``idle_days`` ago, and carrying an ACTIVE label the weaver chose for at least ``min_door_traffic``
  requests of that period (requests came to its door; none needed it).

The changeset moves the node to DEPRECATED with the reason; when an ACTIVE node of one of its clusters
has content at cosine ≥ ``replacement_cosine``, a redirection N → (that node) keeps memories attached to
N alive. The node stays DEPRECATED for an observation window (below).

**NODE_REMOVE** (DEPRECATED → REMOVED) — a node already DEPRECATED in the release that served
``observation_days`` ago, with **alias traffic** over those days at most ``max_alias_traffic``. Alias
traffic is every way the old node is still reached: a logged request that landed on it, ended on it or
passed through it (a client pinned to an older release), a MemoryRead that followed its redirection
(``outcome_details["memory"]`` items with that ``node_id`` and ``redirected``), and an episodic memory
written on it or soft-updated through its redirection in those days. The changeset removes every edge
touching the node (a REMOVED node has none), re-points redirections that named it to where it redirects
itself (a redirection that would be left with no target makes the node not removable), then moves it to
REMOVED. Its own redirection stays: old memories keep their way to its successors.

**LABEL_REATTACH** (§3.2.4 "reattaching a label under the correct cluster parent") — an ACTIVE label's
traffic (the prompts of the window's requests whose ``L_final`` holds it, at most
``reattach_max_prompts``, from at least ``reattach_min_sources`` sources, at least
``reattach_min_support`` of them, embedded by the release's encoder) is compared with each cluster, the
label's own nodes left out, in two views of a prompt's *affinity* to a cluster:

* *centroid* — the cosine to the mean content embedding of the cluster's ACTIVE nodes;
* *neighbours* — the mean of its ``reattach_neighbours`` highest cosines to those nodes' content
  embeddings: a label belongs where its nearest relatives are, and a cluster covering several topics (a
  domain's navigation intents beside its maintenance intents) keeps the labels whose relatives it holds
  although its mean may sit closer to another cluster (``0``: the centroid view alone).

For each request and view the gap ``affinity(other cluster) − affinity(own cluster)`` is measured; a
cluster's *evidence* is the lower bound at ``z`` of the mean gap, taken in the view where it is weakest
(both views must agree). When the best other cluster's evidence reaches ``margin``, the label (and its
subtree) is proposed beside its *nearest relative* there — the ACTIVE label of that cluster whose
label-index vector is closest to the traffic centroid (cosine ≥ ``parent_cosine``) — so under that
relative's parent (``placement``). Only a relative that is a category (it has ACTIVE children) takes
the label under itself: the label nearest to an intent's requests is usually a sibling intent, and an
intent filed under another would make it a refinement of that intent. Without a relative the label
goes to the cluster's root. Its nodes are attached to that cluster (and detached from the old one when
no other label keeps them there).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.db.models import Q

from inference.learning.encoder_finetune import encoder_for_documents
from inference.models import InferenceLog
from memory.models import EpisodicMemory
from ontology.models import Release, ReleaseBundle
from review.changeset import AliasSet, EdgeRemove, LabelMove, NodeAttach, NodeDetach, NodeStatusSet, Op
from review.loop.collection import UnifiedOutcome
from review.loop.generators.base import Candidate, GeneratorContext, unit, wilson_lower
from review.loop.shadow import BaseRelease

logger = logging.getLogger(__name__)

NAME_OBSOLESCENCE = "lifecycle.obsolescence"
NAME_REMOVAL = "lifecycle.removal"
NAME_REATTACH = "lifecycle.reattach"
VERSION = "2"
DAY_S = 86_400.0
WITH_OUTCOME = (
    int(UnifiedOutcome.CONFIRMED),
    int(UnifiedOutcome.UNCERTAIN),
    int(UnifiedOutcome.LOW_CONFIDENCE),
    int(UnifiedOutcome.FAILURE),
)
NEVER_DEPRECATED = frozenset({"OutOfScope", "Clarify"})  # the safe fallbacks of landing


def release_serving_at(project_id: int, when: datetime) -> Any:
    """The release that was active at ``when`` (the last one activated, else created, by then)."""
    releases = Release.objects.filter(project_id=project_id)
    found = (
        releases.filter(activated_at__lte=when).order_by("-activated_at", "-version").first()
        or releases.filter(activated_at__isnull=True, created_at__lte=when).order_by("-created_at").first()
    )
    return found


def _statuses_at(context: GeneratorContext, when: datetime) -> dict[str, str] | None:
    """Node statuses of the release serving at ``when`` (None when no release served then)."""
    release = release_serving_at(context.project.pk, when)
    if release is None:
        return None
    if release.pk == context.base.release.pk:
        return {n.node_id: n.status for n in context.base.graph.nodes}
    try:
        return {n.node_id: n.status for n in BaseRelease.load(release).graph.nodes}
    except ReleaseBundle.DoesNotExist:  # a release without its bundle: nothing is known of that time
        return None


def touched_since(context: GeneratorContext, since: float) -> Counter[str]:
    """Per node id: the rows since ``since`` (epoch s) that landed on it, ended on it or passed through it
    (each row counted once per node), in one pass over the window."""
    collection = context.collection
    counts: Counter[int] = Counter()
    for row in np.flatnonzero(collection.created >= since).tolist():
        codes = {int(collection.landing[row]), int(collection.target[row]), *collection.paths[row]}
        counts.update(c for c in codes if c >= 0)
    return Counter({collection.node_names[c]: n for c, n in counts.items()})


def _window_end(context: GeneratorContext) -> datetime:
    return context.collection.window_end


def _clipped(context: GeneratorContext, days: float, what: str) -> bool:
    window = context.params.window_days
    if days > window:
        logger.warning("lifecycle %s of %s days exceeds the loop's window of %s days", what, days, window)
        return True
    return False


# --- OBSOLESCENCE ----------------------------------------------------------------------------------


def generate_obsolescence(context: GeneratorContext) -> list[Candidate]:
    """OBSOLESCENCE proposals: persistent failures, or no traffic while reachable (module doc)."""
    params = context.params.lifecycle
    base, collection = context.base, context.collection
    out: list[Candidate] = []
    active = [n for n in base.graph.nodes if n.status == "ACTIVE" and n.type not in NEVER_DEPRECATED]
    label_status = {label["id"]: label["status"] for label in base.documents.get("labels", [])}
    idle_since = _window_end(context) - timedelta(days=params.idle_days)
    idle_ok = not _clipped(context, params.idle_days, "idle_days")
    before: dict[str, str] | None = None
    door: Counter[str] = Counter()
    touched: Counter[str] = Counter()
    if idle_ok and collection.size:
        recent = collection.created >= idle_since.timestamp()
        for row in np.flatnonzero(recent).tolist():
            door.update(set(collection.labels[row]))
        touched = touched_since(context, idle_since.timestamp())
    for node in sorted(active, key=lambda n: n.node_id):
        code = collection.node_code(node.node_id)
        served = np.zeros(0, dtype=np.int64)
        if code >= 0:
            served = np.flatnonzero(collection.target == code)
        candidate = _negatives(context, node, served)
        if candidate is None and idle_ok:
            doors = {lid: door[lid] for lid in node.labels if label_status.get(lid) == "ACTIVE"}
            if sum(doors.values()) >= params.min_door_traffic and not touched[node.node_id]:
                if before is None:
                    before = _statuses_at(context, idle_since) or {}
                if before.get(node.node_id) == "ACTIVE":
                    candidate = _idle(context, node, doors, idle_since)
        if candidate is not None:
            out.append(candidate)
    return out


def _replacement(context: GeneratorContext, node: Any) -> tuple[str | None, float]:
    """The ACTIVE node of one of ``node``'s clusters whose content is closest to it (cosine, id)."""
    snapshot = context.base.snapshot
    if snapshot.embeddings is None or node.node_id not in snapshot.position:
        return None, 0.0
    own = snapshot.embeddings[snapshot.position[node.node_id]]
    best, best_cos = None, context.params.lifecycle.replacement_cosine
    for cluster in node.clusters:
        positions = snapshot.cluster_nodes.get(cluster)
        for p in [] if positions is None else positions.tolist():
            other = snapshot.node(p)
            if other.node_id == node.node_id or other.status != "ACTIVE" or other.type in NEVER_DEPRECATED:
                continue
            if (other.type in ("Action", "DirectAction")) != (node.type in ("Action", "DirectAction")):
                continue  # never redirect an answer to an action or the reverse
            cos = float(snapshot.embeddings[p] @ own)
            if cos >= best_cos:
                best, best_cos = other.node_id, cos
    return best, (best_cos if best else 0.0)


def _deprecation_ops(context: GeneratorContext, node: Any, reason: str) -> tuple[tuple[Op, ...], dict]:
    ops: list[Op] = [NodeStatusSet(node.node_id, "DEPRECATED", reason)]
    replacement, cosine = _replacement(context, node)
    if replacement is not None:
        ops.append(AliasSet(node.node_id, (replacement,), f"{node.node_id} deprecated: {reason}"[:500]))
    return tuple(ops), {"replacement": replacement, "replacement_cosine": round(cosine, 4)}


def _negatives(context: GeneratorContext, node: Any, served: np.ndarray) -> Candidate | None:
    params = context.params.lifecycle
    collection = context.collection
    if served.size < params.min_landings:
        return None
    outcomes = collection.outcome[served]
    with_outcome = served[np.isin(outcomes, WITH_OUTCOME)]
    failed = served[outcomes == int(UnifiedOutcome.FAILURE)]
    n, k = int(with_outcome.size), int(failed.size)
    if n < params.min_landings:
        return None
    nights = sorted({int(t // DAY_S) for t in collection.created[failed].tolist()})
    lower = wilson_lower(k, n, params.z)
    if len(nights) < params.min_nights or lower < params.negative_share:
        return None
    counts = Counter(UnifiedOutcome(int(o)).name for o in collection.outcome[with_outcome].tolist())
    reason = (
        f"persistent failures: {k}/{n} landings failed on {len(nights)} days "
        f"(lower bound {lower:.2f} ≥ {params.negative_share})"
    )
    ops, replaced = _deprecation_ops(context, node, reason)
    return Candidate(
        kind="OBSOLESCENCE",
        title=f"Deprecate {node.node_id} {node.title!r}: persistent failures",
        summary=(
            f"{k} of {n} interactions it served failed (a failed action or a reported answer), on "
            f"{len(nights)} different days; the failure share is at least {lower:.0%} at z={params.z}"
            + (f"; memories redirect to {replaced['replacement']}" if replaced["replacement"] else "")
        ),
        ops=ops,
        evidence={
            "trigger": "negatives",
            "node": node.node_id,
            "landings_with_outcome": n,
            "failures": k,
            "failure_share": round(k / n, 4),
            "failure_share_lower": round(lower, 4),
            "failure_days": len(nights),
            "outcomes": dict(sorted(counts.items())),
            **replaced,
            "log_ids": context.log_refs(failed.tolist()),
        },
        generator={"name": NAME_OBSOLESCENCE, "version": VERSION, "params": params.as_json()},
        zone_rows=tuple(int(r) for r in served.tolist()),
    )


def _idle(context: GeneratorContext, node: Any, doors: dict[str, int], since: datetime) -> Candidate:
    params = context.params.lifecycle
    collection = context.collection
    door_rows = [
        r
        for r in np.flatnonzero(collection.created >= since.timestamp()).tolist()
        if set(collection.labels[r]) & set(doors)
    ]
    reason = (
        f"no traffic for {params.idle_days:g} days while its labels brought {sum(doors.values())} requests"
    )
    ops, replaced = _deprecation_ops(context, node, reason)
    return Candidate(
        kind="OBSOLESCENCE",
        title=f"Deprecate {node.node_id} {node.title!r}: no traffic in {params.idle_days:g} days",
        summary=(
            f"No request landed on, ended on or passed through {node.node_id} in {params.idle_days:g} days, "
            f"while it was ACTIVE and its labels ({', '.join(sorted(doors))}) brought "
            f"{sum(doors.values())} requests"
            + (f"; memories redirect to {replaced['replacement']}" if replaced["replacement"] else "")
        ),
        ops=ops,
        evidence={
            "trigger": "no_traffic",
            "node": node.node_id,
            "idle_days": params.idle_days,
            "door_traffic": dict(sorted(doors.items())),
            "landings": 0,
            **replaced,
            "log_ids": context.log_refs(door_rows),
        },
        generator={"name": NAME_OBSOLESCENCE, "version": VERSION, "params": params.as_json()},
        zone_rows=tuple(door_rows),
    )


# --- NODE_REMOVE -------------------------------------------------------------------------------------


def alias_traffic(
    context: GeneratorContext, node_ids: Iterable[str], since: datetime
) -> dict[str, dict[str, int]]:
    """Per node: how it was still reached since ``since`` — ``served`` (logged requests that landed on,
    ended on or passed through it), ``memory_reads`` (MemoryReads that followed its redirection),
    ``episodes`` (episodic memories written on it or soft-updated through its redirection)."""
    wanted = sorted(set(node_ids))
    out = {n: {"served": 0, "memory_reads": 0, "episodes": 0} for n in wanted}
    if not wanted:
        return out
    end = _window_end(context)
    served = touched_since(context, since.timestamp())
    for node_id in wanted:
        out[node_id]["served"] = int(served[node_id])
    details = InferenceLog.objects.filter(
        project_id=context.project.pk, created_at__gte=since, created_at__lt=end, outcome_kind="MEMORY"
    ).values_list("outcome_details", flat=True)
    for detail in details.iterator(chunk_size=2000):
        memory = (detail or {}).get("memory") or {}
        items = list(memory.get("items") or []) + list((memory.get("read") or {}).get("items") or [])
        for node_id in {str(i.get("node_id")) for i in items if isinstance(i, dict) and i.get("redirected")}:
            if node_id in out:
                out[node_id]["memory_reads"] += 1
    episodes = EpisodicMemory.objects.filter(project_id=context.project.pk, node_id__in=wanted).filter(
        Q(created_at__gte=since, created_at__lt=end) | Q(redirected_at__gte=since, redirected_at__lt=end)
    )
    for node_id, count in Counter(episodes.values_list("node_id", flat=True)).items():
        out[node_id]["episodes"] = count
    return out


def generate_removals(context: GeneratorContext) -> list[Candidate]:
    """NODE_REMOVE proposals: DEPRECATED past the observation window with no alias traffic (module doc)."""
    params = context.params.lifecycle
    base = context.base
    deprecated = sorted(n.node_id for n in base.graph.nodes if n.status == "DEPRECATED")
    if not deprecated or _clipped(context, params.observation_days, "observation_days"):
        return []
    since = _window_end(context) - timedelta(days=params.observation_days)
    before = _statuses_at(context, since) or {}
    observed = [n for n in deprecated if before.get(n) == "DEPRECATED"]
    traffic = alias_traffic(context, observed, since)
    aliases = {a.source: a for a in base.graph.aliases}
    out: list[Candidate] = []
    for node_id in observed:
        hits = traffic[node_id]
        if sum(hits.values()) > params.max_alias_traffic:
            continue
        ops = _removal_ops(base, node_id, aliases)
        if ops is None:
            continue
        node = base.nodes[node_id]
        own = aliases.get(node_id)
        out.append(
            Candidate(
                kind="NODE_REMOVE",
                title=f"Remove {node_id} {node.title!r}: DEPRECATED {params.observation_days:g} days, no alias traffic",
                summary=(
                    f"{node_id} has been DEPRECATED for at least {params.observation_days:g} days and nothing "
                    "reached it in that time (no request, no memory read through its redirection, no "
                    "memory written on it)"
                    + (f"; its redirection to {', '.join(own.targets)} stays" if own else "")
                ),
                ops=ops,
                evidence={
                    "node": node_id,
                    "observation_days": params.observation_days,
                    "alias_traffic": hits,
                    "status_reason": node.status_reason,
                    "redirects_to": list(own.targets) if own else [],
                    "edges_removed": sum(isinstance(op, EdgeRemove) for op in ops),
                    "aliases_repointed": [op.source for op in ops if isinstance(op, AliasSet)],
                },
                generator={"name": NAME_REMOVAL, "version": VERSION, "params": params.as_json()},
            )
        )
    return out


def _removal_ops(base: BaseRelease, node_id: str, aliases: dict[str, Any]) -> tuple[Op, ...] | None:
    """Edges touching the node removed, redirections naming it re-pointed, then REMOVED (None: not removable)."""
    reason = "removed after its observation window: no alias traffic"
    ops: list[Op] = [
        EdgeRemove(e.source, e.target, e.type, reason)
        for e in sorted(base.graph.edges, key=lambda e: e.key)
        if node_id in (e.source, e.target)
    ]
    successors = tuple(aliases[node_id].targets) if node_id in aliases else ()
    for source, alias in sorted(aliases.items()):
        if node_id not in alias.targets or source == node_id:
            continue
        targets = tuple(
            dict.fromkeys(t for x in alias.targets for t in (successors if x == node_id else (x,)))
        )
        targets = tuple(t for t in targets if t != source)
        if not targets:
            return None  # the redirection would lead nowhere: the node keeps its place
        ops.append(AliasSet(source, targets, f"{node_id} removed; redirected to its successors"))
    ops.append(NodeStatusSet(node_id, "REMOVED", reason))
    return tuple(ops)


# --- LABEL_REATTACH ---------------------------------------------------------------------------------


def cluster_members(context: GeneratorContext, exclude: set[str]) -> dict[str, np.ndarray]:
    """The content embeddings of each cluster's ACTIVE nodes, ``exclude`` left out (rows: unit vectors)."""
    snapshot = context.base.snapshot
    out: dict[str, np.ndarray] = {}
    if snapshot.embeddings is None:
        return out
    for cluster, positions in snapshot.cluster_nodes.items():
        keep = [
            p
            for p in positions.tolist()
            if snapshot.node(p).status == "ACTIVE" and snapshot.node_ids[p] not in exclude
        ]
        if keep:
            out[cluster] = np.asarray(snapshot.embeddings[keep], dtype=np.float32)
    return out


def cluster_affinities(
    members: dict[str, np.ndarray], x: np.ndarray, neighbours: int
) -> dict[str, np.ndarray]:
    """Each cluster's affinity to each row of ``x`` (module doc), from its ``members`` (``cluster_members``):
    the mean of the ``neighbours`` highest cosines to them; with 0, the cosine to their centroid."""
    out: dict[str, np.ndarray] = {}
    for cluster, vectors in members.items():
        if neighbours <= 0:
            out[cluster] = x @ unit(vectors.mean(axis=0))
            continue
        sims = x @ vectors.T
        top = min(neighbours, sims.shape[1])
        out[cluster] = -np.sort(-sims, axis=1)[:, :top].mean(axis=1)
    return out


def lower_bound(gap: np.ndarray, z: float) -> float:
    """The one-sided lower bound at ``z`` of the mean of ``gap`` (0 for fewer than two values)."""
    return float(gap.mean() - z * gap.std(ddof=1) / math.sqrt(gap.size)) if gap.size > 1 else 0.0


def reattach_target(
    views: list[dict[str, np.ndarray]], own_cluster: str, z: float
) -> tuple[float, str, list[float]] | None:
    """The other cluster with the strongest evidence (module doc) over the affinity ``views``: (its
    evidence, the cluster, its lower bound in each view); None without an own and another cluster."""
    if not views or any(own_cluster not in view for view in views):
        return None
    best: tuple[float, str, list[float]] | None = None
    for cluster in sorted(views[0]):
        if cluster == own_cluster or any(cluster not in view for view in views):
            continue
        lowers = [lower_bound(view[cluster] - view[own_cluster], z) for view in views]
        if best is None or min(lowers) > best[0]:
            best = (min(lowers), cluster, lowers)
    return best


def generate_reattachments(context: GeneratorContext) -> list[Candidate]:
    """LABEL_REATTACH proposals: a label whose traffic sits closer to another cluster (module doc)."""
    params = context.params.lifecycle
    base, collection = context.base, context.collection
    labels = {label["id"]: label for label in base.documents.get("labels", [])}
    if base.snapshot.embeddings is None or not collection.size:
        return []
    rows_of: dict[str, list[int]] = {}
    for row, chosen in enumerate(collection.labels):
        for lid in chosen:
            rows_of.setdefault(lid, []).append(row)
    out: list[Candidate] = []
    for lid in sorted(rows_of):
        label = labels.get(lid)
        if label is None or label["status"] != "ACTIVE":
            continue
        rows = np.array(rows_of[lid], dtype=np.int64)
        sources = {int(collection.sources[r]) for r in rows.tolist()}
        if rows.size < params.reattach_min_support or len(sources) < params.reattach_min_sources:
            continue
        candidate = _reattach(context, label, labels, rows, len(sources))
        if candidate is not None:
            out.append(candidate)
    return out


def _reattach(
    context: GeneratorContext, label: dict, labels: dict, rows: np.ndarray, n_sources: int
) -> Candidate | None:
    params = context.params.lifecycle
    base = context.base
    own_cluster = label["cluster"]
    carriers = sorted(n.node_id for n in base.graph.nodes if label["id"] in n.labels)
    rows = context.sample(rows, params.reattach_max_prompts, f"reattach:{label['id']}")
    # in the space of the release's vectors (node content, label index): its encoder, fine-tuned or not
    encoder = encoder_for_documents(base.documents)
    x = np.asarray(encoder.embed([context.collection.prompts[r] for r in rows.tolist()]), dtype=np.float32)
    members = cluster_members(context, set(carriers))
    views = [cluster_affinities(members, x, 0)]
    if params.reattach_neighbours > 0:
        views.append(cluster_affinities(members, x, params.reattach_neighbours))
    best = reattach_target(views, own_cluster, params.z)
    if best is None or best[0] < params.margin:
        return None
    lower, target, lowers = best
    gap = views[0][target] - views[0][own_cluster]
    traffic = unit(x.mean(axis=0))
    parent, relative, relative_cos = _parent_in(context, labels, target, traffic, label["id"])
    ops: list[Op] = [
        LabelMove(
            label["id"],
            target,
            parent,
            f"its requests sit closer to cluster {target} than to {own_cluster} (gap ≥ {lower:.3f})",
        )
    ]
    for node_id in carriers:
        node = base.nodes[node_id]
        if node.status != "ACTIVE":
            continue
        if target not in node.clusters:
            ops.append(NodeAttach(node_id, clusters=(target,)))
        others = [
            lid
            for lid in node.labels
            if lid != label["id"] and labels.get(lid, {}).get("cluster") == own_cluster
        ]
        if own_cluster in node.clusters and not others:
            ops.append(NodeDetach(node_id, clusters=(own_cluster,)))
    where = f"under {parent} {labels[parent]['name']!r}" if parent else f"at the root of {target}"
    return Candidate(
        kind="LABEL_REATTACH",
        title=f"Re-attach {label['id']} {label['name']!r} from {own_cluster} to {target}",
        summary=(
            f"{rows.size} requests routed with {label['name']!r} (from {n_sources} sources) are closer to "
            f"cluster {target} than to its own cluster {own_cluster}: mean cosine gap to the centroids "
            f"{float(gap.mean()):.3f}, lower bound {lower:.3f} ≥ {params.margin} in the weaker of the "
            f"centroid and nearest-node views; proposed {where}"
        ),
        ops=tuple(ops),
        evidence={
            "label": label["id"],
            "from_cluster": own_cluster,
            "to_cluster": target,
            "parent": parent,
            "relative": relative,
            "relative_cosine": round(relative_cos, 4),
            "support": int(rows.size),
            "sources": n_sources,
            "gap_mean": round(float(gap.mean()), 4),
            "gap_lower": round(lower, 4),
            "gap_lower_centroid": round(lowers[0], 4),
            "gap_lower_neighbours": round(lowers[-1], 4) if len(lowers) > 1 else None,
            "closer_share": round(float((gap > 0).mean()), 4),
            "nodes": carriers,
            "log_ids": context.log_refs(rows.tolist()),
        },
        generator={"name": NAME_REATTACH, "version": VERSION, "params": params.as_json()},
        zone_rows=tuple(int(r) for r in rows.tolist()),
    )


def _parent_in(
    context: GeneratorContext, labels: dict, cluster: str, traffic: np.ndarray, moving: str
) -> tuple[str | None, str | None, float]:
    """(parent, nearest relative, its cosine) for a label moving into ``cluster`` (``placement``), the
    cosines taken between ``traffic`` and the label-index vectors."""
    base = context.base
    vectors = base.matrices.get("label_embeddings")
    entries = [e["label_id"] for e in base.documents.get("label_index", {}).get("entries", [])]
    if vectors is None or not entries or vectors.shape[1] != traffic.shape[0]:
        return None, None, 0.0
    cosines = {lid: float(vectors[i] @ traffic) for i, lid in enumerate(entries) if i < vectors.shape[0]}
    return placement(labels, cluster, cosines, moving, context.params.lifecycle.parent_cosine)


def placement(
    labels: dict, cluster: str, cosines: dict[str, float], moving: str, min_cosine: float
) -> tuple[str | None, str | None, float]:
    """Where a label moving into ``cluster`` goes (module doc): (its parent there — ``None`` for the
    cluster's root —, its nearest relative, the relative's cosine). The relative is the ACTIVE label of
    ``cluster`` with the highest cosine (≥ ``min_cosine``); the label goes under it when it has ACTIVE
    children, otherwise under the relative's own parent."""
    best, best_cos = None, min_cosine
    for lid in sorted(cosines):
        doc = labels.get(lid)
        if doc is None or lid == moving or doc["status"] != "ACTIVE" or doc["cluster"] != cluster:
            continue
        if cosines[lid] >= best_cos:
            best, best_cos = lid, cosines[lid]
    if best is None:
        return None, None, 0.0
    category = any(
        doc.get("parent") == best and doc["status"] == "ACTIVE" and lid != moving
        for lid, doc in labels.items()
    )
    if category:
        return best, best, best_cos
    above = labels.get(labels[best].get("parent") or "")
    if above is None or above["status"] != "ACTIVE" or above["cluster"] != cluster:
        return None, best, best_cos
    return above["id"], best, best_cos
