"""Step 3 — the Context Weaver (ARG §2.3): taxonomy-safe labels for a request.

Cascade, cheapest first: label vector top-K over the label index (restricts the choice, never defines
structure) → the distilled classifier (the default hot path) → the bounded proposer only on
escalation and only with an LLM configured ("choose among these or ABSTAIN",
``inference.steps.proposer``) → the deterministic taxonomy validator, the final arbiter. Output:
``L_final``, ``confidence_global`` and the flags.

Terms: *margin* = p(top-1) − p(top-2) of the classifier; *OOD* = no label is probable and nothing in
the label index is close; *cold start* (NEW_INTENT_CANDIDATE) = the words are in-domain (lexical hits)
but no label is confident; *chosen* = the label a user picked when asked "Do you mean X or Y?"
(``inference.steps.clarification``): it replaces the cascade's choice, and the validator still judges it.

*Candidate set* ``C`` (§2.2–2.3.1, "restricting the space of choice"): ``L_raw`` (the lexical step's
labels) ∪ the label-index vector Top-K. Under the *protocol* candidate mode the classifier ranks only
inside ``C``: labels outside it are dropped from its ranking, never renormalised, so ``p1`` stays the
classifier's own probability (the OOD threshold and ``confidence_global`` read it) and a classifier whose
mass lies outside ``C`` shows up as low confidence, not as false certainty. Under the *all* mode the
classifier ranks every label of the release. Either way the log keeps the classifier's own top label
and whether it lay outside ``C`` (``WeaverResult.candidates``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from django.conf import settings

from inference.contracts import Flag, LexicalCandidates, PolicyDecision, WeaverResult
from inference.learning.classifier import OOS_CLASS, LabelClassifier
from inference.steps.proposer import Proposal, Result
from taxonomy.validator import LabelGate, TaxonomyView, validate_label_set


@dataclass(frozen=True)
class WeaverParams:
    """Thresholds of the Context Weaver; benchmarks calibrate them on validation data only."""

    top_k: int | None = None  # the label-index vector Top-K; None = ``settings.WEAVER_TOP_K``
    # which labels the classifier ranks: PROTOCOL (``C`` = L_raw ∪ Top-K) | ALL; None = the setting
    candidates: str | None = None
    ood_probability: float = 0.30  # below this top-1 probability (and far from every label) → OOD
    ood_cosine: float = 0.35  # … and the best label-index cosine below this
    low_margin: float = 0.15  # top-1 − top-2 probability below this → LOW_MARGIN
    ambiguity_cosine_gap: float = 0.02  # two label-index hits this close, on different branches → ambiguity
    abstain_probability: float = 0.45  # LOW_MARGIN with top-1 below this → ABSTAIN_RECOMMENDED
    secondary_probability: float = 0.35  # other compatible labels kept in L_final above this
    cold_start_lexical: float = 0.6  # best lexical score at least this while OOD-like → NEW_INTENT_CANDIDATE
    # confidence_global of a label the bounded proposer chose (its classifier probability when higher):
    # the proposer settles the hesitation the escalation was about, the landing's safety nets still apply
    proposer_confidence: float = 0.5

    def resolved_top_k(self) -> int:
        """The vector Top-K: this parameter, else ``settings.WEAVER_TOP_K`` (``ARG_WEAVER_TOP_K``)."""
        return int(self.top_k if self.top_k is not None else settings.WEAVER_TOP_K)

    def resolved_candidates(self) -> str:
        """The candidate mode: this parameter, else ``settings.WEAVER_CANDIDATES``."""
        mode = self.candidates if self.candidates is not None else settings.WEAVER_CANDIDATES
        if mode not in CANDIDATE_MODES:
            raise ValueError(f"weaver candidate mode must be one of {CANDIDATE_MODES}, not {mode!r}")
        return str(mode)


PROTOCOL = "protocol"  # the classifier chooses inside C = L_raw ∪ vector Top-K (ARG §2.3.1)
ALL = "all"  # the classifier chooses among every label of the release
CANDIDATE_MODES = (PROTOCOL, ALL)

# what a user's answer to "Do you mean X or Y?" settles: none of these describe the request any more
RESOLVED_BY_CHOICE = frozenset(
    {Flag.OOD, Flag.NEW_INTENT_CANDIDATE, Flag.LOW_MARGIN, Flag.VECTOR_AMBIGUITY, Flag.ABSTAIN_RECOMMENDED}
)
# the cascade is unsure (and not out of domain): the bounded proposer is asked, when there is one
ESCALATION = frozenset(
    {Flag.LOW_MARGIN, Flag.VECTOR_AMBIGUITY, Flag.ABSTAIN_RECOMMENDED, Flag.NEW_INTENT_CANDIDATE}
)
# what a candidate chosen by the proposer settles (LOW_MARGIN / VECTOR_AMBIGUITY stay: they describe
# the cascade, and the offline loop reads them)
RESOLVED_BY_PROPOSER = frozenset({Flag.ABSTAIN_RECOMMENDED, Flag.NEW_INTENT_CANDIDATE})


@dataclass(frozen=True, eq=False)
class WeaverIndex:
    """Per-release inputs: label index ids/embeddings (ACTIVE + SHADOW), classifier, taxonomy view."""

    label_ids: tuple[str, ...]
    label_status: tuple[str, ...]
    label_vectors: np.ndarray
    classifier: LabelClassifier | None
    view: TaxonomyView
    parents: dict[str, str | None]

    @cached_property
    def class_positions(self) -> dict[str, int]:
        """Each classifier class → its column in ``probabilities`` (computed once per release)."""
        classes = self.classifier.classes if self.classifier is not None else ()
        return {c: i for i, c in enumerate(classes)}


def top_indices(values: np.ndarray, k: int) -> np.ndarray:
    """The indices of the ``k`` largest values, best first, ties by index — the same as
    ``np.argsort(-values, kind="stable")[:k]`` in O(n) rather than O(n log n): a request ranks every
    label of the release twice (label index and classifier), thousands on a large taxonomy."""
    n = values.shape[0]
    if k >= n or n <= 256:
        return np.argsort(-values, kind="stable")[:k]
    negated = -values
    kth = np.partition(negated, k - 1)[k - 1]
    candidates = np.flatnonzero(negated <= kth)  # the k best and every tie of the k-th, by index
    return candidates[np.argsort(negated[candidates], kind="stable")][:k]


def weave(
    *,
    index: WeaverIndex,
    prompt_vec: np.ndarray,
    lexical: LexicalCandidates,
    decision: PolicyDecision,
    params: WeaverParams = WeaverParams(),
    proposer: Callable[[Sequence[str]], Proposal] | None = None,
    chosen: str | None = None,
) -> WeaverResult:
    """``L_final``, ``confidence_global`` and the flags of one request (the module docstring).

    With ``chosen`` the rankings are still computed and logged, but the user's answer settles what
    they were unsure about: ``chosen`` is the one candidate, at confidence 1, and the flags that
    describe the uncertainty the question resolved are dropped (``RESOLVED_BY_CHOICE``). The
    taxonomy validator and the policy's label gate judge it like any other candidate.

    With a ``proposer`` and an escalation (``ESCALATION``, never OOD) the proposer is asked to choose
    among the candidates the policy admits: a chosen candidate is the one label, at
    ``params.proposer_confidence`` or its classifier probability if higher; ABSTAIN recommends
    abstaining; a label outside the candidates raises UNKNOWN_LABEL_CANDIDATE; an error or a spent
    budget leaves the cascade's result as it was."""
    flags: set[Flag] = set()
    top_k_size = params.resolved_top_k()
    mode = params.resolved_candidates()
    cosines = index.label_vectors @ prompt_vec if len(index.label_ids) else np.zeros(0)
    order = top_indices(cosines, top_k_size)
    top_k = tuple((index.label_ids[i], round(float(cosines[i]), 4)) for i in order)
    active_top = [
        (lid, c) for (lid, c), i in zip(top_k, order, strict=True) if index.label_status[i] == "ACTIVE"
    ]
    shadow = tuple(
        (lid, c) for (lid, c), i in zip(top_k, order, strict=True) if index.label_status[i] == "SHADOW"
    )
    best_cos = active_top[0][1] if active_top else 0.0
    if (
        len(active_top) >= 2
        and active_top[0][1] - active_top[1][1] < params.ambiguity_cosine_gap
        and index.parents.get(active_top[0][0]) != index.parents.get(active_top[1][0])
    ):
        flags.add(Flag.VECTOR_AMBIGUITY)

    scored: dict[str, float] = {}
    classifier_top: tuple[tuple[str, float], ...] = ()
    p1 = p2 = 0.0
    oos_p = 0.0
    probs: np.ndarray | None = None
    candidate_set = frozenset(lexical.raw) | {lid for lid, _ in top_k}
    candidates_log: dict[str, Any] = {"mode": mode, "size": len(candidate_set)}
    if index.classifier is not None:
        probs = index.classifier.probabilities(prompt_vec)
        own_top = index.classifier.classes[int(np.argmax(probs))] if probs.size else OOS_CLASS
        outside = own_top != OOS_CLASS and own_top not in candidate_set
        candidates_log |= {"classifier_top": own_top, "classifier_top_outside": outside}
        ranking = probs
        if mode == PROTOCOL:  # labels outside C leave the ranking; the oos class stays (it is no label)
            keep = [
                index.class_positions[c] for c in (*candidate_set, OOS_CLASS) if c in index.class_positions
            ]
            ranking = np.full_like(probs, -1.0)
            ranking[keep] = probs[keep]
        ranked = [i for i in top_indices(ranking, 5) if ranking[i] >= 0.0]
        classifier_top = tuple((index.classifier.classes[i], round(float(probs[i]), 4)) for i in ranked)
        in_scope = [(c, p) for c, p in classifier_top if c != OOS_CLASS]
        oos_p = next((p for c, p in classifier_top if c == OOS_CLASS), 0.0)
        p1 = in_scope[0][1] if in_scope else 0.0
        p2 = in_scope[1][1] if len(in_scope) > 1 else 0.0
        scored = {c: p for c, p in in_scope if p >= params.secondary_probability or c == in_scope[0][0]}
    elif active_top:
        p1, p2 = best_cos, active_top[1][1] if len(active_top) > 1 else 0.0
        scored = {active_top[0][0]: best_cos}

    lexical_best = max(lexical.raw.values(), default=0.0)
    ood = (p1 < params.ood_probability and best_cos < params.ood_cosine) or oos_p > p1
    if ood:
        if lexical_best >= params.cold_start_lexical and oos_p <= p1:
            flags.add(Flag.NEW_INTENT_CANDIDATE)
        else:
            flags.add(Flag.OOD)
    if p1 - p2 < params.low_margin:
        flags.add(Flag.LOW_MARGIN)
    if Flag.OOD in flags or (Flag.LOW_MARGIN in flags and p1 < params.abstain_probability):
        flags.add(Flag.ABSTAIN_RECOMMENDED)

    if chosen is not None:
        scored, p1, p2 = {chosen: 1.0}, 1.0, 0.0
        flags -= RESOLVED_BY_CHOICE

    gate = LabelGate(
        allowed=decision.constraints.allowed_labels, forbidden=decision.constraints.forbidden_labels
    )
    proposal: Proposal | None = None
    if chosen is None and proposer is not None and flags & ESCALATION and Flag.OOD not in flags:
        ranked_ids = [lid for lid, _ in active_top] + [c for c, _ in classifier_top if c != OOS_CLASS]
        candidates = [
            lid
            for lid in dict.fromkeys(ranked_ids)
            if gate.admits(lid) and lid in index.view.labels and index.view.labels[lid].status == "ACTIVE"
        ][:top_k_size]
        if candidates:
            proposal = proposer(candidates)
    if proposal is not None and proposal.result == Result.CHOSEN and proposal.label_id is not None:
        p_choice = max(params.proposer_confidence, _probability(index, probs, cosines, proposal.label_id))
        scored, p1, p2 = {proposal.label_id: p_choice}, p_choice, 0.0
        flags -= RESOLVED_BY_PROPOSER
    elif proposal is not None and proposal.result == Result.ABSTAINED:
        flags.add(Flag.ABSTAIN_RECOMMENDED)
    elif proposal is not None and proposal.result == Result.UNKNOWN:
        flags |= {Flag.UNKNOWN_LABEL_CANDIDATE, Flag.ABSTAIN_RECOMMENDED}

    verdict = validate_label_set(index.view, {} if Flag.OOD in flags else scored, gate=gate)
    l_final = {k: round(v, 4) for k, v in verdict.kept.items()}
    if scored and not l_final and Flag.OOD not in flags:
        flags.add(Flag.ABSTAIN_RECOMMENDED)
    confidence = (
        0.0
        if not l_final
        else float(np.clip(p1 * (1.0 - 0.5 * max(0.0, params.low_margin - (p1 - p2))), 0, 1))
    )
    return WeaverResult(
        top_k=top_k,
        classifier=classifier_top,
        proposer_used=proposal is not None,
        proposal=proposal.as_log() if proposal is not None else {},
        l_final=l_final,
        confidence=round(confidence, 4),
        flags=frozenset(flags),
        rejected=verdict.rejected,
        shadow=shadow,
        candidates=candidates_log,
    )


def _probability(index: WeaverIndex, probs: np.ndarray | None, cosines: np.ndarray, label_id: str) -> float:
    """The cascade's score of one label: its classifier probability, else its label-index cosine."""
    if index.classifier is not None and probs is not None:
        classes = list(index.classifier.classes)
        if label_id in classes:
            return float(probs[classes.index(label_id)])
        return 0.0
    if label_id in index.label_ids:
        return float(cosines[index.label_ids.index(label_id)])
    return 0.0


_index_cache: dict[tuple[int, int | None, str], WeaverIndex] = {}


def weaver_index_for(snapshot: Any, runtime: Any) -> WeaverIndex:
    """The weaver's per-release index (built once per release, like the runtime)."""
    from inference.learning.classifier import classifier_from_documents

    key = (snapshot.project_id, snapshot.release_id, snapshot.checksum)
    index = _index_cache.get(key)
    if index is None:
        entries = snapshot.documents.get("label_index", {}).get("entries", [])
        vectors = snapshot.documents.get("label_embeddings")
        if vectors is None or len(entries) == 0:
            vectors = np.zeros((0, 384), dtype=np.float32)
        index = WeaverIndex(
            label_ids=tuple(e["label_id"] for e in entries),
            label_status=tuple(e["status"] for e in entries),
            label_vectors=np.asarray(vectors, dtype=np.float32),
            classifier=classifier_from_documents(snapshot.documents),
            view=runtime.taxonomy,
            parents={lid: rec.parent for lid, rec in runtime.taxonomy.labels.items()},
        )
        if len(_index_cache) > 32:
            _index_cache.clear()
        _index_cache[key] = index
        from inference.steps.info import info_warm_up

        info_warm_up(snapshot)  # once per release and process: Info answers then never embed on the hot path
    return index
