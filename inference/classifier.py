"""The distilled label classifier of the Context Weaver (ARG §2.3, "distilled-first" hot path).

Trained offline **as part of each release** (a publish hook) on the validated examples of the
release's ACTIVE labels — plus each label's index text — embedded with the platform embedder: a
multinomial logistic regression (softmax) with L2 regularisation fitted by L-BFGS, deterministic for
a given release. At request time it is one matrix-vector product over the prompt embedding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

OOS_CLASS = "oos"
MATRIX_W = "label_classifier_w"
MATRIX_B = "label_classifier_b"
DOCUMENT = "label_classifier"


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
    """The publish hook: returns the classifier's matrices and its document for the release bundle."""
    texts, classes = training_set(documents)
    if not texts:
        return {}, {DOCUMENT: {"classes": [], "trained_on": 0}}
    labels = tuple(sorted(set(classes)))
    index = {c: i for i, c in enumerate(labels)}
    y = np.array([index[c] for c in classes])
    x = embedder.embed(texts)
    if len(labels) == 1:
        w = np.zeros((1, x.shape[1]), dtype=np.float32)
        b = np.zeros(1, dtype=np.float32)
    else:
        w, b = fit_softmax(x, y, len(labels))
    return {MATRIX_W: w, MATRIX_B: b}, {DOCUMENT: {"classes": list(labels), "trained_on": len(texts)}}


def classifier_from_documents(documents: Any) -> LabelClassifier | None:
    meta = documents.get(DOCUMENT)
    w = documents.get(f"matrix:{MATRIX_W}")
    b = documents.get(f"matrix:{MATRIX_B}")
    if not meta or not meta.get("classes") or w is None or b is None:
        return None
    return LabelClassifier(classes=tuple(meta["classes"]), weights=np.asarray(w), bias=np.asarray(b))
