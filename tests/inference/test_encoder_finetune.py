"""The release encoder: fine-tuned at publication when asked, saved under ARG_DATA_DIR with its checksum
in the bundle, loaded once per process and used for every vector of a request; a release without one
keeps the platform embedder."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from django.conf import settings
from django.test import override_settings

from arg_platform.embedder import EmbedderUnavailable, folder_checksum, get_embedder
from bench.routing_pack import routing_pack
from inference.contracts import RequestContext
from inference.learning import classifier as classifier_module
from inference.learning.classifier import classifier_from_documents, train_label_classifier, training_set
from inference.learning.encoder_finetune import (
    DOCUMENT,
    ENCODERS_FOLDER,
    INPUTS_FOLDER,
    FinetuneParams,
    ReleaseEncoder,
    _batches,
    base_model_path,
    encoder_for_documents,
    finetune_encoder,
    finetune_wanted,
    release_encoder,
    release_encoders_clear,
    training_key,
)
from inference.runtime import runtime_cache_clear, runtime_for

pytestmark = pytest.mark.django_db

TEMPLATES = {
    "card_lost": ["i lost my {} card", "my {} card is missing", "cannot find my {} card", "{} card stolen"],
    "pay_bill": ["pay my {} bill", "i want to pay the {} bill", "settle the {} invoice", "{} bill payment"],
    "book_flight": ["book a flight to {}", "i need a plane ticket to {}", "fly me to {}", "flights to {}"],
}
FILLERS = ["visa", "gas", "paris", "water", "tokyo"]
OOS = ["who painted the mona lisa", "how many legs does a spider have", "tell me a joke"]


def tiny_pairs() -> list[list[str]]:
    """60 in-scope utterances (3 intents × 4 templates × 5 fillers) and 3 out-of-scope ones."""
    pairs = [[t.format(f), intent] for intent, ts in TEMPLATES.items() for t in ts for f in FILLERS]
    return pairs + [[text, "oos"] for text in OOS]


@pytest.fixture(scope="module")
def finetuned(django_db_setup: Any, django_db_blocker: Any) -> Any:
    """The tiny pack published with fine-tuning forced on (1 epoch); the transaction is rolled back,
    the frozen snapshot and the encoder folder under ARG_DATA_DIR stay."""
    from django.db import transaction

    from ontology.releases import release_publish, release_snapshot
    from taxonomy.packs import pack_import
    from taxonomy.packs.reader import PackDocument

    pack, node_of = routing_pack(tiny_pairs(), project_slug="tiny-finetune")
    with (
        override_settings(CLASSIFIER_FINETUNE="on", CLASSIFIER_FINETUNE_EPOCHS=1),
        django_db_blocker.unblock(),
        transaction.atomic(),
    ):
        project = pack_import(PackDocument(data=pack, source="test"), project_slug="tiny-finetune").project
        release = release_publish(project=project, actor=None)
        snapshot = release_snapshot(release=release)
        timings = dict(release.timings)
        transaction.set_rollback(True)
    return SimpleNamespace(snapshot=snapshot, pack=pack, node_of=node_of, timings=timings)


def test_fine_tuned_encoder_is_saved_under_the_data_dir_and_its_checksum_frozen(finetuned):
    meta = finetuned.snapshot.documents[DOCUMENT]
    texts, classes = training_set(finetuned.snapshot.documents)
    folder = Path(settings.DATA_DIR) / ENCODERS_FOLDER / meta["checksum"]
    assert folder.is_dir()
    assert folder_checksum(folder) == meta["checksum"]
    assert (folder / "model.safetensors").read_bytes() != (
        base_model_path() / "model.safetensors"
    ).read_bytes()
    assert meta["trained_on"] == len(texts) == 63 + 4  # examples + one index text per label
    assert meta["classes"] == len(set(classes)) == 4
    assert meta["steps"] == 3  # ceil(67 / 32), one epoch
    assert meta["params"] == {**FinetuneParams().__dict__, "epochs": 1}
    assert sorted(meta) == ["base", "checksum", "classes", "params", "steps", "trained_on"]
    assert finetuned.timings["encoder_s"] > 0
    assert not any(p.name.startswith("staging-") for p in folder.parent.iterdir())


def test_fine_tuning_is_deterministic_and_reused_for_the_same_examples(finetuned):
    texts, classes = training_set(finetuned.snapshot.documents)
    checksum = finetuned.snapshot.documents[DOCUMENT]["checksum"]
    again = finetune_encoder(texts, classes, params=FinetuneParams(epochs=1))
    assert (again.reused, again.checksum, again.steps) == (True, checksum, 3)
    (
        Path(settings.DATA_DIR)
        / ENCODERS_FOLDER
        / INPUTS_FOLDER
        / f"{training_key(texts, classes, FinetuneParams(epochs=1))}.json"
    ).unlink()
    retrained = finetune_encoder(texts, classes, params=FinetuneParams(epochs=1))
    assert (retrained.reused, retrained.checksum) == (False, checksum)  # seeded, one thread: same weights
    other = finetune_encoder(texts[:-1], classes[:-1], params=FinetuneParams(epochs=1))
    assert not other.reused
    assert other.checksum != checksum
    shutil.rmtree(other.path)


def test_release_vectors_and_the_request_embedding_come_from_the_release_encoder(finetuned, monkeypatch):
    from inference.pipeline import InferenceRequest, run_inference

    snapshot = finetuned.snapshot
    encoder = release_encoder(snapshot.documents[DOCUMENT]["checksum"])
    runtime = runtime_for(snapshot)
    assert runtime.encoder is encoder
    assert isinstance(encoder, ReleaseEncoder)
    label_texts = [e["text"] for e in snapshot.documents["label_index"]["entries"]]
    assert np.allclose(snapshot.documents["label_embeddings"], encoder.embed(label_texts), atol=1e-5)
    assert not np.allclose(
        snapshot.documents["label_embeddings"], get_embedder().embed(label_texts), atol=1e-2
    )
    nodes = [f"{snapshot.node(i).title}\n{snapshot.node(i).chunk}" for i in range(snapshot.node_count)]
    assert np.allclose(snapshot.embeddings, encoder.embed(nodes), atol=1e-5)
    assert classifier_from_documents(snapshot.documents) is not None
    assert snapshot.documents["label_classifier"]["l2"] == classifier_module.FINETUNED_L2

    monkeypatch.setattr("ontology.snapshot_registry.pin_snapshot", lambda project_id: snapshot)
    prompt = "i lost my amex card"
    result = run_inference(
        InferenceRequest(
            request_id="r-ft",
            project=SimpleNamespace(pk=snapshot.project_id, slug="tiny-finetune"),
            prompt=prompt,
            context=RequestContext(),
        )
    )
    assert result.error is None
    cosines = snapshot.documents["label_embeddings"] @ encoder.embed_one(prompt)
    ids = [e["label_id"] for e in snapshot.documents["label_index"]["entries"]]
    assert dict(result.weaver.top_k) == {lid: round(float(c), 4) for lid, c in zip(ids, cosines, strict=True)}
    assert result.landing.node_start == finetuned.node_of["card_lost"]


def test_release_encoder_loads_lazily_once_per_process(finetuned):
    release_encoders_clear()
    runtime_cache_clear()
    documents = finetuned.snapshot.documents
    encoder = encoder_for_documents(documents)
    assert not encoder.loaded
    assert runtime_for(finetuned.snapshot).encoder is encoder
    assert not encoder.loaded  # building the runtime does not load the model
    vector = encoder.embed_one("pay the water bill")
    assert encoder.loaded
    assert vector.shape == (384,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert encoder_for_documents(documents) is encoder


def test_an_altered_or_missing_release_encoder_is_refused(finetuned):
    source = Path(settings.DATA_DIR) / ENCODERS_FOLDER / finetuned.snapshot.documents[DOCUMENT]["checksum"]
    forged = source.parent / ("f" * 64)  # the same files under a checksum they do not have
    shutil.copytree(source, forged, dirs_exist_ok=True)
    try:
        with pytest.raises(EmbedderUnavailable, match="checksum mismatch"):
            ReleaseEncoder(checksum="f" * 64).embed(["pay my bill"])
    finally:
        shutil.rmtree(forged)
    with pytest.raises(EmbedderUnavailable, match="not found"):
        ReleaseEncoder(checksum="e" * 64).embed(["pay my bill"])


def test_a_release_without_fine_tuning_uses_the_platform_embedder(demo_snapshot, demo):
    documents = demo_snapshot.documents
    assert DOCUMENT not in documents
    assert demo.encoder is get_embedder()
    assert encoder_for_documents(documents) is get_embedder()
    assert documents["label_classifier"]["kind"] == "softmax"
    assert documents["label_classifier"]["l2"] == classifier_module.FROZEN_L2
    label_texts = [e["text"] for e in documents["label_index"]["entries"]]
    assert np.allclose(documents["label_embeddings"], get_embedder().embed(label_texts), atol=1e-5)


@pytest.mark.parametrize(
    ("mode", "examples", "classes", "wanted"),
    [
        ("off", 15_100, 151, False),
        ("on", 60, 3, True),
        ("on", 60, 1, False),  # nothing to separate
        ("auto", 644, 103, False),  # the demo pack
        ("auto", 15_000, 5_000, False),  # a synthetic release: many examples, 3 per label
        ("auto", 15_100, 151, True),  # CLINC150
    ],
)
def test_finetune_wanted_follows_the_setting(settings, mode, examples, classes, wanted):
    settings.CLASSIFIER_FINETUNE = mode
    labels = [f"L{i % classes:05d}" for i in range(examples)]
    assert finetune_wanted(labels) is wanted


def test_an_unknown_finetune_mode_is_a_configuration_error(settings):
    settings.CLASSIFIER_FINETUNE = "sometimes"
    with pytest.raises(ValueError, match="auto, on or off"):
        finetune_wanted(["a", "b"])


def test_batches_cover_every_example_once_per_epoch_deterministically():
    lengths = np.array([random.Random(i).randint(3, 30) for i in range(1000)])
    params = FinetuneParams(batch_size=32, bucket_batches=5)
    first = _batches(lengths, params, random.Random(0))
    again = _batches(lengths, params, random.Random(0))
    assert first == again
    assert sorted(i for batch in first for i in batch) == list(range(1000))
    assert all(len(batch) <= 32 for batch in first)
    assert max(int(np.ptp(lengths[b])) for b in first) < 27  # length-bucketed: little padding


def test_a_large_taxonomy_gets_a_prototype_classifier(monkeypatch):
    monkeypatch.setattr(classifier_module, "SOFTMAX_BUDGET", 10)
    labels = [
        {"id": f"L0000{k}", "status": "ACTIVE", "examples": [t.format(f) for t in ts for f in FILLERS[:2]]}
        for k, ts in enumerate(TEMPLATES.values(), start=1)
    ]
    entries = [{"label_id": lab["id"], "text": lab["examples"][0]} for lab in labels]
    documents = {"labels": labels, "label_index": {"entries": entries}}
    matrices, docs = train_label_classifier(documents, get_embedder())
    meta = docs["label_classifier"]
    assert meta == {"classes": ["L00001", "L00002", "L00003"], "trained_on": 3 + 3 * 8, "kind": "prototype"}
    assert np.allclose(
        np.linalg.norm(matrices["label_classifier_w"], axis=1), classifier_module.PROTOTYPE_SCALE
    )
    clf = classifier_from_documents(
        {"label_classifier": meta, **{f"matrix:{k}": v for k, v in matrices.items()}}
    )
    probs = clf.probabilities(get_embedder().embed_one("book me a flight to rome"))
    assert clf.classes[int(np.argmax(probs))] == "L00003"


def test_scope_guard_keeps_off_domain_markers_out_of_validated_examples_only(finetuned):
    from inference.runtime import ReleaseRuntime
    from inference.steps.envelope import normalized_for_matching

    runtime = ReleaseRuntime.build(finetuned.snapshot, off_domain_markers=("visa", "tokyo", "joke", "movie"))
    guard = runtime.scope_guard

    def refocused(prompt: str) -> bool:
        return guard.out_of_scope(normalized_for_matching(prompt))

    assert refocused("my visa is blocked") is False  # "visa" is in card_lost's validated examples
    assert refocused("tokyo please") is False  # … "tokyo" in book_flight's
    assert refocused("tell me a joke") is True  # only the "Out of scope" label's examples say "joke"
    assert refocused("recommend a movie") is True  # in no example at all


PREAMBLES = [
    "hello there, i have been a customer of yours for many years and i have always been happy with the "
    "service, but this morning something happened that i really did not expect and i would like some help",
    "good afternoon, i am writing because yesterday evening, after coming back from a long trip abroad "
    "with my family and checking my account on the phone, i noticed something strange and now i need you",
    "hi, sorry to bother you on a weekend, i tried the website and the phone line several times today and "
    "nobody could answer my question, so i am asking here again hoping that someone can finally help me",
    "dear support team, my partner and i share the household finances and we usually handle everything "
    "together, but today i am on my own and i am not sure what to do, so please could you help me out",
]
ENDINGS = {
    "block_card": ["to block my card", "to freeze my debit card", "to cancel my card now", "to stop my card"],
    "pay_bill": [
        "to pay my bill",
        "to settle my invoice",
        "to pay the electricity bill",
        "to pay what i owe",
    ],
}


def test_fine_tuning_reads_past_the_first_32_tokens(tmp_path, settings):
    """Requests longer than 32 tokens (a preamble, then the intent) train on their whole text: two intents
    that differ only after a long shared preamble end up apart in the fine-tuned encoder's space."""
    settings.DATA_DIR = str(tmp_path)
    texts = [f"{p} {e}" for p in PREAMBLES for intent in sorted(ENDINGS) for e in ENDINGS[intent]]
    classes = [intent for _p in PREAMBLES for intent in sorted(ENDINGS) for _e in ENDINGS[intent]]
    found = finetune_encoder(texts, classes, params=FinetuneParams(epochs=3, batch_size=8))
    tuned = ReleaseEncoder(checksum=found.checksum)
    base = get_embedder()

    def centroid_cosine(embedder: Any) -> float:
        x = np.asarray(embedder.embed(texts), dtype=np.float32)
        centroids = [x[[c == intent for c in classes]].mean(axis=0) for intent in sorted(ENDINGS)]
        a, b = (c / np.linalg.norm(c) for c in centroids)
        return float(a @ b)

    before, after = centroid_cosine(base), centroid_cosine(tuned)
    assert after < before - 0.2, (before, after)
