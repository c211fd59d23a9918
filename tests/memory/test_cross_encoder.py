"""The registry's pair cross-encoder: trained (tiny set, one epoch) into ARG_DATA_DIR/encoders under a key
of its training files and parameters, reused when present, deterministic, symmetric; and the registry's
real write path using its score in the grey zone only (a strong match it demotes, a staged pair it
promotes), falling back to the rules — logged — when the weights are missing."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from memory import cross_encoder
from memory.canonical import InfoType, canonicalize
from memory.comparator import Comparison, Method, RegistryParams, Verdict, cross_decide
from memory.cross_encoder import (
    CrossEncoderScorer,
    TrainParams,
    cross_encoder_ensure,
    cross_encoder_train,
    examples_build,
    scorer_for,
    training_key,
)
from memory.models import InfoUnit, RegistryAttempt
from memory.services import memory_write

TINY = TrainParams(epochs=1, batch_size=8, max_length=32, threads=1, seed=5)
PAIRS = [
    ("Exports run every night at 2 am.", "Every night at 02:00 the export runs.", True, "paraphrase"),
    ("Exports run every night at 2 am.", "Exports run every night at 4 am.", False, "numbers"),
    (
        "Refunds are sent to the original card.",
        "Money is refunded to the card used to pay.",
        True,
        "paraphrase",
    ),
    ("Refunds are sent to the original card.", "Refunds are sent to a gift card.", False, "entity"),
    (
        "Trial accounts keep their data for 30 days.",
        "Data of trial accounts is kept 30 days.",
        True,
        "paraphrase",
    ),
    (
        "Trial accounts keep their data for 30 days.",
        "Trial accounts lose their data at once.",
        False,
        "state",
    ),
]
FACT = "Invoices are emailed to the billing contact on the 1st of every month."
PARAPHRASE = "On the first day of each month the invoice is sent by email to the billing contact."
GREY_A = "The customer wants maintenance windows on Sunday nights."
GREY_B = "Schedule this customer's maintenance for Sunday night."


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory: Any) -> list[Path]:
    path = tmp_path_factory.mktemp("pairs") / "pairs_tiny.json"
    rows = [
        {"a": a, "b": b, "same": same, "kind": kind, "info_type": "ProductConfig"}
        for a, b, same, kind in PAIRS
    ]
    path.write_text(json.dumps(rows), encoding="utf-8")
    return [path]


@pytest.fixture(scope="module")
def tiny_folder(tiny_files: list[Path]) -> Path:
    return cross_encoder_ensure(tiny_files, TINY)


def write(project: Any, text: str, params: RegistryParams, **kwargs: Any) -> Any:
    return memory_write(
        project=project,
        text=text,
        scope="USER",
        user_id="u-1",
        label_ids=["L00001"],
        session_id=kwargs.pop("session_id", "s-1"),
        params=params,
        **kwargs,
    )


def statement(text: str, info_type: str = InfoType.PRODUCT_CONFIG) -> str:
    return canonicalize(text, info_type=info_type).statement


def test_examples_are_the_pairs_plus_deterministic_augmentation(tiny_files):
    examples = examples_build(tiny_files)

    origins = [e.origin for e in examples]
    assert origins.count("pair") == 6
    # each paraphrase against the same fact's negative, read through the other wording
    assert [(e.a, e.b, e.same) for e in examples if e.origin == "reworded"] == [
        ("every night at 02:00 the export runs", "exports run every night at 04:00", False),
        ("money is refunded to the card used to pay", "refunds are sent to a gift card", False),
        ("data of trial accounts is kept 30 days", "trial accounts lose their data at once", False),
    ]
    assert [(e.a, e.b) for e in examples if e.origin in ("number", "negation")] == [
        ("refunds are sent to the original card", "refunds are not sent to the original card"),
        ("trial accounts keep their data for 30 days", "trial accounts keep their data for 60 days"),
    ]
    assert examples == examples_build(tiny_files)
    assert [e.origin for e in examples_build(tiny_files, augment=False)] == ["pair"] * 6


def test_weights_are_trained_into_the_data_dir_under_their_key_and_reused(
    tiny_files, tiny_folder, monkeypatch
):
    key = training_key(tiny_files, TINY)
    assert tiny_folder == Path(settings.DATA_DIR) / "encoders" / f"comparator-{key}"
    meta = json.loads((tiny_folder / "meta.json").read_text(encoding="utf-8"))
    assert meta["trained_on"] == {"pairs_tiny.json": cross_encoder.file_sha256(tiny_files[0])}
    assert meta["params"]["epochs"] == 1 and meta["examples"] == len(examples_build(tiny_files))
    assert (tiny_folder / "model.safetensors").exists() and (tiny_folder / "tokenizer.json").exists()
    # another parameter is another key; the same ones reuse the folder without training
    assert training_key(tiny_files, replace(TINY, seed=6)) != key

    def refuse(*args: Any, **kwargs: Any) -> Path:
        raise AssertionError("trained again")

    monkeypatch.setattr(cross_encoder, "cross_encoder_train", refuse)
    assert cross_encoder_ensure(tiny_files, TINY) == tiny_folder


def test_training_is_deterministic_and_the_score_symmetric(tiny_files, tiny_folder, tmp_path):
    again = cross_encoder_train(examples_build(tiny_files), tmp_path / "again", TINY)
    first, second = CrossEncoderScorer(tiny_folder), CrossEncoderScorer(again)
    pairs = [(statement(a), statement(b)) for a, b, _, _ in PAIRS]

    scores = first.probabilities(pairs)
    assert scores == second.probabilities(pairs)
    assert all(0.0 < p < 1.0 for p in scores)
    a, b = pairs[3]
    assert first.probability(a, b) == first.probability(b, a) == pytest.approx(scores[3], abs=1e-6)


def test_cross_decide_only_moves_grey_zone_verdicts():
    params = RegistryParams(cross=True, cross_demote=0.3, cross_promote=0.9)
    strong = Comparison(Verdict.SAME, Method.VECTOR_ONLY, ())
    staged = Comparison(Verdict.UNSURE, Method.VECTOR_RULES, ("edited: a → b",))
    number = Comparison(Verdict.UNSURE, Method.VECTOR_RULES, ("missing_number",))

    assert cross_decide(strong, 0.29, params).verdict == Verdict.UNSURE
    assert cross_decide(strong, 0.29, params).method == Method.VECTOR_NLI
    assert cross_decide(strong, 0.31, params) == Comparison(
        Verdict.SAME, Method.VECTOR_ONLY, ("cross p=0.310",)
    )
    assert cross_decide(staged, 0.91, params).verdict == Verdict.SAME
    assert cross_decide(staged, 0.89, params).verdict == Verdict.UNSURE
    assert cross_decide(number, 0.99, params).verdict == Verdict.UNSURE  # a missing number is never merged


@pytest.mark.django_db
def test_the_registry_demotes_a_strong_match_the_cross_encoder_doubts(mem, tiny_folder):
    p = scorer_for(tiny_folder).probability(statement(FACT), statement(PARAPHRASE))
    kept = RegistryParams(cross=True, cross_folder=str(tiny_folder), cross_demote=p - 1e-4)
    doubted = replace(kept, cross_demote=p + 1e-4)

    first = write(mem, FACT, kept)
    matched = write(mem, PARAPHRASE, kept, session_id="s-2")
    staged = write(mem, PARAPHRASE, doubted, session_id="s-3")

    assert (first.decision, matched.decision, staged.decision) == ("NEW", "MATCH", "UNSURE")
    assert matched.registry.attempt.method == "VECTOR_ONLY"
    attempt = staged.registry.attempt
    assert attempt.method == "VECTOR+NLI" and attempt.candidate_unit_id == first.unit.pk
    assert attempt.top_k[0]["reasons"] == [f"cross p={p:.3f}", "cross: demoted"]
    assert staged.unit is None and InfoUnit.objects.count() == 1
    assert InfoUnit.objects.get().evidence_count == 2  # the demoted write attached no evidence


@pytest.mark.django_db
def test_the_registry_promotes_a_staged_pair_the_cross_encoder_vouches_for(mem, tiny_folder):
    info_type = InfoType.USER_PREFERENCE
    p = scorer_for(tiny_folder).probability(statement(GREY_A, info_type), statement(GREY_B, info_type))
    rules = RegistryParams(cross=False)
    vouched = RegistryParams(cross=True, cross_folder=str(tiny_folder), cross_promote=p - 1e-4)
    unconvinced = replace(vouched, cross_promote=p + 1e-4)

    first = write(mem, GREY_A, rules, info_type=info_type)
    by_rules = write(mem, GREY_B, rules, info_type=info_type, session_id="s-2")
    kept = write(mem, GREY_B, unconvinced, info_type=info_type, session_id="s-3")
    promoted = write(mem, GREY_B, vouched, info_type=info_type, session_id="s-4")

    assert (by_rules.decision, kept.decision, promoted.decision) == ("UNSURE", "UNSURE", "MATCH")
    assert not any(r.startswith("missing_") for r in by_rules.registry.attempt.top_k[0]["reasons"])
    assert kept.registry.attempt.method == "VECTOR+RULES"
    assert promoted.registry.attempt.method == "VECTOR+NLI" and promoted.unit.pk == first.unit.pk
    assert promoted.registry.attempt.top_k[0]["reasons"][-1] == "cross: promoted"
    assert InfoUnit.objects.count() == 1 and InfoUnit.objects.get().evidence_count == 2


@pytest.mark.django_db
def test_missing_weights_fall_back_to_the_rules_and_say_so(mem, tmp_path, caplog):
    missing = RegistryParams(cross=True, cross_folder=str(tmp_path / "comparator-missing"), cross_demote=1.0)

    with caplog.at_level(logging.WARNING, logger="memory.cross_encoder"):
        write(mem, FACT, missing)
        matched = write(mem, PARAPHRASE, missing, session_id="s-2")

    assert matched.decision == "MATCH" and matched.registry.attempt.method == "VECTOR_ONLY"
    assert RegistryAttempt.objects.filter(decision="MATCH").count() == 1
    assert any("is not trained" in r.getMessage() for r in caplog.records)


@pytest.mark.django_db
def test_the_default_weights_missing_start_one_background_training_and_the_rules_decide(
    mem, tmp_path, monkeypatch, caplog
):
    import threading

    started = threading.Event()
    calls: list[int] = []

    def fake_training() -> None:
        calls.append(1)
        started.set()

    monkeypatch.setattr(cross_encoder, "default_folder", lambda: tmp_path / "comparator-default")
    monkeypatch.setattr(cross_encoder, "_training", None)
    monkeypatch.setattr(cross_encoder, "_train_default", fake_training)
    on = RegistryParams(cross=True, cross_demote=1.0)

    with caplog.at_level(logging.WARNING, logger="memory.cross_encoder"):
        write(mem, FACT, on)
        matched = write(mem, PARAPHRASE, on, session_id="s-2")
        write(mem, PARAPHRASE, on, session_id="s-3")

    assert started.wait(5)
    assert calls == [1]  # one training per process, however many writes ask
    assert matched.decision == "MATCH" and matched.registry.attempt.method == "VECTOR_ONLY"
    assert sum("is not trained" in r.getMessage() for r in caplog.records) == 1
