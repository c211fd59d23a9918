"""The routing benchmark runs end to end on a tiny train/val/eval set and prints its SUMMARY line."""

from __future__ import annotations

import json
import re
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

INTENTS = {
    "balance": [
        "what is my account balance",
        "how much money do i have",
        "show my balance please",
        "balance of my checking account",
        "tell me my current balance",
        "how much is in my account",
    ],
    "weather": [
        "what is the weather today",
        "will it rain tomorrow",
        "is it sunny outside",
        "weather forecast for the weekend",
        "how hot will it be today",
        "do i need an umbrella",
    ],
    "timer": [
        "set a timer for ten minutes",
        "start a five minute timer",
        "timer for 30 seconds please",
        "count down three minutes",
        "set an alarm timer for an hour",
        "start timer 20 minutes",
    ],
}
OOS = [
    "who wrote hamlet",
    "how tall is mount everest",
    "what is the capital of peru",
    "tell me a joke about cats",
]


@pytest.mark.django_db(transaction=True)
def test_bench_routing_prints_table_and_summary(tmp_path):
    train = [[t, i] for i, texts in INTENTS.items() for t in texts[:4]] + [[OOS[0], "oos"]]
    held = [[t, i] for i, texts in INTENTS.items() for t in texts[4:]] + [[q, "oos"] for q in OOS[1:]]
    paths = {}
    for name, data in (("train", train), ("val", held), ("eval", held)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(data))
    out = StringIO()
    call_command(
        "bench_routing",
        train=str(paths["train"]),
        val=str(paths["val"]),
        eval_path=str(paths["eval"]),
        stdout=out,
        stderr=StringIO(),
    )
    text = out.getvalue()
    for method in ("ARG pipeline", "1-NN cosine", "class centroid", "logistic regression", "BM25 top-1"):
        assert method in text
    summary = text.strip().splitlines()[-1]
    match = re.fullmatch(
        r"SUMMARY in_scope_acc=([\d.]+) oos_recall=([\d.]+) oos_precision=([\d.]+) "
        r"p50_ms=([\d.]+) p95_ms=([\d.]+) logreg_in_scope_acc=([\d.]+) logreg_oos_recall=([\d.]+)",
        summary,
    )
    assert match, summary
    assert float(match.group(1)) >= 50.0  # three easy intents: the pipeline must route most of them


def test_threshold_rule_is_best_val_in_scope_accuracy_above_the_recall_floor():
    from bench.routing import calibrate

    gold = ["a", "a", "b", "b", "oos", "oos", "oos", "oos"]
    best = ["a", "a", "b", "a", "a", "b", "a", "a"]
    conf = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.85])
    # recall ≥ 0.75 first reached at 0.6 (3 of 4 OOS abstain) with every in-scope item kept
    assert calibrate(conf, best, gold, min_oos_recall=0.75) == 0.6
    # 0.76 needs all four OOS below the threshold: only 0.9 does it
    assert calibrate(conf, best, gold, min_oos_recall=0.76) == 0.9
    # a floor nothing reaches: the highest recall, then the best in-scope accuracy
    assert calibrate(conf, best, gold, min_oos_recall=1.01) == 0.9
    # no floor: the best in-scope accuracy (3 of 4) with, among equals, the higher recall
    assert calibrate(conf, best, gold, min_oos_recall=0.0) == 0.6
    # a predicted "oos" counts as recalled whatever the threshold
    assert calibrate(conf, [*best[:4], "oos", "oos", "oos", "a"], gold, min_oos_recall=0.76) == 0.9
    assert calibrate(conf, [*best[:4], "oos", "oos", "oos", "oos"], gold, min_oos_recall=0.76) == -np.inf
