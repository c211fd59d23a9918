"""The distilled label classifier of the Context Weaver (ARG §2.3, "distilled-first" hot path).

Trained offline **as part of each release** (a publish hook) on the validated examples of the
release's ACTIVE labels — plus each label's index text — embedded with the release's encoder (its
fine-tuned MiniLM when it has one, see ``inference.learning.encoder_finetune``; the platform embedder
otherwise): a multinomial logistic regression (softmax) with L2 regularisation fitted by L-BFGS,
deterministic for a given release. At request time it is one matrix-vector product over the prompt
embedding. A fit is a pure function of its inputs, so the last few are kept by a digest of them: a
release (or replay's shadow release) whose training set did not change — a changeset that adds a
SHADOW label or rewrites a node — reuses its parent's fit instead of running L-BFGS again.

A taxonomy too large for the softmax fit to stay cheap (classes × examples above ``SOFTMAX_BUDGET``,
e.g. a 100k-node synthetic release with 5,000 labels of 3 examples) gets a *prototype* classifier
instead: one unit-norm centroid per class (its label index vector and at most ``PROTOTYPE_EXAMPLES``
example vectors in total), probabilities ``softmax(PROTOTYPE_SCALE · cosine)`` — the same
matrix-vector product at request time, built in a few seconds.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

OOS_CLASS = "oos"
SOFTMAX_BUDGET = 5_000_000  # classes × training texts: CLINC150 is 151 × 15,250 ≈ 2.3M (≈ 15 s of L-BFGS)
PROTOTYPE_EXAMPLES = 2_000  # example texts embedded, at most, for a prototype classifier
PROTOTYPE_SCALE = 20.0
FROZEN_L2 = 1e-3  # softmax regularisation over the frozen embedder's vectors
FINETUNED_L2 = 3.31e-3  # … over a fine-tuned encoder's vectors (docs/research/label-classifier.md)
MATRIX_W = "label_classifier_w"
MATRIX_B = "label_classifier_b"
DOCUMENT = "label_classifier"
FITS_KEPT = 8

_fits: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()
_fits_lock = threading.Lock()


@dataclass(frozen=True, eq=False)
class LabelClassifier:
    """Softmax regression over label classes (LabelIDs, and ``oos`` when out-of-scope examples exist)."""

    classes: tuple[str, ...]
    weights: np.ndarray  # (classes, dim)
    bias: np.ndarray  # (classes,)

    def probabilities(self, vector: np.ndarray) -> np.ndarray:
        return softmax(self.weights @ vector + self.bias)

    def probabilities_batch(self, vectors: np.ndarray) -> np.ndarray:
        return softmax(vectors @ self.weights.T + self.bias, axis=1)


def fit_softmax(
    x: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    *,
    l2: float = 1e-3,
    max_iter: int = 300,
    scale: float = 10.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Fit W, b minimizing mean cross-entropy + l2·|W|² (L-BFGS, zero start → deterministic).

    ``scale`` multiplies the unit-norm inputs so the optimiser reaches confident logits quickly.
    """
    xs = (x * scale).astype(np.float64)
    n, d = xs.shape
    onehot = np.zeros((n, n_classes))
    onehot[np.arange(n), y] = 1.0

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w = theta[: n_classes * d].reshape(n_classes, d)
        b = theta[n_classes * d :]
        logits = xs @ w.T + b
        lse = logsumexp(logits, axis=1)
        value = float(np.mean(lse - np.sum(logits * onehot, axis=1)) + l2 * np.sum(w * w))
        p = np.exp(logits - lse[:, None])
        g = (p - onehot) / n
        grad_w = g.T @ xs + 2 * l2 * w
        grad_b = g.sum(axis=0)
        return value, np.concatenate([grad_w.ravel(), grad_b])

    theta0 = np.zeros(n_classes * d + n_classes)
    result = minimize(loss, theta0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    w = result.x[: n_classes * d].reshape(n_classes, d) * scale
    b = result.x[n_classes * d :]
    return w.astype(np.float32), b.astype(np.float32)


def training_set(documents: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(texts, classes) from the release: examples + index text of ACTIVE labels, and ``oos`` examples
    from OutOfScope handling if the release carries them (``documents["oos_examples"]``)."""
    texts: list[str] = []
    classes: list[str] = []
    index_text = {e["label_id"]: e["text"] for e in documents.get("label_index", {}).get("entries", [])}
    for label in documents.get("labels", []):
        if label.get("status") != "ACTIVE":
            continue
        for text in [*label.get("examples", []), index_text.get(label["id"], "")]:
            if text:
                texts.append(text)
                classes.append(label["id"])
    for text in documents.get("oos_examples", []):
        texts.append(text)
        classes.append(OOS_CLASS)
    return texts, classes


def train_label_classifier(
    documents: dict[str, Any], embedder: Any
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The publish hook: returns the classifier's matrices and its document for the release bundle.

    ``embedder`` is the release's encoder (fine-tuned or not), so the classifier reads the same
    vector space as the label index, the node embeddings and the prompt at request time.
    """
    texts, classes = training_set(documents)
    if not texts:
        return {}, {DOCUMENT: {"classes": [], "trained_on": 0}}
    labels = tuple(sorted(set(classes)))
    if len(labels) * len(texts) > SOFTMAX_BUDGET:
        return _prototype_classifier(documents, labels, embedder)
    index = {c: i for i, c in enumerate(labels)}
    y = np.array([index[c] for c in classes])
    x = embedder.embed(texts)
    l2 = FINETUNED_L2 if documents.get("release_encoder") else FROZEN_L2
    if len(labels) == 1:
        w = np.zeros((1, x.shape[1]), dtype=np.float32)
        b = np.zeros(1, dtype=np.float32)
    else:
        w, b = _fit_memoized(x, y, len(labels), l2)
    return {MATRIX_W: w, MATRIX_B: b}, {
        DOCUMENT: {"classes": list(labels), "trained_on": len(texts), "kind": "softmax", "l2": l2}
    }


def _fit_memoized(x: np.ndarray, y: np.ndarray, n_classes: int, l2: float) -> tuple[np.ndarray, np.ndarray]:
    """``fit_softmax``, or the fit of the same inputs done a moment ago (the last ``FITS_KEPT``)."""
    digest = hashlib.sha256()
    for part in (np.ascontiguousarray(x, dtype=np.float32), np.ascontiguousarray(y, dtype=np.int64)):
        digest.update(f"{part.shape}|".encode())
        digest.update(part.tobytes())
    digest.update(f"{n_classes}|{l2!r}".encode())
    key = digest.hexdigest()
    with _fits_lock:
        if key in _fits:
            _fits.move_to_end(key)
            return _fits[key]
    fitted = fit_softmax(x, y, n_classes, l2=l2)
    with _fits_lock:
        _fits[key] = fitted
        while len(_fits) > FITS_KEPT:
            _fits.popitem(last=False)
    return fitted


def _prototype_classifier(
    documents: dict[str, Any], labels: tuple[str, ...], embedder: Any
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Centroid per class from its label index text and a bounded share of its examples."""
    index_text = {e["label_id"]: e["text"] for e in documents.get("label_index", {}).get("entries", [])}
    per_class = PROTOTYPE_EXAMPLES // len(labels)
    texts: list[str] = []
    owner: list[int] = []
    examples: dict[str, list[str]] = {c: [] for c in labels}
    for label in documents.get("labels", []):
        if label.get("status") == "ACTIVE" and label["id"] in examples:
            examples[label["id"]] = list(label.get("examples", []))
    if OOS_CLASS in examples:
        examples[OOS_CLASS] = list(documents.get("oos_examples", []))
    for k, c in enumerate(labels):
        chosen = [index_text[c]] if index_text.get(c) else []
        chosen += examples[c][: per_class if chosen else max(1, per_class)]
        texts.extend(chosen)
        owner.extend([k] * len(chosen))
    x = embedder.embed(texts)
    sums = np.zeros((len(labels), x.shape[1]), dtype=np.float64)
    np.add.at(sums, np.array(owner), x)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    w = (PROTOTYPE_SCALE * sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    b = np.zeros(len(labels), dtype=np.float32)
    return {MATRIX_W: w, MATRIX_B: b}, {
        DOCUMENT: {"classes": list(labels), "trained_on": len(texts), "kind": "prototype"}
    }


def classifier_from_documents(documents: Any) -> LabelClassifier | None:
    meta = documents.get(DOCUMENT)
    w = documents.get(f"matrix:{MATRIX_W}")
    b = documents.get(f"matrix:{MATRIX_B}")
    if not meta or not meta.get("classes") or w is None or b is None:
        return None
    return LabelClassifier(classes=tuple(meta["classes"]), weights=np.asarray(w), bias=np.asarray(b))
