"""The ask threshold of a release: below it a request is asked about, not answered (a publish hook).

Terms:

* the **confidence** of a request is the Context Weaver's ``confidence_global``: the classifier's top
  probability ``p1``, lowered when the margin ``p1 − p2`` is under ``WeaverParams.low_margin``
  (``confidence_of`` repeats the weaver's formula);
* the **held-out predictions** are the release's own training texts (validated examples and index
  text of its ACTIVE labels, and its ``oos`` examples), each predicted by a classifier fitted on the
  other folds: ``FOLDS``-fold cross-validation, a text's fold being its rank within its label modulo
  ``FOLDS`` (deterministic; a label with a single text is trained on, never held out). A held-out
  prediction is **right** when its top in-scope label is its own label (an ``oos`` text is never right:
  answering it is the error);
* the **ask threshold** is where answering stops being more often wrong than right: the held-out
  predictions are grouped in confidence bands ``BAND`` wide, and the threshold is the upper edge of
  the highest band (of at least ``MIN_BAND`` predictions) whose predictions are right less than
  ``BREAK_EVEN`` of the time — asking costs the user one turn, a wrong answer costs more. It is
  clipped to [``FLOOR``, ``CAP``]: the floor is the landing's platform safety net, the cap keeps a
  release whose examples are hard from asking about everything.

The hook stores ``documents["low_confidence"]``: the threshold, how it was found (``"cross_validation"``,
or ``"default"`` when the release is too small or too large to cross-validate at publication) and the
held-out figures curators see on the release page (held-out count, accuracy, precision at the
threshold, share of held-out in-scope texts that would be asked about). The landing step reads the
threshold (``inference.steps.landing.ask_threshold``).

It also stores the **curve** of the trade-off, ``curve``: for each threshold of a grid (``CURVE_STEP``
apart, from 0 to ``CURVE_TOP``), the **coverage** (share of held-out in-scope texts answered: their
confidence is at least the threshold), the **precision** (share of the answered in-scope texts that are
right; ``None`` when none is answered) and, when the release holds ``oos`` examples out, the **OOS
recall** (share of held-out ``oos`` texts asked about instead of answered). A curator moving the
operating point along it (``ontology.ask_threshold``) sees what it costs.

The held-out texts were seen by a fine-tuned release encoder (``encoder_finetune``), so on such a
release the figures are optimistic: the threshold is then a lower bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from inference.learning.classifier import (
    FINETUNED_L2,
    FROZEN_L2,
    OOS_CLASS,
    SOFTMAX_BUDGET,
    fit_softmax,
    training_set,
)

DOCUMENT = "low_confidence"
FOLDS = 3
BAND = 0.1  # width of a confidence band
BREAK_EVEN = 0.5  # a band whose held-out answers are right less often than this is asked about
MIN_BAND = 5  # a band with fewer held-out predictions does not move the threshold
FLOOR = 0.2  # the landing's platform safety net (``inference.steps.landing.DEFAULT_MIN_CONFIDENCE``)
CAP = 0.6
LOW_MARGIN = 0.15  # ``WeaverParams.low_margin``: the weaver's confidence formula
MIN_HELD_OUT = 20  # fewer held-out in-scope predictions than this: no calibration, the default applies
CV_MAX_ITER = 150  # L-BFGS iterations per fold (the release's own fit runs 300)
# classes × texts above this: not cross-validated at publication (the default applies). The demo is
# ~0.07M; CLINC150 (2.3M) would re-embed 15k texts and fit three more times, minutes on two cores
CV_BUDGET = SOFTMAX_BUDGET // 5
CURVE_STEP = 0.05  # the curve's thresholds: 0, 0.05, … CURVE_TOP (20 points)
CURVE_TOP = 0.95


def confidence_of(probabilities: np.ndarray, in_scope: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(confidence, top in-scope class index) of each row, as the weaver computes ``confidence_global``."""
    p = np.where(in_scope[None, :], probabilities, -1.0)
    order = np.argsort(-p, axis=1, kind="stable")
    top = order[:, 0]
    p1 = p[np.arange(len(p)), top]
    p2 = np.maximum(p[np.arange(len(p)), order[:, 1]], 0.0) if p.shape[1] > 1 else np.zeros(len(p))
    confidence = p1 * (1.0 - 0.5 * np.maximum(0.0, LOW_MARGIN - (p1 - p2)))
    return np.clip(confidence, 0.0, 1.0), top


def threshold_for(confidence: np.ndarray, right: np.ndarray) -> float:
    """The lowest band edge (``BAND`` wide, from ``FLOOR``) from which every band of at least
    ``MIN_BAND`` held-out predictions is right at least ``BREAK_EVEN`` of the time; at most ``CAP``."""
    bands = np.minimum((confidence / BAND).astype(int), round(1 / BAND) - 1)
    threshold = FLOOR
    for band in range(round(1 / BAND)):
        members = bands == band
        edge = round((band + 1) * BAND, 2)
        if members.sum() >= MIN_BAND and right[members].mean() < BREAK_EVEN and edge > threshold:
            threshold = edge
    return min(threshold, CAP)


def reliability(confidence: np.ndarray, right: np.ndarray) -> list[dict[str, Any]]:
    """Held-out predictions by confidence band of 0.1: ``{"from", "count", "right"}`` (right: a share)."""
    bands = np.minimum((confidence * 10).astype(int), 9)
    out = []
    for band in range(10):
        members = bands == band
        if members.any():
            out.append(
                {
                    "from": band / 10,
                    "count": int(members.sum()),
                    "right": round(float(right[members].mean()), 4),
                }
            )
    return out


def trade_off_curve(confidence: np.ndarray, right: np.ndarray, in_scope: np.ndarray) -> list[dict[str, Any]]:
    """The curve (module docstring) of held-out predictions: ``{"threshold", "coverage", "precision",
    "oos_recall"}`` per grid threshold; ``oos_recall`` only when ``in_scope`` has a False."""
    oos = ~in_scope
    out = []
    for step in range(round(CURVE_TOP / CURVE_STEP) + 1):
        threshold = round(step * CURVE_STEP, 2)
        answered = in_scope & (confidence >= threshold)
        point: dict[str, Any] = {
            "threshold": threshold,
            "coverage": round(float(answered.sum() / max(int(in_scope.sum()), 1)), 4),
            "precision": round(float(right[answered].mean()), 4) if answered.any() else None,
        }
        if oos.any():
            point["oos_recall"] = round(float((confidence[oos] < threshold).mean()), 4)
        out.append(point)
    return out


def _default(reason: str, **figures: Any) -> dict[str, Any]:
    return {DOCUMENT: {"threshold": FLOOR, "method": "default", "reason": reason, **figures}}


def calibrate_ask_threshold(
    documents: dict[str, Any], embedder: Any
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The publish hook: ``documents["low_confidence"]`` of the release (module docstring)."""
    texts, classes = training_set(documents)
    labels = tuple(sorted(set(classes)))
    in_scope_labels = [c for c in labels if c != OOS_CLASS]
    if len(in_scope_labels) < 2:
        return {}, _default("fewer than two labels")
    if len(labels) * len(texts) > CV_BUDGET:
        return {}, _default("too many examples to cross-validate at publication")
    index = {c: i for i, c in enumerate(labels)}
    y = np.array([index[c] for c in classes])
    seen: dict[str, int] = {}
    fold = np.empty(len(classes), dtype=np.int64)
    count = {c: classes.count(c) for c in labels}
    for i, c in enumerate(classes):
        rank = seen.get(c, 0)
        seen[c] = rank + 1
        fold[i] = rank % FOLDS if count[c] > 1 else -1  # a single text is always trained on
    if int((fold >= 0).sum()) < MIN_HELD_OUT:
        return {}, _default("too few examples to hold any out", held_out=int((fold >= 0).sum()))
    x = embedder.embed(texts)
    l2 = FINETUNED_L2 if documents.get("release_encoder") else FROZEN_L2
    in_scope = np.array([c != OOS_CLASS for c in labels])
    confidence = np.zeros(len(texts))
    right = np.zeros(len(texts), dtype=bool)
    for k in range(FOLDS):
        test = fold == k
        if not test.any():
            continue
        w, b = fit_softmax(x[~test], y[~test], len(labels), l2=l2, max_iter=CV_MAX_ITER)
        logits = x[test] @ w.T + b
        probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        conf, top = confidence_of(probabilities, in_scope)
        confidence[test] = conf
        right[test] = (top == y[test]) & in_scope[y[test]]
    held = fold >= 0
    held_in_scope = held & in_scope[y]
    threshold = threshold_for(confidence[held], right[held])
    answered = held & (confidence >= threshold)
    return {}, {
        DOCUMENT: {
            "threshold": threshold,
            "method": "cross_validation",
            "folds": FOLDS,
            "break_even": BREAK_EVEN,
            "held_out": int(held.sum()),
            "held_out_in_scope": int(held_in_scope.sum()),
            "accuracy": round(float(right[held_in_scope].mean()), 4),
            "precision_at_threshold": round(float(right[answered].mean()), 4) if answered.any() else None,
            "asked_share": round(float((confidence[held_in_scope] < threshold).mean()), 4),
            "reliability": reliability(confidence[held], right[held]),
            "curve": trade_off_curve(confidence[held], right[held], in_scope[y[held]]),
        }
    }
