"""C_info, the information confidence of an Info answer: a weighted sum of five components in [0, 1]
— lexical, semantic, taxonomy, policy and fallback — whose meanings and weights ``InfoParams`` defines
(``c_info`` computes it, ``CInfo`` holds the value with its components)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from inference.contracts import Flag, PolicyDecision, PolicyState, WeaverResult
from ontology.graph_snapshot import GraphSnapshot

from .params import DEFAULT_PARAMS, InfoParams
from .sentence_index import InfoIndex, tokens


@dataclass(frozen=True)
class CInfo:
    """A C_info value with its five components, each in [0, 1]."""

    value: float
    lexical: float
    semantic: float
    taxonomy: float
    policy: float
    fallback: float

    def as_json(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in asdict(self).items()}


def _scaled_cosine(cos: float, params: InfoParams) -> float:
    span = params.cos_ceiling - params.cos_floor
    return float(min(1.0, max(0.0, (cos - params.cos_floor) / span)))


def c_info(
    *,
    snapshot: GraphSnapshot,
    index: InfoIndex,
    prompt: str,
    prompt_vec: np.ndarray,
    target: int,
    path: Sequence[str],
    weaver: WeaverResult,
    decision: PolicyDecision,
    best_sentence_cosine: float,
    params: InfoParams = DEFAULT_PARAMS,
) -> CInfo:
    """The information confidence of an answer (§2.9.4), with its five components."""
    final = list(weaver.l_final)
    prompt_tokens = tokens(prompt)
    lexical = max(
        (
            weight * len(phrase & prompt_tokens) / len(phrase)
            for label in final
            for phrase, weight in index.label_phrases.get(label, ())
        ),
        default=0.0,
    )

    cosines = [best_sentence_cosine]
    if snapshot.embeddings is not None:
        cosines.append(float(snapshot.embeddings[target] @ prompt_vec))
    semantic = _scaled_cosine(sum(cosines) / len(cosines), params)

    path_nodes = [n for n in path if n in snapshot.position] or [snapshot.node_ids[target]]
    final_set = set(final)
    clusters = {index.label_cluster[label] for label in final if label in index.label_cluster}
    attached = sum(
        1
        for n in path_nodes
        if final_set.intersection(snapshot.node_labels[snapshot.position[n]])
        or clusters.intersection(snapshot.node_clusters[snapshot.position[n]])
    )
    taxonomy = attached / len(path_nodes) if final else 0.0

    state_factor = {
        PolicyState.ALLOW: 1.0,
        PolicyState.ALLOW_WITH_REFOCUS: params.refocus_factor,
        PolicyState.RESTRICT: params.restrict_factor,
    }.get(decision.state, 0.0)
    policy = max(0.0, state_factor - params.policy_reason_penalty * len(decision.reasons))

    factors = dict(params.flag_factors)
    fallback = min((factors.get(str(flag), 1.0) for flag in weaver.flags), default=1.0)
    if snapshot.node(target).type == "OutOfScope":
        fallback = 0.0

    value = (
        params.w_lexical * lexical
        + params.w_semantic * semantic
        + params.w_taxonomy * taxonomy
        + params.w_policy * policy
        + params.w_fallback * fallback
    )
    if Flag.OOD in weaver.flags:
        value = min(value, params.ood_cap)
    value = float(min(1.0, max(0.0, value)))
    return CInfo(round(value, 4), lexical, semantic, taxonomy, policy, fallback)
