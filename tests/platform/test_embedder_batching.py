"""The embedder's hot path: the same vectors as ``SentenceTransformer.encode``, and concurrent callers
served together by one forward pass instead of queuing one pass each."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from arg_platform.embedder import EmbedderUnavailable, SentenceTransformerEmbedder, get_embedder


def test_vectors_equal_those_of_sentence_transformers_encode():
    embedder = get_embedder()
    texts = ["How do I reset my password?", "invoice missing for March", "a much longer text " * 20]
    fresh = [f"{t} ({id(embedder)})" for t in texts]  # not in the cache
    model = embedder._load()
    expected = model.encode(fresh, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    assert embedder.info().runtime == "onnx"  # the default runtime: the same vectors to float precision
    np.testing.assert_allclose(embedder.embed(fresh), expected, atol=1e-5)


def test_torch_runtime_vectors_are_those_of_encode_bit_for_bit():
    embedder = SentenceTransformerEmbedder(runtime="torch")
    texts = ["How do I reset my password?", "invoice missing for March", "a much longer text " * 20]
    model = embedder._load()
    expected = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    assert embedder.info().runtime == "torch"
    np.testing.assert_array_equal(embedder.embed(texts), expected)


def test_concurrent_prompts_share_forward_passes_and_keep_their_own_vectors():
    embedder = get_embedder()
    prompts = [f"where is my order number {i} today ({id(threading)})" for i in range(24)]
    alone = np.stack([embedder._forward([p])[0] for p in prompts])  # one by one, bypassing the cache
    passes = embedder.passes
    results: dict[str, np.ndarray] = {}
    start = threading.Barrier(6)

    def caller(chunk: list[str]) -> None:
        start.wait()
        for prompt in chunk:
            results[prompt] = embedder.embed_one(prompt)

    threads = [threading.Thread(target=caller, args=(prompts[k::6],)) for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == sorted(prompts)
    assert embedder.passes - passes < len(prompts)  # waiting callers were served together
    np.testing.assert_allclose(np.stack([results[p] for p in prompts]), alone, atol=1e-5)


def test_a_failing_model_fails_every_caller_and_the_next_call_runs_again():
    class Broken(SentenceTransformerEmbedder):
        calls = 0

        def _forward(self, texts: list[str]) -> np.ndarray:
            Broken.calls += 1
            raise EmbedderUnavailable("no model here")

    embedder = Broken()
    with pytest.raises(EmbedderUnavailable):
        embedder.embed_one("first")
    with pytest.raises(EmbedderUnavailable):
        embedder.embed(["second", "third"])
    assert Broken.calls == 2
    assert len(embedder.cache) == 0
