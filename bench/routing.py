"""The routing benchmark (EVALUATION.md): the project's pipeline beside four baselines, same run.

Protocol: TRAIN builds the knowledge pack (``routing_pack``), imported through the platform's own
import path and published as a release (which fine-tunes the release encoder when TRAIN is large
enough, then trains the distilled classifier); thresholds — the pipeline's Context Weaver OOD
threshold and each baseline's abstention threshold — are chosen on VAL only, by one rule for every
method (``calibrate``: the best VAL in-scope accuracy with VAL OOS recall ≥ 0.76 and, when TRAIN's
intents come in two or more domains, the same recall on *unseen-domain* queries, ``domain_hold_outs``);
EVAL is only measured. The pipeline run is ``inference.pipeline.run_inference``, the code the API
runs. Baselines on the platform's frozen all-MiniLM-L6-v2 embeddings: 1-NN cosine, class centroid,
logistic regression (softmax, ``oos`` as a class when TRAIN has oos examples), BM25 top-1.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

OOS = "oos"


@dataclass(frozen=True)
class Scores:
    in_scope_acc: float
    oos_recall: float
    oos_precision: float


def score(gold: Sequence[str], predicted: Sequence[str]) -> Scores:
    gold_a, pred_a = np.array(gold), np.array(predicted)
    ins = gold_a != OOS
    in_acc = float(np.mean(pred_a[ins] == gold_a[ins])) if ins.any() else 0.0
    oos = ~ins
    recall = float(np.mean(pred_a[oos] == OOS)) if oos.any() else 0.0
    said_oos = pred_a == OOS
    precision = float(np.mean(gold_a[said_oos] == OOS)) if said_oos.any() else 0.0
    return Scores(in_acc * 100, recall * 100, precision * 100)


@dataclass(frozen=True)
class Detection:
    """How well a method's confidence separates in-scope from out-of-scope requests, at any threshold.

    * ``auroc`` — the probability that a random in-scope request gets a higher confidence than a random
      out-of-scope one (ties count one half), in percent: 50 is chance, 100 perfect separation;
    * ``fpr_at_95`` — the share of out-of-scope requests accepted at the highest threshold that keeps
      95 % of the in-scope requests (a request is accepted when its confidence is ≥ the threshold), in
      percent: lower is better;
    * ``in_scope_at_recall`` — the in-scope accuracy at the lowest threshold whose out-of-scope recall
      reaches ``FIXED_OOS_RECALL`` (a request is correct when it is accepted and routed right), in percent.

    An out-of-scope verdict the method gives outright (its own ``oos`` class) counts as the lowest
    confidence. The figures are ``None`` when the split has no in-scope or no out-of-scope request.
    """

    auroc: float | None
    fpr_at_95: float | None
    in_scope_at_recall: float | None = None


FIXED_OOS_RECALL = 0.70  # the OOS recall at which in-scope accuracy is reported (the routing goal's floor)


def detection(confidence: np.ndarray, best: Sequence[str], gold: Sequence[str]) -> Detection:
    """The threshold-free OOS figures of one method on one split (see ``Detection``); ``best`` is the
    method's answer without any abstention threshold."""
    best_a = np.array(best)
    conf = np.where(best_a == OOS, -np.inf, np.asarray(confidence, dtype=np.float64))
    gold_a = np.array(gold)
    ins = gold_a != OOS
    pos, neg = conf[ins], conf[~ins]
    if pos.size == 0 or neg.size == 0:
        return Detection(None, None)
    order = np.sort(neg)
    # the lowest threshold (a request is rejected below it) whose OOS recall reaches the fixed recall
    cut = np.nextafter(order[int(np.ceil(FIXED_OOS_RECALL * neg.size)) - 1], np.inf)
    in_scope_at_recall = float(np.mean((best_a[ins] == gold_a[ins]) & (pos >= cut)))
    # Mann-Whitney: P(in-scope > out-of-scope) + ½ P(tie)
    below = np.searchsorted(order, pos, side="left")
    ties = np.searchsorted(order, pos, side="right") - below
    auroc = float((below + 0.5 * ties).sum() / (pos.size * neg.size))
    kept = int(np.ceil(0.95 * pos.size))  # in-scope requests the threshold must keep
    threshold = np.sort(pos)[::-1][kept - 1]
    fpr = float(np.mean(neg >= threshold))
    return Detection(auroc * 100, fpr * 100, in_scope_at_recall * 100)


VAL_OOS_RECALL = 0.76  # the threshold rule's recall floor on VAL (docs/research/label-classifier.md)


def calibrate(
    confidence: np.ndarray,
    best: Sequence[str],
    gold: Sequence[str],
    *,
    min_oos_recall: float = VAL_OOS_RECALL,
    unseen: np.ndarray | None = None,
) -> float:
    """The abstention threshold on VAL: predict ``oos`` below it.

    The rule: the best VAL in-scope accuracy among the thresholds whose VAL OOS recall is at least
    ``min_oos_recall`` (ties → the higher recall, then the lower threshold); when none reaches it, the
    highest recall (then the best in-scope accuracy). Every method of the benchmark uses this rule.

    ``unseen`` (``unseen_confidence``): the confidences of VAL queries whose domain the method was
    fitted without. When VAL has out-of-scope queries and ``unseen`` is given, the recall the rule reads
    is the lower of the two: VAL's own OOS recall and the share of ``unseen`` below the threshold. VAL's
    out-of-scope queries are few and come from the same collection as TRAIN's; the unseen-domain ones
    are many, and no threshold can learn their shape from TRAIN.
    """
    conf = np.asarray(confidence, dtype=np.float64)
    gold_a, best_a = np.array(gold), np.array(best)
    ins, oos = gold_a != OOS, gold_a == OOS
    right = best_a == gold_a  # correct when not abstaining (in scope) …
    said_oos = best_a == OOS  # … and out of scope whatever the threshold
    values = conf if unseen is None else np.concatenate([conf, np.asarray(unseen, dtype=np.float64)])
    candidates = np.concatenate([[-np.inf], np.unique(np.round(values[np.isfinite(values)], 4))])
    below = conf[None, :] < candidates[:, None]  # (thresholds, items): abstains
    in_acc = (right[None, ins] & ~below[:, ins]).mean(axis=1) if ins.any() else np.zeros(len(candidates))
    recall = (below[:, oos] | said_oos[None, oos]).mean(axis=1) if oos.any() else np.zeros(len(candidates))
    if oos.any() and unseen is not None and len(unseen):
        recall = np.minimum(recall, unseen_recall(unseen, candidates))
    ok = recall >= min_oos_recall - 1e-12
    if ok.any():
        keys = np.lexsort((candidates, -recall, -np.where(ok, in_acc, -1.0)))
    else:
        keys = np.lexsort((candidates, -in_acc, -recall))
    return float(candidates[keys[0]])


def unseen_recall(unseen: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """For each threshold, the share of ``unseen`` confidences below it (``-inf``: the method's own
    out-of-scope verdict, below every threshold)."""
    ordered = np.sort(np.asarray(unseen, dtype=np.float64))
    below = np.searchsorted(ordered, thresholds, side="left")
    below = np.maximum(below, int(np.isneginf(ordered).sum()))  # own verdicts: below -inf too
    return below / max(len(ordered), 1)


def domain_hold_outs(
    domains: Mapping[str, Sequence[str]] | None, gold: Sequence[str]
) -> list[tuple[frozenset[str], np.ndarray]]:
    """The unseen-domain protocol on VAL: for each domain of TRAIN's intents that has VAL queries, the
    intents to fit without and the VAL rows (indices into ``gold``) of those intents. Empty when the
    intents come in fewer than two domains (nothing is left to fit on)."""
    gold_a = np.array(gold)
    named = {name: frozenset(intents) for name, intents in (domains or {}).items() if intents}
    if len(named) < 2:
        return []
    out = []
    for name in sorted(named):
        rows = np.flatnonzero(np.isin(gold_a, sorted(named[name])))
        if rows.size:
            out.append((named[name], rows))
    return out


def unseen_confidence(
    hold_outs: Sequence[tuple[frozenset[str], np.ndarray]],
    score_without: Callable[[frozenset[str], np.ndarray], np.ndarray],
) -> np.ndarray:
    """The confidences of VAL queries, each given by the method fitted without its domain:
    ``score_without(held intents, VAL rows)`` returns one confidence per row (``-inf`` for its own out-of-
    scope verdict). These queries are in scope for the release but out of scope for what scored them:
    a sample of out-of-scope queries many times larger than VAL's and of a shape no threshold saw."""
    parts = [np.asarray(score_without(held, rows), dtype=np.float64) for held, rows in hold_outs]
    return np.concatenate(parts) if parts else np.zeros(0)


def apply_threshold(confidence: np.ndarray, best: Sequence[str], threshold: float) -> list[str]:
    return [OOS if c < threshold else b for c, b in zip(confidence, best, strict=True)]


@dataclass(frozen=True)
class Baseline:
    name: str
    predict: Callable[
        [np.ndarray, list[str]], tuple[list[str], np.ndarray]
    ]  # (vectors, texts) → (best, conf)


def baselines(train_x: np.ndarray, train_y: list[str], train_texts: list[str]) -> list[Baseline]:
    from rank_bm25 import BM25Okapi

    from inference.learning.classifier import fit_softmax
    from inference.steps.envelope import matching_tokens

    labels = sorted(set(train_y))
    index = {c: i for i, c in enumerate(labels)}
    y = np.array([index[c] for c in train_y])
    in_scope = [c for c in labels if c != OOS]
    in_idx = np.array([index[c] for c in in_scope])
    centroids = np.stack([train_x[y == index[c]].mean(axis=0) for c in in_scope])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    w, b = fit_softmax(train_x, y, len(labels))
    docs: dict[str, list[str]] = {c: [] for c in in_scope}
    for text, c in zip(train_texts, train_y, strict=True):
        if c != OOS:
            docs[c].extend(matching_tokens(text))
    bm25 = BM25Okapi([docs[c] for c in in_scope])
    in_mask = np.array([c != OOS for c in train_y])
    in_x, in_y = train_x[in_mask], [c for c in train_y if c != OOS]

    def nearest(vectors: np.ndarray, _texts: list[str]) -> tuple[list[str], np.ndarray]:
        sims = vectors @ in_x.T
        j = sims.argmax(axis=1)
        return [in_y[k] for k in j], sims[np.arange(len(j)), j]

    def centroid(vectors: np.ndarray, _texts: list[str]) -> tuple[list[str], np.ndarray]:
        sims = vectors @ centroids.T
        j = sims.argmax(axis=1)
        return [in_scope[k] for k in j], sims[np.arange(len(j)), j]

    def logreg(vectors: np.ndarray, _texts: list[str]) -> tuple[list[str], np.ndarray]:
        logits = vectors @ w.T + b
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        j = p.argmax(axis=1)
        best = [labels[k] for k in j]
        conf = p[np.arange(len(j)), j]
        return best, np.where(np.array(best) == OOS, -1.0, conf)

    def bm25_top1(_vectors: np.ndarray, texts: list[str]) -> tuple[list[str], np.ndarray]:
        best, conf = [], []
        for text in texts:
            s = bm25.get_scores(list(matching_tokens(text)))
            j = int(np.argmax(s))
            best.append(in_scope[j])
            conf.append(float(s[j]))
        return best, np.array(conf)

    _ = in_idx
    return [
        Baseline("1-NN cosine", nearest),
        Baseline("class centroid", centroid),
        Baseline("logistic regression", logreg),
        Baseline("BM25 top-1", bm25_top1),
    ]


@dataclass
class PipelineRun:
    best: list[str]
    confidence: np.ndarray
    abstained: np.ndarray
    latencies_ms: list[float]


def run_pipeline(
    project: object,
    texts: list[str],
    node_to_intent: dict[str, str],
    *,
    weaver_params: object | None = None,
    landing_params: object | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> PipelineRun:
    """The API's own pipeline over every text (no HTTP): landing node → intent, or abstention."""
    from inference.contracts import OutcomeKind, RequestContext
    from inference.pipeline import InferenceRequest, RoutingParams, run_inference
    from inference.steps.landing import LandingParams
    from inference.steps.weaver import WeaverParams

    params = RoutingParams(
        weaver=weaver_params if weaver_params is not None else WeaverParams(),  # type: ignore[arg-type]
        landing=landing_params if landing_params is not None else LandingParams(),  # type: ignore[arg-type]
    )

    best, conf, abstained, lat = [], [], [], []
    for i, text in enumerate(texts):
        started = time.perf_counter()
        result = run_inference(
            InferenceRequest(
                request_id=uuid.uuid4().hex,
                project=project,
                prompt=text,
                context=RequestContext(),
            ),
            params=params,
        )
        lat.append((time.perf_counter() - started) * 1000)
        landing = result.landing
        oos = (
            result.outcome is None
            or result.outcome.kind in (OutcomeKind.OUT_OF_SCOPE, OutcomeKind.REFUSE, OutcomeKind.REFOCUS)
            or landing is None
            or landing.node_start is None
            or landing.abstained
        )
        node = landing.node_start if landing is not None else None
        best.append(OOS if oos else node_to_intent.get(node or "", OOS))
        conf.append(result.weaver.confidence if result.weaver else 0.0)
        abstained.append(oos)
        if progress is not None:
            progress(i + 1, len(texts))
    return PipelineRun(best, np.array(conf), np.array(abstained), lat)


def with_params(params: object, **changes: float) -> object:
    return replace(params, **changes)  # type: ignore[type-var]
