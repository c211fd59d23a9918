"""Step D — confidence bins, targeted sampling and the confidence-boost loop (ARG §3.4).

``bin_for`` puts a scored proposal in one of three bins; every threshold comes from
``settings.OFFLINE_LOOP["bins"]``:

* **LOW_CONF** (backlog) — ``Score(C) < mid_score``, or any taxonomy/ontology or security violation;
  except a change the replay saw **no effect** of — none of the sampled requests changed answer (target,
  or a new node keeping the old one's whole content, as the merged AB does), path, landing fit, flags or
  outcome, so ``Score(C)`` is only its complexity price (a related-to edge
  between two answers users ask one after the other, typically) — which goes to an expert as MID_CONF
  with that reason: unmeasured is not the same as measured and found wanting; except a change whose
  score falls below ``mid_score`` only through the action prior's estimate (``modelled_action_gain``
  < 0, and the score without it reaches ``mid_score``): an action nobody took yet is an estimate, which
  can neither auto-commit a change (below) nor bury it, so it goes to an expert (MID_CONF); and except a
  *placement* change (``placement_kinds``: LABEL_REATTACH) whose score lies below ``mid_score``:
  it moves a label between clusters, which decides policy reach, Weaver validation and what curators
  browse, not which node a request reaches, so replay cannot measure its worth; it goes to an expert
  (MID_CONF) unless replay measured harm to what requests get — the score *without its ambiguity
  term* (``ambiguity_cost``) ``≤ −mid_score``. The ambiguity flags say how closely the labels the
  Weaver validates together compete, and a move changes which labels those are by design, so that
  term prices the move itself, not its effect on the answers, landings and paths;
* **HIGH_CONF** (auto-commit) — ``Score(C) ≥ high_score`` *and* the conditional auto-commit rule of
  §3.4.1 holds: the confirmed gain reaches ``min_confirmed_gain`` **or** the impacted zone's
  ActiveCheckCoverage reaches ``min_coverage`` — and the gain is not dominated by uncertain outcomes
  (``silence_dominated``) — and the kind is in ``autocommit_kinds``, the zone has at least
  ``min_zone_interactions`` interactions, no slow-poisoning guard forbids it, the zone is not under
  a confidence boost, the score reaches ``high_score`` without the action prior's estimate
  (``modelled_action_gain``: actions nobody took yet, ``review.loop.replay`` rule 4), and the geDIG
  gates agree (AG quiet, DG confirming; ``review.loop.gedig_gate``);
* **MID_CONF** (expert review) — everything else.

``reason`` says, in words, which rule decided (it is shown to the reviewer and stored).

**Targeted human sampling** (§3.4.2) — ``silent_success_sample`` draws, with the night's seed, silent
successes (UNCERTAIN Info outcomes without any signal) from strategically important zones (critical
clusters, then the busiest nodes) for reviewers to label.

**Confidence boost** (§3.4.3) — ``boost_zones`` lists business-critical nodes (in a critical cluster, or
medium/high risk) whose traffic is dominated by weak signals (uncertain share ≥ ``boost_uncertain_share``
and coverage below ``min_coverage``): the online active-check rate is raised there
(``boost_active_check_rate``) and proposals touching them go to review instead of auto-commit, until
coverage is acceptable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from review.loop.collection import Collection, UnifiedOutcome
from review.loop.gedig_gate import GateDecision
from review.loop.params import BinParams
from review.loop.shadow import BaseRelease


@dataclass(frozen=True)
class BinDecision:
    confidence_bin: str  # HIGH_CONF | MID_CONF | LOW_CONF
    reason: str
    autocommit: bool
    gate: str = "not consulted"  # what the geDIG gate decided: "passed" | "held back" | "not consulted"


def bin_for(
    *,
    kind: str,
    replay: dict[str, Any],
    guard: dict[str, Any],
    target_keys: list[str],
    boosted: set[str],
    params: BinParams,
    gate: GateDecision,
) -> BinDecision:
    """The bin of one scored proposal (see the module doc for the rules, in order)."""
    score = float(replay.get("score", 0.0))
    modelled = float((replay.get("gains") or {}).get("modelled_action_gain", 0.0))  # the action prior's part
    violations = replay.get("violations", {})
    n_violations = len(violations.get("taxonomy", [])) + len(violations.get("security", []))
    if n_violations:
        return BinDecision("LOW_CONF", f"{n_violations} validator/integrity violation(s)", False)
    if score < params.mid_score:
        served = score + float((replay.get("gains") or {}).get("ambiguity_cost", 0.0))
        if kind in params.placement_kinds and served > -params.mid_score:
            return BinDecision(
                "MID_CONF",
                f"{kind} changes where a label sits in the taxonomy, not where requests go: replay's "
                f"Score(C) {score:.4f}, {served:.4f} without its ambiguity term, is above "
                f"−{params.mid_score} (no measured harm to what requests get); an expert judges it on "
                "its evidence",
                False,
            )
        sampled = sum(int(v) for v in (replay.get("sample") or {}).values())
        if sampled and score > -params.mid_score and _no_measured_effect(replay):
            return BinDecision(
                "MID_CONF",
                f"replay saw no effect on the {sampled} sampled requests (Score(C) {score:.4f} is only the "
                "change's complexity): an expert judges it on its evidence",
                False,
            )
        if modelled < 0 and score - modelled >= params.mid_score:
            return BinDecision(
                "MID_CONF",
                f"Score(C) {score:.4f} is below {params.mid_score} only through the action prior's estimate "
                f"({modelled:.4f}; {score - modelled:.4f} without it): an action nobody took yet neither "
                "commits a change nor buries it; an expert judges it on its evidence",
                False,
            )
        return BinDecision("LOW_CONF", f"Score(C) {score:.4f} < {params.mid_score}", False)
    if score < params.high_score:
        return BinDecision(
            "MID_CONF", f"Score(C) {score:.4f} below the auto-commit threshold {params.high_score}", False
        )
    blockers = []
    if replay.get("silence_dominated"):
        blockers.append("the gain is dominated by uncertain (silent) outcomes")
    confirmed = float(replay.get("confirmed_gain", 0.0))
    coverage = float(replay.get("zone_coverage", 0.0))
    if confirmed < params.min_confirmed_gain and coverage < params.min_coverage:
        blockers.append(
            f"confirmed gain {confirmed:.4f} < {params.min_confirmed_gain} and ActiveCheckCoverage "
            f"{coverage:.2f} < {params.min_coverage}"
        )
    if modelled > 0 and score - modelled < params.high_score:
        blockers.append(
            f"without the action prior's estimate ({modelled:.4f}) Score(C) is {score - modelled:.4f}: "
            "an action nobody took yet is not evidence"
        )
    if kind not in params.autocommit_kinds:
        blockers.append(f"{kind} proposals always go to an expert")
    if int(replay.get("zone_interactions", 0)) < params.min_zone_interactions:
        blockers.append(f"only {replay.get('zone_interactions', 0)} interactions in the zone")
    if guard.get("no_autocommit"):
        blockers.append(str(guard.get("reason") or "slow-poisoning guard"))
    touched = sorted(set(target_keys) & boosted)
    if touched:
        blockers.append(f"confidence boost on {', '.join(touched[:3])}: review density raised")
    gate_verdict = "passed"
    if not gate.allows_autocommit:
        blockers.append(gate.blocker())
        gate_verdict = "held back"
    if blockers:
        return BinDecision("MID_CONF", "HIGH score but " + "; ".join(blockers), False, gate_verdict)
    return BinDecision(
        "HIGH_CONF",
        f"Score(C) {score:.4f} ≥ {params.high_score} with confirmed evidence; geDIG DG confirms",
        True,
        gate_verdict,
    )


def _no_measured_effect(replay: dict[str, Any]) -> bool:
    """No replayed request changed answer — its target is the same, or a new node that keeps the old
    one's whole content (``same_answer_moves``: the merged AB) — and every measured difference (outcomes,
    fit, flags, path) is 0."""
    deltas = [float(v) for k, v in (replay.get("gains") or {}).items() if k.startswith("delta_")]
    changed = int(replay.get("changed_targets", -1)) - int(replay.get("same_answer_moves", 0))
    return changed == 0 and bool(deltas) and all(abs(v) < 1e-9 for v in deltas)


def boost_zones(collection: Collection, base: BaseRelease, params: BinParams) -> dict[str, dict[str, float]]:
    """Business-critical nodes dominated by weak signals → ``{node_id: {uncertain, coverage, rate}}``."""
    out: dict[str, dict[str, float]] = {}
    critical_clusters = set(params.critical_clusters)
    for node_id, m in sorted(collection.node_metrics.items()):
        node = base.nodes.get(node_id)
        if node is None or node.status != "ACTIVE" or m.n_info < params.min_zone_interactions:
            continue
        critical = bool(critical_clusters & set(node.clusters)) or node.risk in ("medium", "high")
        if not critical:
            continue
        if m.uncertain_rate >= params.boost_uncertain_share and m.active_check_coverage < params.min_coverage:
            out[node_id] = {
                "uncertain": round(m.uncertain_rate, 4),
                "coverage": round(m.active_check_coverage, 4),
                "rate": params.boost_active_check_rate,
            }
    return out


def silent_success_sample(
    collection: Collection, base: BaseRelease, params: BinParams, *, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Up to ``silent_samples`` silent successes from important zones, for reviewers (§3.4.2)."""
    silent = np.flatnonzero(
        (collection.outcome == UnifiedOutcome.UNCERTAIN) & ~collection.verified & (collection.target >= 0)
    )
    if silent.shape[0] == 0 or params.silent_samples <= 0:
        return []
    critical_clusters = set(params.critical_clusters)
    weight = np.ones(silent.shape[0])
    for i, row in enumerate(silent.tolist()):
        node = base.nodes.get(collection.target_id(row) or "")
        if node is None:
            continue
        if critical_clusters & set(node.clusters) or node.risk in ("medium", "high"):
            weight[i] = 5.0
        metrics = collection.node_metrics.get(node.node_id)
        if metrics is not None and metrics.silence_dominated:
            weight[i] *= 2.0
    size = min(params.silent_samples, silent.shape[0])
    chosen = rng.choice(silent.shape[0], size=size, replace=False, p=weight / weight.sum())
    out = []
    for i in sorted(chosen.tolist()):
        row = int(silent[i])
        node_id = collection.target_id(row) or ""
        node = base.nodes.get(node_id)
        out.append(
            {
                "log_id": int(collection.log_ids[row]),
                "node_id": node_id,
                "zone": ",".join(node.clusters) if node else "",
                "weight": float(weight[i]),
            }
        )
    return out
