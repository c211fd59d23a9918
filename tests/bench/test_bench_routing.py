"""The routing benchmark runs end to end on a tiny train/val/eval set and prints its SUMMARY line."""

from __future__ import annotations

import json
import re
from io import StringIO
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

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


def _bench(tmp_path, **options: Any) -> str:  # type: ignore[no-untyped-def]
    """Run ``bench_routing`` on the tiny splits (TRAIN: 4 utterances per intent and one OOS query; VAL
    and EVAL: the other 2 per intent and 3 OOS queries, 9 items) and return what it printed."""
    train = [[t, i] for i, texts in INTENTS.items() for t in texts[:4]] + [[OOS[0], "oos"]]
    held = [[t, i] for i, texts in INTENTS.items() for t in texts[4:]] + [[q, "oos"] for q in OOS[1:]]
    paths = {}
    for name, data in (("train", train), ("val", held), ("eval", held)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(data))
    out = StringIO()
    options.setdefault("ood_pool", 0)  # the out-of-domain pool only where a test asks for it
    call_command(
        "bench_routing",
        train=str(paths["train"]),
        val=str(paths["val"]),
        eval_path=str(paths["eval"]),
        stdout=out,
        stderr=StringIO(),
        **options,
    )
    return out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_bench_routing_prints_table_and_summary(tmp_path):
    results = tmp_path / "results.json"
    text = _bench(tmp_path, ood_pool=30, json=str(results))
    for method in ("ARG pipeline", "1-NN cosine", "class centroid", "logistic regression", "BM25 top-1"):
        assert method in text
    summary = text.strip().splitlines()[-1]
    match = re.fullmatch(
        r"SUMMARY in_scope_acc=([\d.]+) oos_recall=([\d.]+) oos_precision=([\d.]+) "
        r"p50_ms=([\d.]+) p95_ms=([\d.]+) logreg_in_scope_acc=([\d.]+) logreg_oos_recall=([\d.]+) "
        r"auroc=([\d.]+) fpr95=([\d.]+) logreg_auroc=([\d.]+) logreg_fpr95=([\d.]+) "
        r"in_scope_at_fixed_oos_recall=([\d.]+) logreg_in_scope_at_fixed_oos_recall=([\d.]+) "
        r"pool_auroc=([\d.]+) pool_rejected=([\d.]+) logreg_pool_auroc=([\d.]+) logreg_pool_rejected=([\d.]+)",
        summary,
    )
    assert match, summary
    assert float(match.group(1)) >= 50.0  # three easy intents: the pipeline must route most of them
    assert 0.0 <= float(match.group(8)) <= 100.0 and 0.0 <= float(match.group(9)) <= 100.0
    assert "OOS AUROC %" in text and "FPR@95 %" in text
    # the out-of-domain pool: a row per method, its figures in the JSON
    assert "out-of-domain pool: 30 WordNet 3.0 usage examples" in text and "pool AUROC %" in text
    data = json.loads(results.read_text())
    for method in ("ARG pipeline", "(classifier alone)", "1-NN cosine", "logistic regression", "BM25 top-1"):
        pool = data[method]["pool"]
        assert 0.0 <= pool["auroc"] <= 100.0 and 0.0 <= pool["rejected"] <= 100.0
    assert float(match.group(15)) == pytest.approx(data["ARG pipeline"]["pool"]["rejected"], abs=0.01)
    # without domains the threshold rule is VAL's alone, and the output says so
    assert "no unseen-domain calibration" in text


@pytest.mark.django_db(transaction=True)
def test_a_held_out_domain_leaves_train_and_val_and_counts_as_out_of_scope_in_eval(tmp_path):
    domains = tmp_path / "domains.json"
    domains.write_text(json.dumps({"money": ["balance"], "home": ["weather", "timer"]}))
    results = tmp_path / "results.json"
    text = _bench(tmp_path, domains=str(domains), hold_out_domain="money", json=str(results))

    # TRAIN lost the 4 balance utterances, VAL the 2; EVAL keeps its 9 items, 5 of them now out of scope
    assert "splits: train 9, val 7, eval 9 (eval oos 5, with domain 'money' held out as out of scope)" in text
    data = json.loads(results.read_text())
    assert data["held_out_domain"] == "money"
    gold = {item["text"]: item["gold"] for item in data["eval_items"]}
    assert gold["tell me my current balance"] == "oos" and gold["do i need an umbrella"] == "weather"

    with pytest.raises(CommandError, match="not a domain"):
        _bench(tmp_path, domains=str(domains), hold_out_domain="travel")


def test_oos_detection_is_auroc_and_the_false_positive_rate_at_95_percent_in_scope_recall():
    from bench.routing import detection

    gold = ["a"] * 20 + ["oos"] * 4
    conf = np.array([0.9] * 19 + [0.2] + [0.95, 0.5, 0.4, 0.1])
    best = ["a"] * 24
    d = detection(conf, best, gold)
    # pairs (in-scope, OOS) where in-scope is higher: 19 × 3 (all but the 0.95) + the 0.2 beats the 0.1
    assert d.auroc == pytest.approx((19 * 3 + 1) / 80 * 100)
    # 95 % of 20 in-scope = 19 kept: the threshold is 0.9, and only the 0.95 OOS request passes it
    assert d.fpr_at_95 == pytest.approx(25.0)
    # 70 % of 4 OOS → 3 rejected (0.1, 0.4, 0.5): the 19 in-scope at 0.9 stay, the one at 0.2 is rejected
    assert d.in_scope_at_recall == pytest.approx(95.0)
    # … and a wrong route counts against it as an abstention does
    assert detection(conf, ["b"] + best[1:], gold).in_scope_at_recall == pytest.approx(90.0)
    # a method's own oos verdict is the lowest confidence: the 0.95 request is now rejected at any threshold
    d = detection(conf, best[:20] + ["oos", "a", "a", "a"], gold)
    assert d.auroc == pytest.approx((19 * 4 + 2) / 80 * 100)
    assert d.fpr_at_95 == 0.0
    # a split without out-of-scope requests cannot measure either
    assert detection(conf[:20], best[:20], gold[:20]).auroc is None


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


@pytest.mark.django_db(transaction=True)
def test_the_weaver_candidate_path_is_chosen_by_a_flag_and_recorded(tmp_path, settings):
    settings.WEAVER_CANDIDATES = "all"
    out = tmp_path / "out.json"
    text = _bench(tmp_path, weaver_candidates="protocol", json=str(out))

    assert "weaver candidates: protocol" in text
    assert json.loads(out.read_text())["weaver_candidates"] == "protocol"


@pytest.mark.django_db(transaction=True)
def test_without_the_flag_the_weaver_candidate_path_is_the_setting(tmp_path, settings):
    settings.WEAVER_CANDIDATES = "protocol"
    assert "weaver candidates: protocol" in _bench(tmp_path)


def test_unseen_domain_queries_raise_the_threshold_until_they_too_reach_the_recall_floor():
    from bench.routing import calibrate, unseen_recall

    gold = ["a", "a", "b", "b", "oos", "oos"]
    best = ["a", "a", "b", "b", "a", "b"]
    conf = np.array([0.9, 0.8, 0.7, 0.6, 0.3, 0.2])
    # VAL's own two OOS queries are easy: 0.6 keeps every in-scope query and rejects both
    assert calibrate(conf, best, gold, min_oos_recall=0.75) == 0.6
    # unseen-domain queries score higher: 3 of 4 must fall below the threshold → 0.65 (0.7 stays answered)
    unseen = np.array([0.4, 0.5, 0.65, 0.95])
    assert calibrate(conf, best, gold, min_oos_recall=0.75, unseen=unseen) == pytest.approx(0.7)
    # the lower recall decides: with unseen queries below every VAL score the VAL rule stands
    assert calibrate(conf, best, gold, min_oos_recall=0.75, unseen=np.array([0.1, 0.1])) == 0.6
    # a VAL split without out-of-scope queries calibrates no abstention, unseen queries or not
    assert calibrate(conf[:4], best[:4], gold[:4], unseen=unseen) == -np.inf
    # a method's own out-of-scope verdict (-inf) is recalled at every threshold
    assert list(unseen_recall(np.array([-np.inf, 0.5]), np.array([-np.inf, 0.5, 0.6]))) == [0.5, 0.5, 1.0]


def test_domain_hold_outs_pair_each_domain_with_its_val_rows_and_need_two_domains():
    from bench.routing import domain_hold_outs, unseen_confidence

    gold = ["balance", "weather", "oos", "timer", "balance"]
    domains = {"money": ["balance"], "home": ["weather", "timer"], "travel": ["flight"]}
    hold_outs = domain_hold_outs(domains, gold)
    assert [(sorted(held), list(rows)) for held, rows in hold_outs] == [
        (["timer", "weather"], [1, 3]),
        (["balance"], [0, 4]),
    ]  # by domain name; "travel" has no VAL query
    assert domain_hold_outs({"all": ["balance", "weather"]}, gold) == []
    assert domain_hold_outs(None, gold) == []
    seen: list[frozenset[str]] = []

    def score_without(held: frozenset[str], rows: np.ndarray) -> np.ndarray:
        seen.append(held)
        return rows.astype(float) / 10

    assert list(unseen_confidence(hold_outs, score_without)) == [0.1, 0.3, 0.0, 0.4]
    assert seen == [frozenset({"weather", "timer"}), frozenset({"balance"})]


@pytest.mark.django_db(transaction=True)
def test_with_two_domains_every_method_is_also_calibrated_on_unseen_domain_queries(tmp_path):
    domains = tmp_path / "domains.json"
    domains.write_text(json.dumps({"money": ["balance"], "home": ["weather", "timer"]}))
    results = tmp_path / "results.json"
    text = _bench(tmp_path, domains=str(domains), json=str(results))

    assert "the same recall on VAL queries of a domain held out of training (2 domains in turn)" in text
    data = json.loads(results.read_text())
    assert data["unseen_domains"] == 2
    for method in ("ARG pipeline", "(classifier alone)", "logistic regression", "BM25 top-1"):
        assert data[method]["threshold"] is not None


def test_the_out_of_domain_pool_is_wordnet_usage_examples_drawn_reproducibly(tmp_path):
    from bench.ood_pool import examples_in, wordnet_examples

    (tmp_path / "data.noun").write_text(
        "  1 This software and database is being provided to you\n"
        '00001740 03 n 01 entity 0 | that which exists; "the entity was found in the old barn"\n'
        '00002000 03 n 01 thing 0 | a thing; "a thing"; "it  was a  thing of beauty"; '
        '"the entity was found in the old barn"\n'
    )
    for name in ("data.verb", "data.adj", "data.adv"):
        (tmp_path / name).write_text('01 | go; "go now"; "we went home after the show"\n')

    # licence lines skipped, too-short examples dropped, whitespace collapsed, duplicates once
    assert examples_in(tmp_path) == [
        "it was a thing of beauty",
        "the entity was found in the old barn",
        "we went home after the show",
    ]
    first, again = wordnet_examples(200, seed=3), wordnet_examples(200, seed=3)
    assert first == again and len(set(first)) == 200
    assert all(4 <= len(sentence.split()) <= 25 for sentence in first)
    assert wordnet_examples(200, seed=4) != first
    assert len(wordnet_examples(10**6)) == 34_715  # a large pool: every example of 4–25 words in the wheel
