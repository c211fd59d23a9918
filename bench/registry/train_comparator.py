"""Train the comparator's learned grey-zone model on the *development* pairs only.

``python -m bench.registry.train_comparator`` (Django settings loaded by ``manage.py shell -c`` or the
``DJANGO_SETTINGS_MODULE`` environment) reads ``DEV_FILES``, simulates the registry's decision on each
pair exactly as ``bench_registry`` reaches it (canonicalize both facts, cosine of the MiniLM embeddings
of the canonical statements, ``compare(b, a)``), and fits a logistic regression (numpy Newton steps,
L2-penalized, standardized features: deterministic) on the pairs the rules leave open — no hard
discriminator fired and the cosine is in the grey zone. The two thresholds are then chosen on the
pooled development decisions: ``same`` is the lowest probability that keeps the development false-merge
rate at or under ``TARGET_DEV_FMR`` (a margin under the 2 % goal, since held-out data does worse),
``new`` the highest that sends at most ``MAX_SAME_TO_NEW`` of the open same-pairs to NEW. The weights
go to ``memory/resources/comparator_model.json`` with the sha256 of every file they were trained on.

Held-out files (``pairs_v4_heldout.json`` and later) are never read here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory.pairs import RESOURCES_DIR, pairs_load

ROOT = Path(__file__).resolve().parents[2]
DEV_FILES = (
    "pairs_v1_tuning.json",
    "pairs_v1_heldout.json",
    "pairs_v2_heldout.json",
    "pairs_v3_heldout.json",
)
MODEL_PATH = RESOURCES_DIR / "comparator_model.json"
TARGET_DEV_FMR = 0.005
MAX_SAME_TO_NEW = 0.02
L2 = 1.0


@dataclass(frozen=True)
class Row:
    file: str
    same: bool
    cosine: float
    hard: bool
    features: tuple[float, ...]
    rule_verdict: str


def rows_build(files: tuple[str, ...] = DEV_FILES) -> list[Row]:
    from arg_platform.embedder import get_embedder
    from memory.canonical import canonicalize, classify_info_type
    from memory.comparator import FEATURE_NAMES, RULES_ONLY, compare, discriminators, pair_features

    if any("heldout" in f and f.split("_")[1] not in ("v1", "v2", "v3") for f in files):
        raise ValueError("held-out files are not training data")
    embedder = get_embedder()
    out = []
    for name in files:
        for pair in pairs_load(RESOURCES_DIR / name):
            info_type = pair.info_type or classify_info_type(pair.a)
            first, second = (
                canonicalize(pair.a, info_type=info_type),
                canonicalize(pair.b, info_type=info_type),
            )
            va, vb = embedder.embed([first.statement, second.statement])
            cosine = float(np.dot(va, vb))
            hard, _, _ = discriminators(second, first)
            features = pair_features(second, first, cosine)
            out.append(
                Row(
                    name,
                    pair.same,
                    cosine,
                    bool(hard),
                    tuple(features[n] for n in FEATURE_NAMES),
                    compare(second, first, cosine, RULES_ONLY).verdict,
                )
            )
    return out


def fit(x: np.ndarray, y: np.ndarray, l2: float = L2) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(mean, scale, weights, bias) of an L2-penalized logistic regression by Newton's method."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.eye(z.shape[1]) * l2
    penalty[-1, -1] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-z @ w))
        gradient = z.T @ (p - y) + penalty @ w
        hessian = z.T @ (z * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return mean, scale, w[:-1], float(w[-1])


def probability(
    x: np.ndarray, mean: np.ndarray, scale: np.ndarray, weights: np.ndarray, bias: float
) -> np.ndarray:
    return 1 / (1 + np.exp(-(((x - mean) / scale) @ weights + bias)))


def open_rows(rows: list[Row], grey: float) -> list[Row]:
    return [r for r in rows if not r.hard and r.cosine >= grey]


def decide(rows: list[Row], p: dict[int, float], same: float, new: float) -> list[str]:
    """The pipeline's verdict per row: hard or below grey → DIFFERENT, else the model's three-way."""
    out = []
    for i, _ in enumerate(rows):
        if i not in p:
            out.append("DIFFERENT")
        else:
            out.append("SAME" if p[i] >= same else "DIFFERENT" if p[i] < new else "UNSURE")
    return out


def scores(rows: list[Row], verdicts: list[str]) -> tuple[float, float, float, int, int]:
    matches = [r for r, v in zip(rows, verdicts, strict=True) if v == "SAME"]
    false = sum(1 for r in matches if not r.same)
    same = sum(1 for r in rows if r.same)
    fmr = false / len(matches) if matches else 0.0
    recall = sum(1 for r in matches if r.same) / same if same else 0.0
    unsure = sum(1 for v in verdicts if v == "UNSURE") / len(rows)
    return fmr, recall, unsure, len(matches), false


def thresholds(rows: list[Row], p: dict[int, float]) -> tuple[float, float]:
    candidates = sorted(set(p.values()))
    same = 1.0
    for t in reversed(candidates):  # lower the bar while the development FMR stays at or under target
        fmr, _, _, _, _ = scores(rows, decide(rows, p, t, 0.0))
        if fmr > TARGET_DEV_FMR:
            break
        same = t
    open_same = sorted(v for i, v in p.items() if rows[i].same)
    new = open_same[int(MAX_SAME_TO_NEW * len(open_same))] if open_same else 0.0
    return same, min(new, same)


def train(rows: list[Row], grey: float) -> dict:
    index = [i for i, r in enumerate(rows) if not r.hard and r.cosine >= grey]
    x = np.array([rows[i].features for i in index])
    y = np.array([float(rows[i].same) for i in index])
    mean, scale, weights, bias = fit(x, y)
    p = dict(zip(index, probability(x, mean, scale, weights, bias).tolist(), strict=True))
    same, new = thresholds(rows, p)
    return {"mean": mean, "scale": scale, "weights": weights, "bias": bias, "same": same, "new": new, "p": p}


def report(rows: list[Row], grey: float, say=print) -> dict:
    files = sorted({r.file for r in rows})
    say("leave-one-file-out (train on the other development files, thresholds included):")
    for held in files:
        train_rows = [r for r in rows if r.file != held]
        test_rows = [r for r in rows if r.file == held]
        model = train(train_rows, grey)
        index = [i for i, r in enumerate(test_rows) if not r.hard and r.cosine >= grey]
        x = np.array([test_rows[i].features for i in index])
        probs = probability(x, model["mean"], model["scale"], model["weights"], model["bias"])
        p = dict(zip(index, probs.tolist(), strict=True))
        fmr, recall, unsure, matches, false = scores(
            test_rows, decide(test_rows, p, model["same"], model["new"])
        )
        say(
            f"  {held:<24} fmr={100 * fmr:5.2f} recall={100 * recall:5.2f} unsure={100 * unsure:5.2f} "
            f"MATCH {matches} (false {false}) same≥{model['same']:.3f}"
        )
    model = train(rows, grey)
    for name in files:
        sub = [(i, r) for i, r in enumerate(rows) if r.file == name]
        rows_f = [r for _, r in sub]
        p = {j: model["p"][i] for j, (i, _) in enumerate(sub) if i in model["p"]}
        fmr, recall, unsure, matches, false = scores(rows_f, decide(rows_f, p, model["same"], model["new"]))
        say(
            f"fit on all: {name:<24} fmr={100 * fmr:5.2f} recall={100 * recall:5.2f} "
            f"unsure={100 * unsure:5.2f} MATCH {matches} (false {false})"
        )
    return model


def main() -> None:
    from memory.comparator import DEFAULT_PARAMS, FEATURE_NAMES

    rows = rows_build()
    model = report(rows, DEFAULT_PARAMS.grey)
    payload = {
        "about": "logistic P(same) of the comparator's grey zone; train: python -m bench.registry.train_comparator",
        "features": list(FEATURE_NAMES),
        "mean": [round(float(v), 6) for v in model["mean"]],
        "scale": [round(float(v), 6) for v in model["scale"]],
        "weights": [round(float(v), 6) for v in model["weights"]],
        "bias": round(model["bias"], 6),
        "same": round(model["same"], 6),
        "new": round(model["new"], 6),
        "trained_on": {
            name: hashlib.sha256((RESOURCES_DIR / name).read_bytes()).hexdigest() for name in DEV_FILES
        },
        "target_dev_fmr": TARGET_DEV_FMR,
        "l2": L2,
    }
    MODEL_PATH.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {MODEL_PATH.name}: same ≥ {payload['same']}, new < {payload['new']}")
    for name, weight in zip(FEATURE_NAMES, payload["weights"], strict=True):
        print(f"  {name:<24} {weight:+.3f}")


if __name__ == "__main__":
    import os
    import sys

    sys.path[:0] = [str(ROOT), str(ROOT / "platform")]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arg_platform.settings")
    import django

    django.setup()
    main()
