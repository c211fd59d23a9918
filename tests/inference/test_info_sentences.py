"""A release carries the sentence vectors of its content nodes (``info_sentences_hook``), so a serving
process reads them instead of embedding every chunk of the release on its first request."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import numpy as np
import pytest

from arg_platform.embedder import get_embedder
from inference.steps.info import (
    DEFAULT_PARAMS,
    SENTENCE_DOCUMENT,
    SENTENCE_MATRIX,
    InfoIndex,
    info_warm_up,
    sentences,
)

pytestmark = pytest.mark.django_db  # the session's demo release is published in the test database


def _content_positions(snapshot) -> list[int]:
    return [
        i for i in range(snapshot.node_count) if snapshot.node(i).type in DEFAULT_PARAMS.context_node_types
    ]


def test_the_release_freezes_one_vector_per_sentence_of_every_content_node(demo_snapshot):
    counts = demo_snapshot.documents[SENTENCE_DOCUMENT]["counts"]
    matrix = demo_snapshot.documents[f"matrix:{SENTENCE_MATRIX}"]
    content = set(_content_positions(demo_snapshot))
    assert len(counts) == demo_snapshot.node_count
    assert counts == [
        len(sentences(demo_snapshot.chunks[i])) if i in content else 0
        for i in range(demo_snapshot.node_count)
    ]
    assert matrix.shape == (sum(counts), 384)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


def test_frozen_vectors_are_the_embedder_vectors_of_the_sentences(demo_snapshot):
    index = InfoIndex.build(demo_snapshot)
    position = _content_positions(demo_snapshot)[3]
    [block] = index.vectors_of(demo_snapshot, [position])
    expected = get_embedder().embed(list(sentences(demo_snapshot.chunks[position])))
    np.testing.assert_allclose(block, expected, atol=1e-5)


def test_warm_up_and_retrieval_read_the_release_without_running_the_model(demo_snapshot):
    embedder = get_embedder()
    embedder.embed_one("load the model before counting its passes")
    index = InfoIndex.build(demo_snapshot)
    passes = embedder.passes
    blocks = index.vectors_of(demo_snapshot, _content_positions(demo_snapshot))
    assert embedder.passes == passes
    assert sum(block.shape[0] for block in blocks) == sum(
        demo_snapshot.documents[SENTENCE_DOCUMENT]["counts"]
    )
    assert info_warm_up(demo_snapshot) == len(_content_positions(demo_snapshot))
    assert embedder.passes == passes


def test_a_release_without_frozen_vectors_embeds_its_sentences_on_first_use(demo_snapshot):
    documents = {
        k: v
        for k, v in demo_snapshot.documents.items()
        if k not in (SENTENCE_DOCUMENT, f"matrix:{SENTENCE_MATRIX}")
    }
    older = replace(demo_snapshot, documents=MappingProxyType(documents))
    index = InfoIndex.build(older)
    assert index.frozen_vectors is None
    position = _content_positions(older)[5]
    [block] = index.vectors_of(older, [position])
    frozen = InfoIndex.build(demo_snapshot).vectors_of(demo_snapshot, [position])[0]
    np.testing.assert_allclose(block, frozen, atol=1e-5)
