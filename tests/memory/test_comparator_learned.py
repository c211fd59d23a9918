"""The comparator's learned grey-zone model: alignment features of two wordings, a checked-in logistic
model trained on the development pairs only, and its three-way decision over what the rules leave open."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import replace

import numpy as np
import pytest
from django.core.management import call_command

from arg_platform.embedder import get_embedder
from bench.registry.train_comparator import DEV_FILES, fit, rows_build
from memory.canonical import InfoType, canonicalize
from memory.comparator import (
    FEATURE_NAMES,
    Method,
    RegistryParams,
    Verdict,
    compare,
    decision,
    learned_model,
    pair_features,
)
from memory.comparator import LEARNED as LEARNED_GATED
from memory.comparator import RULES_ONLY as RULES_GATED
from memory.comparator.learned import MODEL_PATH
from memory.comparator.wording import _same_stem
from memory.pairs import RESOURCES_DIR, pairs_load

# The two presets as they decide before the identity gate (``memory.comparator.identity``).
RULES_ONLY = replace(RULES_GATED, identity=False)
LEARNED = replace(LEARNED_GATED, identity=False)

V4_SHA256 = "8250e265ffbe9250739d4e67d1edf25be422502367d8d8ec0ee98e19220a5b90"


def judged(a: str, b: str, info_type: str = InfoType.PRODUCT_CONFIG):
    """(incoming b, candidate a, real MiniLM cosine of their canonical statements), as the registry sees them."""
    first, second = canonicalize(a, info_type=info_type), canonicalize(b, info_type=info_type)
    va, vb = get_embedder().embed([first.statement, second.statement])
    return second, first, float(np.dot(va, vb))


def test_a_swapped_key_term_is_no_longer_a_strong_match():
    incoming, candidate, cosine = judged(
        "Webhook signatures are checked with a shared secret.",
        "Webhook signatures are checked with a public key.",
    )

    features = pair_features(incoming, candidate, cosine)
    rules = compare(incoming, candidate, cosine, RULES_ONLY)
    learned = compare(incoming, candidate, cosine, LEARNED)

    assert cosine == pytest.approx(0.855, abs=0.005)
    assert (features["unmatched"], features["specific_replaced"], features["specific_unmatched"]) == (4, 2, 4)
    assert (features["minimal_pair"], features["anchored"], features["length_ratio"]) == (0, 0, 1)
    assert features["jaccard"] == pytest.approx(3 / 7)
    # the rules of step 3 merged these (a held-out false merge of v3); since session 3 the rules stage
    # them: one span of meaningful words replaced by another
    assert (rules.verdict, rules.reasons) == (Verdict.UNSURE, ("replaced: public key → shar secret",))
    assert (learned.verdict, learned.method) == (Verdict.UNSURE, Method.VECTOR_LEARNED)
    assert learned.reasons[-1].startswith("learned p=0.8")


def test_a_reworded_paraphrase_the_rules_left_unsure_is_a_learned_match():
    incoming, candidate, cosine = judged(
        "Outbound traffic leaves through a static IP for the partner to allowlist.",
        "Egress goes out via a fixed IP so the partner can allowlist it.",
    )

    strict = compare(
        incoming, candidate, cosine, RegistryParams(learned=False, promote=False, identity=False)
    )
    rules = compare(incoming, candidate, cosine, RULES_ONLY)
    learned = compare(incoming, candidate, cosine, LEARNED)
    gated = compare(incoming, candidate, cosine, LEARNED_GATED)

    assert strict.verdict == Verdict.UNSURE
    # since session 3 the rules promote a grey-zone pair nothing discriminates
    assert cosine >= RULES_ONLY.promote_grey
    assert (rules.verdict, rules.reasons) == (Verdict.SAME, ("promoted: clean grey zone",))
    assert (learned.verdict, learned.method) == (Verdict.SAME, Method.VECTOR_LEARNED)
    assert learned.reasons == (
        f"learned p={learned_model().probability(pair_features(incoming, candidate, cosine)):.3f}",
    )
    # the identity gate stages it: "outbound", "traffic", "leaves", "static" … are not the other's words
    assert (gated.verdict, gated.method) == (Verdict.UNSURE, Method.VECTOR_LEARNED)
    assert gated.reasons[-1].startswith("not_identical: ")


def test_a_one_word_substitution_of_a_related_term_is_learned_different():
    incoming, candidate, cosine = judged(
        "The mobile app accounts for 70 percent of sessions.",
        "The web app accounts for 70 percent of sessions.",
    )

    features = pair_features(incoming, candidate, cosine)
    learned = compare(incoming, candidate, cosine, LEARNED)

    assert (features["unmatched"], features["specific_replaced"], features["minimal_pair"]) == (2, 1, 1)
    assert features["substitution_similarity"] == pytest.approx(features["worst_alignment"])
    assert compare(incoming, candidate, cosine, RULES_ONLY).verdict == Verdict.UNSURE
    assert (learned.verdict, learned.method) == (Verdict.DIFFERENT, Method.VECTOR_LEARNED)
    assert learned.reasons[0] == "edited: web → mobil"


def test_generic_wording_verbs_do_not_count_as_meaningful_edits():
    incoming, candidate, cosine = judged(
        "The team wants deploy notifications in Slack, not by email.",
        "Send this team's deploy notifications to Slack instead of email.",
    )

    features = pair_features(incoming, candidate, cosine)

    assert (features["unmatched"], features["specific_unmatched"], features["specific_replaced"]) == (2, 0, 0)
    assert (features["worst_alignment"], features["mean_alignment"], features["substitution_similarity"]) == (
        1.0,
        1.0,
        0.0,
    )
    assert features["minimal_pair"] == 1 and features["anchored"] == 1


def test_the_learned_model_is_off_by_default():
    incoming, candidate, cosine = judged(
        "Webhook signatures are checked with a shared secret.",
        "Webhook signatures are checked with a public key.",
    )

    assert decision.LEARNED_DEFAULT is False
    assert compare(incoming, candidate, cosine) == compare(incoming, candidate, cosine, RULES_ONLY)


def test_hard_discriminators_still_decide_before_the_model():
    incoming, candidate, cosine = judged("Max connections is set to 200.", "Max connections is set to 500.")

    comparison = compare(incoming, candidate, cosine, LEARNED)

    assert (comparison.verdict, comparison.method) == (Verdict.DIFFERENT, Method.VECTOR_RULES)
    assert comparison.reasons[0].startswith("numbers:")


@pytest.mark.parametrize(
    ("x", "y", "same"),
    [
        ("paginat", "pagination", True),
        ("automat", "automatically", True),
        ("deploy", "deploy", True),
        ("activ", "inactiv", False),
        ("includ", "exclud", False),
        ("web", "webhook", False),
    ],
)
def test_word_families(x, y, same):
    assert _same_stem(x, y) is same


def test_the_checked_in_model_was_trained_on_development_files_only():
    data = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    model = learned_model()

    assert data["features"] == list(FEATURE_NAMES) and len(data["weights"]) == len(FEATURE_NAMES)
    assert sorted(data["trained_on"]) == sorted(DEV_FILES)
    assert all(
        hashlib.sha256((RESOURCES_DIR / name).read_bytes()).hexdigest() == digest
        for name, digest in data["trained_on"].items()
    )
    assert model is not None and 0 < model.new < model.same < 1
    assert (model.same, model.new) == (data["same"], data["new"])


def test_the_heldout_v4_file_is_frozen_and_never_training_data():
    path = RESOURCES_DIR / "pairs_v4_heldout.json"
    pairs = pairs_load(path)
    development = {p.a for name in DEV_FILES for p in pairs_load(RESOURCES_DIR / name)}

    assert hashlib.sha256(path.read_bytes()).hexdigest() == V4_SHA256
    assert (len(pairs), sum(p.same for p in pairs)) == (214, 107)
    assert not {p.a for p in pairs} & development
    with pytest.raises(ValueError, match="held-out"):
        rows_build(("pairs_v4_heldout.json",))


def test_without_the_model_file_the_rules_decide_alone(monkeypatch, tmp_path):
    incoming, candidate, cosine = judged(
        "Webhook signatures are checked with a shared secret.",
        "Webhook signatures are checked with a public key.",
    )
    monkeypatch.setattr("memory.comparator.learned.MODEL_PATH", tmp_path / "missing.json")
    learned_model.cache_clear()
    try:
        comparison = compare(incoming, candidate, cosine, LEARNED)
        assert learned_model() is None
    finally:
        monkeypatch.undo()
        learned_model.cache_clear()

    assert (comparison.verdict, comparison.method) == (Verdict.UNSURE, Method.VECTOR_RULES)
    assert comparison.reasons == ("replaced: public key → shar secret",)
    assert learned_model() is not None


def test_the_logistic_fit_is_deterministic():
    x = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0.0, 1.0, 0.0, 1.0])

    mean, scale, weights, bias = fit(x, y, 1.0)

    assert (mean.tolist(), scale.tolist()) == ([1.5], [pytest.approx(1.118034, abs=1e-6)])
    assert weights.tolist() == [pytest.approx(0.453356, abs=1e-6)]
    assert bias == pytest.approx(0.0, abs=1e-12)
    assert fit(x, y, 1.0)[2].tolist() == weights.tolist()


@pytest.mark.django_db
def test_bench_registry_learned_switch_uses_the_model_through_the_real_write_path(tmp_path, bench_app):
    path = tmp_path / "pairs.json"
    path.write_text(
        json.dumps(
            [
                {
                    # an entity substitution the rules still merge (the shared-secret / public-key pair of
                    # earlier is now staged by the rules' replaced-span reason)
                    "a": "The customer is a reseller managing accounts for its clients.",
                    "b": "The customer is a direct customer managing only its own account.",
                    "same": False,
                    "kind": "entity",
                    "info_type": "ProductConfig",
                }
            ]
        )
    )
    rules, learned = io.StringIO(), io.StringIO()

    call_command("bench_registry", "--pairs", str(path), stdout=rules)
    call_command("bench_registry", "--pairs", str(path), "--learned", stdout=learned)

    assert rules.getvalue().splitlines()[0] == "comparator: rules"
    assert (
        rules.getvalue().strip().splitlines()[-1] == "SUMMARY fmr=100.00 dup_recall=0.00 unsure=0.00 pairs=1"
    )
    assert learned.getvalue().splitlines()[0] == "comparator: rules + learned model"
    assert (
        learned.getvalue().strip().splitlines()[-1]
        == "SUMMARY fmr=0.00 dup_recall=0.00 unsure=100.00 pairs=1"
    )
    assert decision.LEARNED_DEFAULT is False
