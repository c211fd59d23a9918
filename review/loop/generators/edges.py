"""New-edge and edge-weight candidates (ARG §3.2.3; weights learned from outcomes).

Three sources, all computed offline from logged trajectories — never an online structural write:

**Detours** — routes of two or more moves (landing point → … → target) that end well (CONFIRMED or
UNCERTAIN, or a successful action) and recur: at least ``min_detour_support`` interactions and
``min_detour_share`` of the landing point's traffic, from at least ``min_sources`` distinct sources,
with no edge yet from the landing point to the target and both in a common cluster (taxonomy-consistent
adjacency) → ``EDGE_ADD`` landing → target. The type follows the target (LEADS_TO to an Action or
a Decision; ELABORATES to an informational node sharing a label parent with the landing point — the
Weaver's "more precise edge type"; LEADS_TO otherwise).

**Co-activation** — in one session, a request ending on X is followed (within ``followup_s``) by a
request landing on Y. The test is a share, not a count: of the follow-up requests after X, the share that
land on Y (its one-sided Wilson lower bound at ``coactivation_z``) must reach ``min_coactivation_share``
and ``min_coactivation_lift`` times Y's share of all follow-up requests (Y follows X distinctly more
often than it follows anything: a topic everyone asks next is tied to no one node; an effect size, so
the many pairs tested on a busy project do not pass by the bound's chance alone). A count alone grows
with traffic: on a busy project chance pairs reach any fixed count, and on a quiet one a pattern most
users follow waits for weeks; a bound on the share does neither. The pattern must also recur —
``min_coactivation_support`` sessions from ``min_sources`` distinct sources — X and Y share a cluster and
no edge joins them → ``EDGE_ADD`` X -RELATED_TO-> Y.

**Outcome-learned weights** (REINFORCE over the whole trajectory with a STOP action) — at each node of a
logged route the traversal chose one out-edge (or stopped at the target). The policy at node i is a
softmax over its out-edges and STOP, ``π(a|i) = exp(w_ia/τ) / Σ_j exp(w_ij/τ)``; an episode with signed
outcome z (CONFIRMED +1, FAILURE −1, LOW_CONFIDENCE ``z_low``, UNCERTAIN ``z_weak`` — a weak signal is
down-weighted and never counts as a success) updates every step ℓ of the route: ``ΔW = η (z − b) γ^ℓ (e_a
− π_i) / τ`` (b = 0, so a route that always fails is learned as failing). A route that ends on a
pass-through node (Decision, Shortcut) chose STOP there; a terminal target ends the route by rule, so it
is not a choice. Within-episode damping multiplies an edge reused k times in the episode by
``damping^k``; weights decay by ``decay`` per epoch toward 0 and stay in [−1, 1]. Tiers: reflex ≥ 0.6,
habitual 0.2–0.6, dormant < 0.2, inhibitory ≤ −0.01 (a hard veto). For each node whose *traversed*
out-edges change tier by at least ``min_weight_delta``, one proposal carries all of that node's
evidence-backed changes — the edges taken at least ``min_edge_support`` times whose own episodes ended
the way the change goes — and the node's siblings that receive the mass a vetoed edge loses (the policy
gradient reallocates probability, it does not inflate): ``EDGE_INHIBIT`` when an edge is vetoed,
``EDGE_WEIGHT`` otherwise.

**The veto** is the only way down. The learner's step grows with the number of episodes (b = 0, so the
move is about η × epochs × (failures − confirmations)): on a busy night an edge whose routes fail a
little more often than they succeed is demoted on count alone. So the evidence for a demotion is a
bound, not a step: an edge is *vetoed* when the one-sided Wilson upper bound (at ``veto_z``) of its
success share — CONFIRMED over CONFIRMED + FAILURE of the requests whose route took it, at least
``min_veto_outcomes`` of them — lies below the project's own success share over the window (the edge
ends well significantly less often than the project's routes do; the bound tightens with evidence, so
more traffic does not make more vetoes). A vetoed edge is set to its learned weight or ``veto_weight``,
whichever is lower; an edge that is not vetoed is never demoted. The vetoed edge's place goes to its
*heir*: of the node's other moves (not vetoed, own strong outcomes not negative), the one the learner
weighs highest is raised to the vetoed edge's former weight, so the routes that took it continue past
the node rather than stop on it (the replay then measures where they go). A promotion needs a positive mean
*strong* outcome over at least ``min_strong_support`` strong outcomes. Silence (LOW_CONFIDENCE,
UNCERTAIN) never moves a weight on its own.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import cast

import numpy as np

from ontology.store.port import NodeData
from review.changeset import EdgeAdd, EdgeSetWeight, weight_tier
from review.loop.collection import UnifiedOutcome
from review.loop.generators.base import Candidate, GeneratorContext, wilson_lower, wilson_upper

EdgeKey = tuple[str, str, str]  # an edge's ``key``

NAME_DETOUR = "edge.detour"
NAME_COACTIVATION = "edge.coactivation"
NAME_REINFORCE = "edge.reinforce"
VERSION = "3"  # 2: co-activation judged by the follow-up share; 3: demotion only by the veto (module doc)
GOOD = (UnifiedOutcome.CONFIRMED, UnifiedOutcome.UNCERTAIN)
PASS_THROUGH = frozenset({"Decision", "Shortcut"})  # terminal types end a route by rule, not by choice


def _edge_type(base, source: str, target: str) -> str:  # type: ignore[no-untyped-def]
    nodes = base.nodes
    s, t = nodes[source], nodes[target]
    if t.type in ("Action", "DirectAction", "Decision", "Shortcut"):
        return "LEADS_TO"
    labels = {label["id"]: label for label in base.documents.get("labels", [])}
    parents_s = {labels[x].get("parent") or x for x in s.labels if x in labels}
    parents_t = {labels[x].get("parent") or x for x in t.labels if x in labels}
    return "ELABORATES" if parents_s & parents_t else "LEADS_TO"


def generate_detours(context: GeneratorContext) -> list[Candidate]:
    params = context.params.edges
    base, collection = context.base, context.collection
    nodes = base.nodes
    existing = {(e.source, e.target) for e in base.graph.edges}
    support: dict[tuple[int, int], list[int]] = defaultdict(list)
    for row, path in enumerate(collection.paths):
        if len(path) < 3 or path[0] < 0 or path[-1] < 0:
            continue
        if int(collection.outcome[row]) not in GOOD:
            continue
        support[(path[0], path[-1])].append(row)
    out: list[Candidate] = []
    for (s_code, t_code), rows in sorted(support.items()):
        source, target = collection.node_names[s_code], collection.node_names[t_code]
        if source not in nodes or target not in nodes or (source, target) in existing or source == target:
            continue
        if nodes[source].status != "ACTIVE" or nodes[target].status != "ACTIVE":
            continue
        landings = collection.node_metrics.get(source)
        share = len(rows) / landings.landings if landings and landings.landings else 0.0
        sources = len({int(collection.sources[r]) for r in rows})
        if (
            len(rows) < params.min_detour_support
            or share < params.min_detour_share
            or sources < params.min_sources
        ):
            continue
        if not set(nodes[source].clusters) & set(nodes[target].clusters):
            continue
        hops = Counter(len(collection.paths[r]) - 1 for r in rows)
        edge_type = _edge_type(base, source, target)
        op = EdgeAdd(
            source, target, edge_type, params.new_edge_weight, "shortcut learned from repeated detours"
        )
        out.append(
            Candidate(
                kind="EDGE_ADD",
                title=f"Shortcut {source} → {target}",
                summary=(
                    f"{len(rows)} requests ({share:.0%} of the landings on {source}) reach {target} through a "
                    f"detour of {max(hops)} moves; a direct {edge_type} edge shortens the route"
                ),
                ops=(op,),
                evidence={
                    "pattern": "detour",
                    "support": len(rows),
                    "share": round(share, 4),
                    "sources": sources,
                    "hops": dict(sorted(hops.items())),
                    "example_paths": [
                        [collection.node_names[c] for c in collection.paths[r]] for r in rows[:3]
                    ],
                    "log_ids": context.log_refs(rows),
                },
                generator={"name": NAME_DETOUR, "version": VERSION, "params": params.as_json()},
                zone_rows=tuple(collection.rows_at(source, by="landing").tolist()),
            )
        )
    return out


def generate_coactivation(context: GeneratorContext) -> list[Candidate]:
    params = context.params.edges
    base, collection = context.base, context.collection
    nodes = base.nodes
    existing = {(e.source, e.target) for e in base.graph.edges} | {
        (e.target, e.source) for e in base.graph.edges
    }
    order = np.lexsort((collection.created, collection.sessions))
    pairs: dict[tuple[int, int], list[int]] = defaultdict(list)
    after: Counter[int] = Counter()  # follow-up requests after a request ending on X (X itself included)
    landed: Counter[int] = Counter()  # follow-up requests landing on Y
    for a, b in zip(order[:-1].tolist(), order[1:].tolist(), strict=True):
        if collection.sessions[a] != collection.sessions[b]:
            continue
        if collection.created[b] - collection.created[a] > params.followup_s:
            continue
        x_at, y_at = int(collection.target[a]), int(collection.landing[b])
        if x_at < 0 or y_at < 0:
            continue
        after[x_at] += 1
        landed[y_at] += 1
        if x_at != y_at:
            pairs[(x_at, y_at)].append(b)
    followups = sum(landed.values())
    out: list[Candidate] = []
    for (x_code, y_code), rows in sorted(pairs.items()):
        x, y = collection.node_names[x_code], collection.node_names[y_code]
        if x not in nodes or y not in nodes or (x, y) in existing:
            continue
        if nodes[x].status != "ACTIVE" or nodes[y].status != "ACTIVE":
            continue
        sources = len({int(collection.sources[r]) for r in rows})
        if len(rows) < params.min_coactivation_support or sources < params.min_sources:
            continue
        share = len(rows) / after[x_code]
        lower = wilson_lower(len(rows), after[x_code], params.coactivation_z)
        base_share = landed[y_code] / followups
        if lower < max(params.min_coactivation_share, params.min_coactivation_lift * base_share):
            continue
        if not set(nodes[x].clusters) & set(nodes[y].clusters):
            continue
        op = EdgeAdd(x, y, "RELATED_TO", params.new_edge_weight, "frequent follow-up in the same session")
        out.append(
            Candidate(
                kind="EDGE_ADD",
                title=f"Relate {x} → {y}",
                summary=(
                    f"{len(rows)} of the {after[x_code]} follow-up requests after {x} ({share:.0%}, lower "
                    f"bound {lower:.0%}; {sources} sources) ask about {y}, which draws {base_share:.0%} of "
                    "all follow-up requests"
                ),
                ops=(op,),
                evidence={
                    "pattern": "coactivation",
                    "support": len(rows),
                    "sources": sources,
                    "followups_after": after[x_code],
                    "share": round(share, 4),
                    "share_lower": round(lower, 4),
                    "base_share": round(base_share, 4),
                    "log_ids": context.log_refs(rows),
                },
                generator={"name": NAME_COACTIVATION, "version": VERSION, "params": params.as_json()},
                zone_rows=tuple(rows),
            )
        )
    return out


def _signed(outcome: int, params) -> float | None:  # type: ignore[no-untyped-def]
    if outcome == UnifiedOutcome.CONFIRMED:
        return 1.0
    if outcome == UnifiedOutcome.FAILURE:
        return -1.0
    if outcome == UnifiedOutcome.LOW_CONFIDENCE:
        return params.z_low
    if outcome == UnifiedOutcome.UNCERTAIN:
        return params.z_weak
    return None


def learn_weights(
    context: GeneratorContext,
) -> tuple[dict[EdgeKey, float], dict[EdgeKey, int], dict[str, int], dict[EdgeKey, float]]:
    """REINFORCE over the window's trajectories (see the module doc).

    Returns ``(learned, support, episodes, own)``: learned weight per edge key of every node that was
    traversed, times each edge was taken, the number of episodes through each node, and each edge's own
    evidence: the mean signed *strong* outcome (CONFIRMED +1, FAILURE −1) of the episodes that took it
    when there are at least ``min_strong_support`` of them, else 0 (silence proves nothing).
    """
    params = context.params.edges
    base, collection = context.base, context.collection
    out_edges: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    weights: dict[tuple[str, str, str], float] = {}
    for e in base.graph.edges:
        out_edges[e.source].append(e.key)
        weights[e.key] = float(e.weight)
    episodes: list[tuple[list[tuple[str, tuple[str, str, str] | None]], float]] = []
    support: Counter = Counter()
    strong_sum: dict[EdgeKey, float] = defaultdict(float)
    strong_count: Counter = Counter()
    visits: Counter = Counter()
    for row, path_keys in enumerate(collection.path_edges):
        z = _signed(int(collection.outcome[row]), params)
        if z is None:
            continue
        path = collection.paths[row]
        if not path or path[-1] < 0:
            continue
        steps: list[tuple[str, tuple[str, str, str] | None]] = []
        graph_keys = [cast(EdgeKey, tuple(k)) for k in path_keys if tuple(k) in weights]
        if len(graph_keys) != len(path_keys):  # a semantic jump or an edge of an older release: not learnable
            continue
        for key in graph_keys:
            steps.append((key[0], key))
            support[key] += 1
            if abs(z) == 1.0:  # CONFIRMED or FAILURE: the only outcomes that count as evidence
                strong_sum[key] += z
                strong_count[key] += 1
        last = collection.node_names[path[-1]]
        last_node = base.nodes.get(last)
        if out_edges.get(last) and last_node is not None and last_node.type in PASS_THROUGH:
            steps.append((last, None))  # the route STOPped on a node it could have left
        for node, _ in steps:
            visits[node] += 1
        if steps:
            episodes.append((steps, z))
    stop: dict[str, float] = defaultdict(float)
    learned = dict(weights)
    rng = context.rng("reinforce")
    tau, eta, gamma = params.temperature, params.learning_rate, params.discount
    touched_nodes = {n for n, c in visits.items() if c >= params.min_node_episodes}
    for _ in range(params.epochs):
        order = rng.permutation(len(episodes))
        for index in order.tolist():
            steps, z = episodes[index]
            uses: Counter = Counter()
            for depth, (node, chosen) in enumerate(steps):
                if node not in touched_nodes:
                    continue
                keys = out_edges[node]
                logits = (
                    np.array(
                        [learned[k] * (params.damping ** uses[k]) for k in keys] + [stop[node]],
                        dtype=np.float64,
                    )
                    / tau
                )
                pi = np.exp(logits - logits.max())
                pi /= pi.sum()
                chosen_index = keys.index(chosen) if chosen is not None else len(keys)
                grad = -pi
                grad[chosen_index] += 1.0
                step = eta * z * (gamma**depth) * grad / tau
                for i, k in enumerate(keys):
                    learned[k] = float(np.clip(learned[k] + step[i], -1.0, 1.0))
                stop[node] = float(np.clip(stop[node] + step[-1], -1.0, 1.0))
                if chosen is not None:
                    uses[chosen] += 1
        for node in touched_nodes:
            for k in out_edges[node]:
                learned[k] *= 1.0 - params.decay
    learned = {k: v for k, v in learned.items() if k[0] in touched_nodes}
    own = {
        k: strong_sum[k] / strong_count[k] if strong_count[k] >= params.min_strong_support else 0.0
        for k in support
    }
    return learned, dict(support), {n: visits[n] for n in touched_nodes}, own


def vetoed_edges(context: GeneratorContext) -> dict[EdgeKey, dict[str, float]]:
    """The graph edges the veto condemns (module doc), each with its evidence: ``confirmed`` and
    ``failed`` (strong outcomes of the requests whose route took it), ``success_upper`` (the Wilson
    upper bound of its success share) and ``project_success`` (the window's success share)."""
    params = context.params.edges
    collection = context.collection
    graph_keys = {e.key for e in context.base.graph.edges}
    confirmed: Counter = Counter()
    failed: Counter = Counter()
    project: Counter = Counter()
    for row, path_keys in enumerate(collection.path_edges):
        outcome = int(collection.outcome[row])
        if outcome not in (UnifiedOutcome.CONFIRMED, UnifiedOutcome.FAILURE):
            continue
        tally = confirmed if outcome == UnifiedOutcome.CONFIRMED else failed
        project[outcome] += 1
        for key in {cast(EdgeKey, tuple(k)) for k in path_keys} & graph_keys:
            tally[key] += 1
    strong = project[UnifiedOutcome.CONFIRMED] + project[UnifiedOutcome.FAILURE]
    if not strong:
        return {}
    baseline = project[UnifiedOutcome.CONFIRMED] / strong
    out: dict[EdgeKey, dict[str, float]] = {}
    for key in set(confirmed) | set(failed):
        n = confirmed[key] + failed[key]
        if n < params.min_veto_outcomes:
            continue
        upper = wilson_upper(confirmed[key], n, params.veto_z)
        if upper < baseline:
            out[key] = {
                "confirmed": confirmed[key],
                "failed": failed[key],
                "success_upper": round(upper, 4),
                "project_success": round(baseline, 4),
            }
    return out


def _heir(
    keys: list[EdgeKey],
    inhibited: list[EdgeKey],
    learned: dict[EdgeKey, float],
    own: dict[EdgeKey, float],
    vetoed: dict[EdgeKey, dict[str, float]],
    nodes: dict[str, NodeData],
) -> EdgeKey | None:
    """The out-edge that takes a vetoed edge's place: of the node's other moves to ACTIVE nodes that are
    not vetoed and whose own strong outcomes are not negative, the one the learner weighs highest (None
    when nothing is vetoed or no move qualifies). It is raised to the vetoed edge's weight before the
    veto, so routes that took the vetoed edge continue past the node instead of stopping on it."""
    if not inhibited:
        return None
    moves = [
        k
        for k in keys
        if k not in vetoed
        and own.get(k, 0.0) >= 0
        and nodes.get(k[1]) is not None
        and nodes[k[1]].status == "ACTIVE"
    ]
    return max(sorted(moves), key=lambda k: learned[k]) if moves else None


def generate_reinforce(context: GeneratorContext) -> list[Candidate]:
    params = context.params.edges
    base, collection = context.base, context.collection
    nodes = base.nodes
    learned, support, episodes, own = learn_weights(context)
    vetoed = vetoed_edges(context)
    current = {e.key: float(e.weight) for e in base.graph.edges}
    for key in vetoed:  # the veto sets the weight; the learner's value only where it went lower
        if key in learned:
            learned[key] = min(learned[key], params.veto_weight)
    by_node: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for key in learned:
        by_node[key[0]].append(key)
    out: list[Candidate] = []
    for node, keys in sorted(by_node.items()):
        if nodes.get(node) is None or nodes[node].status != "ACTIVE":
            continue
        changed = [
            k
            for k in sorted(keys)
            if support.get(k, 0) >= params.min_edge_support
            and weight_tier(learned[k]) != weight_tier(current[k])
            and abs(learned[k] - current[k]) >= params.min_weight_delta
            # down only by the veto; up only when the edge's own strong outcomes are positive (a
            # badly-ending edge is not promoted because a sibling did worse)
            and (k in vetoed if learned[k] < current[k] else own.get(k, 0.0) > 0)
            and nodes.get(k[1]) is not None
            and nodes[k[1]].status == "ACTIVE"
        ]
        if not changed:
            continue
        inhibited = [k for k in changed if weight_tier(learned[k]) == "inhibitory"]
        heir = _heir(keys, inhibited, learned, own, vetoed, nodes)
        if heir is not None:  # the best remaining move takes the vetoed edge's place
            learned[heir] = max(learned[heir], max(current[k] for k in inhibited))
        if inhibited:  # the mass the inhibited edges lose goes to the node's other moves
            for k in sorted(keys):
                if (
                    k not in changed
                    and weight_tier(learned[k]) != weight_tier(current[k])
                    and learned[k] > current[k]
                    and abs(learned[k] - current[k]) >= params.min_weight_delta
                    and nodes.get(k[1]) is not None
                    and nodes[k[1]].status == "ACTIVE"
                ):
                    changed.append(k)
        ops = tuple(
            EdgeSetWeight(k[0], k[1], k[2], round(learned[k], 4), previous=round(current[k], 4))
            for k in changed
        )
        kind = "EDGE_INHIBIT" if inhibited else "EDGE_WEIGHT"
        rows = [r for r, p in enumerate(collection.path_edges) if any(tuple(k)[0] == node for k in p)]
        outcomes = Counter(UnifiedOutcome(int(collection.outcome[r])).name for r in rows)
        description = "; ".join(
            f"{k[0]} -{k[2]}-> {k[1]}: {current[k]:.2f} ({weight_tier(current[k])}) → {learned[k]:.2f} "
            f"({weight_tier(learned[k])})"
            for k in changed
        )
        out.append(
            Candidate(
                kind=kind,
                title=(
                    f"Inhibit {len(inhibited)} edge(s) out of {node}"
                    if inhibited
                    else f"Re-weight edges out of {node}"
                ),
                summary=f"Outcome-learned weights over {episodes.get(node, 0)} trajectories: {description}",
                ops=ops,
                evidence={
                    "node": node,
                    "episodes": episodes.get(node, 0),
                    "edges": [
                        {
                            "edge": list(k),
                            "taken": support.get(k, 0),
                            "before": round(current[k], 4),
                            "learned": round(learned[k], 4),
                            "tier_before": weight_tier(current[k]),
                            "tier_after": weight_tier(learned[k]),
                            **({"veto": vetoed[k]} if k in vetoed else {}),
                            **({"heir": True} if k == heir else {}),
                        }
                        for k in sorted(keys)
                    ],
                    "outcomes": dict(sorted(outcomes.items())),
                    "log_ids": context.log_refs(rows),
                },
                generator={"name": NAME_REINFORCE, "version": VERSION, "params": params.as_json()},
                zone_rows=tuple(sorted(set(rows) | set(collection.rows_at(node, by="landing").tolist()))),
            )
        )
    return out
