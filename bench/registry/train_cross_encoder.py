"""Train the registry's pair cross-encoder, and choose its grey-zone thresholds leave-one-file-out.

``python manage.py train_registry_comparator`` trains (or reuses) the weights on the development files
``memory.cross_encoder.DEV_FILES`` into ``ARG_DATA_DIR/encoders/comparator-<key>/``. With ``--lofo`` it
first runs the leave-one-file-out: for each fold (v1 = its two files, v2, v3, v4, v5) a model trained
on the other four folds scores the fold's pairs; the rules' verdict on every pair is simulated exactly
as ``bench_registry`` reaches it (canonicalize both facts, cosine of the MiniLM embeddings of the
canonical statements, ``compare(b, a)`` with the cross-encoder off); the two thresholds
(``cross_demote``, ``cross_promote``) are then chosen on the pooled out-of-fold scores: the highest
duplicate recall whose pooled development false-merge rate stays at or under ``TARGET_DEV_FMR``.
Held-out files are never read here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory.cross_encoder import DEFAULT_TRAIN, TrainParams, cross_encoder_ensure, scorer_for
from memory.pairs import RESOURCES_DIR, pairs_load

ROOT = Path(__file__).resolve().parents[2]

FOLDS: dict[str, tuple[str, ...]] = {
    "v1": ("pairs_v1_tuning.json", "pairs_v1_heldout.json"),
    "v2": ("pairs_v2_heldout.json",),
    "v3": ("pairs_v3_heldout.json",),
    "v4": ("pairs_v4_heldout.json",),
    "v5": ("pairs_v5_heldout.json",),
}
TARGET_DEV_FMR = 0.005
DEMOTE_GRID = (0.0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7)
PROMOTE_GRID = (1.01, 0.995, 0.99, 0.98, 0.97, 0.95, 0.93, 0.9, 0.85, 0.8, 0.7, 0.6)

Say = Callable[[str], None]


@dataclass(frozen=True)
class Row:
    fold: str
    same: bool
    kind: str
    a: str  # canonical statement of the first fact (the candidate)
    b: str  # canonical statement of the incoming fact
    cosine: float
    verdict: str  # the rules' verdict (cross-encoder off)
    method: str
    reasons: tuple[str, ...]


def rows_build(folds: dict[str, tuple[str, ...]] = FOLDS) -> list[Row]:
    from arg_platform.embedder import get_embedder
    from memory.canonical import canonicalize, classify_info_type
    from memory.comparator import RegistryParams, compare

    rules = RegistryParams(cross=False)
    embedder = get_embedder()
    out = []
    for fold, names in folds.items():
        for name in names:
            if "v6" in name or "v7" in name:
                raise ValueError("held-out files are not training data")
            for pair in pairs_load(RESOURCES_DIR / name):
                info_type = pair.info_type or classify_info_type(pair.a)
                first = canonicalize(pair.a, info_type=info_type)
                second = canonicalize(pair.b, info_type=info_type)
                va, vb = embedder.embed([first.statement, second.statement])
                cosine = float(np.dot(va, vb))
                result = compare(second, first, cosine, rules)
                out.append(
                    Row(
                        fold,
                        pair.same,
                        pair.kind,
                        first.statement,
                        second.statement,
                        cosine,
                        result.verdict,
                        result.method,
                        result.reasons,
                    )
                )
    return out


def decide(rows: Sequence[Row], p: Sequence[float], demote: float, promote: float) -> list[str]:
    """The registry's verdict per row with the cross-encoder on (``memory.comparator.cross_decide``)."""
    from memory.comparator import Comparison, Method, RegistryParams, Verdict, cross_decide

    params = RegistryParams(cross=True, cross_demote=demote, cross_promote=promote)
    out = []
    for row, score in zip(rows, p, strict=True):
        if row.verdict == Verdict.DIFFERENT or row.method not in (Method.VECTOR_ONLY, Method.VECTOR_RULES):
            out.append(row.verdict)
        else:
            out.append(cross_decide(Comparison(row.verdict, row.method, row.reasons), score, params).verdict)
    return out


def scores(rows: Sequence[Row], verdicts: Sequence[str]) -> dict[str, float]:
    matches = [r for r, v in zip(rows, verdicts, strict=True) if v == "SAME"]
    false = sum(1 for r in matches if not r.same)
    same = sum(1 for r in rows if r.same)
    return {
        "fmr": false / len(matches) if matches else 0.0,
        "recall": (len(matches) - false) / same if same else 0.0,
        "unsure": sum(1 for v in verdicts if v == "UNSURE") / len(rows) if rows else 0.0,
        "matches": len(matches),
        "false": false,
    }


def thresholds_choose(rows: Sequence[Row], p: Sequence[float]) -> tuple[float, float, dict[str, float]]:
    """(demote, promote, pooled scores): the highest recall with pooled FMR ≤ ``TARGET_DEV_FMR``; ties go to
    the fewest changed verdicts (lowest demote bar, highest promote bar)."""
    best: tuple[float, float, dict[str, float]] | None = None
    for demote in DEMOTE_GRID:
        for promote in PROMOTE_GRID:
            s = scores(rows, decide(rows, p, demote, promote))
            if s["fmr"] > TARGET_DEV_FMR:
                continue
            if best is None or s["recall"] > best[2]["recall"] + 1e-12:
                best = (demote, promote, s)
    if best is None:  # nothing reaches the target: the rules alone
        return 0.0, 1.01, scores(rows, decide(rows, p, 0.0, 1.01))
    return best


def line(name: str, s: dict[str, float]) -> str:
    return (
        f"{name:<10} fmr={100 * s['fmr']:5.2f} recall={100 * s['recall']:5.2f} unsure={100 * s['unsure']:5.2f} "
        f"MATCH {s['matches']} (false {s['false']})"
    )


def lofo(params: TrainParams = DEFAULT_TRAIN, say: Say = print) -> dict[str, object]:
    rows = rows_build()
    p = [0.0] * len(rows)
    for fold in FOLDS:
        train_files = [RESOURCES_DIR / n for f, names in FOLDS.items() if f != fold for n in names]
        folder = cross_encoder_ensure(train_files, params, report=say)
        scorer = scorer_for(folder)
        assert scorer is not None
        index = [i for i, r in enumerate(rows) if r.fold == fold]
        for i, score in zip(
            index, scorer.probabilities([(rows[i].b, rows[i].a) for i in index]), strict=True
        ):
            p[i] = score
        say(f"fold {fold}: scored {len(index)} pairs with {folder.name}")
    demote, promote, pooled = thresholds_choose(rows, p)
    say(f"chosen on pooled out-of-fold scores: cross_demote={demote} cross_promote={promote}")
    rules = decide(rows, p, 0.0, 1.01)
    cross = decide(rows, p, demote, promote)
    for fold in FOLDS:
        sub = [i for i, r in enumerate(rows) if r.fold == fold]
        fold_rows = [rows[i] for i in sub]
        say(line(f"{fold} rules", scores(fold_rows, [rules[i] for i in sub])))
        say(line(f"{fold} +cross", scores(fold_rows, [cross[i] for i in sub])))
    say(line("pooled rules", scores(rows, rules)))
    say(line("pooled +cross", pooled))
    changed = [(r, p[i], rules[i], cross[i]) for i, r in enumerate(rows) if rules[i] != cross[i]]
    for kind in ("demoted", "promoted"):
        picked = [c for c in changed if (c[2] == "SAME") == (kind == "demoted")]
        right = sum(1 for r, _, _, _ in picked if r.same == (kind == "promoted"))
        say(f"{kind}: {len(picked)} ({right} right)")
    return {"demote": demote, "promote": promote, "p": p, "rows": rows}


def main(argv: Sequence[str] = (), say: Say = print) -> None:
    if "--lofo" in argv:
        result = lofo(say=say)
        out = Path(str(cross_encoder_ensure(report=say))).parent / "lofo.json"
        out.write_text(
            json.dumps({"demote": result["demote"], "promote": result["promote"], "p": result["p"]}) + "\n",
            encoding="utf-8",
        )
    folder = cross_encoder_ensure(report=say)
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    say(f"weights: {folder} ({meta['examples']} examples, {meta['train_seconds']} s)")


if __name__ == "__main__":
    import os
    import sys

    sys.path[:0] = [str(ROOT), str(ROOT / "platform")]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arg_platform.settings")
    import django

    django.setup()
    main(sys.argv[1:])
