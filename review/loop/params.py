"""Typed view of the offline loop's thresholds and weights.

The values live in ``settings.OFFLINE_LOOP`` (one dict, documented there and in ``.env``-free code
review); this module only gives them types and names. ``loop_params()`` reads the settings, with
``overrides`` (a run's or a simulation's) merged section by section, and refuses unknown keys so a
typo in settings fails loudly instead of silently using nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


class _Section:
    def as_json(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True)
class SplitParams(_Section):
    min_landings: int
    max_prompts: int
    max_children: int
    min_share: float
    min_silhouette: float
    max_centroid_cosine: float
    label_weight: float
    outcome_weight: float
    shared_sentence_margin: float
    satisfaction_z: float


@dataclass(frozen=True)
class MergeParams(_Section):
    min_content_cosine: float
    max_pairs: int
    max_prompts: int
    min_landings: int
    min_usage_cosine: float
    min_competitions: int
    fgw_alpha: float
    fgw_epsilon: float


@dataclass(frozen=True)
class EdgeParams(_Section):
    min_detour_support: int
    min_detour_share: float
    min_sources: int
    new_edge_weight: float
    followup_s: float
    # co-activation: at least min_coactivation_support sessions, and the Wilson lower bound (at
    # coactivation_z) of the share of X's follow-ups that land on Y at least min_coactivation_share and
    # min_coactivation_lift times Y's share of all follow-ups
    min_coactivation_support: int
    min_coactivation_share: float
    min_coactivation_lift: float
    coactivation_z: float
    z_low: float
    z_weak: float
    temperature: float
    learning_rate: float
    discount: float
    damping: float
    decay: float
    epochs: int
    min_node_episodes: int
    min_edge_support: int
    min_strong_support: int
    min_weight_delta: float
    # the veto (edges module doc): the Wilson upper bound at veto_z of an edge's success share, over at
    # least min_veto_outcomes strong outcomes, below the project's; a vetoed edge goes to veto_weight
    veto_z: float
    min_veto_outcomes: int
    veto_weight: float


@dataclass(frozen=True)
class LabelParams(_Section):
    max_prompts: int
    min_support: int
    min_wordings: int
    min_sources: int
    cluster_cosine: float
    max_examples: int
    sibling_cosine: float
    attach_cosine: float
    min_shadow_support: int


@dataclass(frozen=True)
class MemoryParams(_Section):
    min_recurrence: int
    min_sources: int
    min_segments: int
    max_segment_share: float
    weak_weight: float
    min_weighted_support: float
    max_uncertain_share: float
    infounit_cosine: float
    node_cosine: float
    attach_cosine: float


@dataclass(frozen=True)
class LifecycleParams(_Section):
    """Obsolescence, removal and label re-attachment (``review.loop.generators.lifecycle``)."""

    # OBSOLESCENCE from persistent failures: at least min_landings outcome-bearing landings, failures
    # (silence is none) on at least min_nights distinct days, and the one-sided Wilson lower bound (at z)
    # of the failure share at least negative_share
    min_landings: int
    min_nights: int
    negative_share: float
    z: float
    # OBSOLESCENCE from no traffic: no landing, target or path over the last idle_days although the
    # node was ACTIVE that long and its labels brought at least min_door_traffic requests
    idle_days: float
    min_door_traffic: int
    replacement_cosine: float  # a redirection to the closest ACTIVE node of its cluster from this cosine
    # NODE_REMOVE: DEPRECATED for at least observation_days with at most max_alias_traffic alias hits
    observation_days: float
    max_alias_traffic: int
    # LABEL_REATTACH: support and sources of the label's traffic; the lower bound (at z) of the mean
    # per-request gap affinity(other cluster) − affinity(own cluster) must reach margin in both views
    # (cluster centroid; mean of the reattach_neighbours nearest nodes, 0: the centroid view alone)
    reattach_min_support: int
    reattach_min_sources: int
    reattach_max_prompts: int
    reattach_neighbours: int
    margin: float
    parent_cosine: float  # re-attached beside the closest label of the new cluster from this cosine


@dataclass(frozen=True)
class ReplayParams(_Section):
    zone_sample: int
    control_sample: int
    knn_k: int
    knn_min: int
    knn_cosine: float
    fit_model_sample: int
    fit_model_k: int
    fit_model_min: int
    action_prior_min: int


@dataclass(frozen=True)
class ScoreParams(_Section):
    a_confirmed: float
    b_uncertain: float
    c_lowconf: float
    kappa_silence: float
    action_weight: float
    fit_weight: float
    ambiguity_weight: float
    path_weight: float
    lambda_complexity: float
    mu_taxonomy: float
    nu_security: float


@dataclass(frozen=True)
class GedigParams(_Section):
    lam: float
    gamma: float
    c_max: float
    max_hops: int
    temperature: float
    theta_ag: float
    theta_dg: float
    ag_percentile: float
    dg_percentile: float
    min_history: int
    history_window: int


@dataclass(frozen=True)
class BinParams(_Section):
    high_score: float
    mid_score: float
    min_confirmed_gain: float
    min_coverage: float
    max_uncertain_share: float
    min_zone_interactions: int
    autocommit_kinds: tuple[str, ...]
    placement_kinds: tuple[str, ...]
    critical_clusters: tuple[str, ...]
    boost_uncertain_share: float
    boost_active_check_rate: float
    silent_samples: int


@dataclass(frozen=True)
class LoopParams(_Section):
    window_days: float
    max_logs: int
    seed: int
    reuse_proxy_s: float
    generators: tuple[str, ...]
    split: SplitParams
    merge: MergeParams
    edges: EdgeParams
    labels: LabelParams
    memory: MemoryParams
    lifecycle: LifecycleParams
    replay: ReplayParams
    score: ScoreParams
    gedig: GedigParams
    bins: BinParams


SECTIONS: dict[str, type] = {
    "split": SplitParams,
    "merge": MergeParams,
    "edges": EdgeParams,
    "labels": LabelParams,
    "memory": MemoryParams,
    "lifecycle": LifecycleParams,
    "replay": ReplayParams,
    "score": ScoreParams,
    "gedig": GedigParams,
    "bins": BinParams,
}


def _build(cls: type, values: dict[str, Any], where: str) -> Any:
    names = {f.name: f for f in fields(cls)}
    unknown = set(values) - set(names)
    missing = set(names) - set(values)
    if unknown or missing:
        raise ValueError(f"OFFLINE_LOOP[{where}]: unknown {sorted(unknown)}, missing {sorted(missing)}")
    kwargs = {k: (tuple(v) if isinstance(v, list) else v) for k, v in values.items()}
    return cls(**kwargs)


def loop_params(overrides: dict[str, Any] | None = None) -> LoopParams:
    """The loop's parameters: ``settings.OFFLINE_LOOP`` with ``overrides`` merged per section."""
    from django.conf import settings

    # the sections of the settings (JSON-like: numbers, names, nested sections), checked by _build
    config: dict[str, Any] = {
        k: (dict(v) if isinstance(v, dict) else v) for k, v in settings.OFFLINE_LOOP.items()
    }
    for key, value in (overrides or {}).items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key] = {**config[key], **value}
        else:
            config[key] = value
    sections = {name: _build(cls, config.pop(name, {}), name) for name, cls in SECTIONS.items()}
    top = {k: config.pop(k) for k in list(config) if k in {f.name for f in fields(LoopParams)}}
    if config:
        raise ValueError(f"OFFLINE_LOOP: unknown keys {sorted(config)}")
    return _build(LoopParams, {**top, **sections}, "top")
