"""The ONNX runtime of the encoder: exported once per model checksum, the same vectors as PyTorch,
refused (PyTorch kept) for a model of another shape, re-exported when its file is damaged."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from arg_platform.embedder import SentenceTransformerEmbedder, folder_checksum, get_embedder
from arg_platform.onnx_encoder import ONNX_FOLDER, OnnxEncoder, OnnxUnsupported

TEXTS = [
    "How do I reset my password?",
    "Rechnung für März fehlt — où est ma facture ? 请帮忙",
    "error 0x80070005 when calling POST /v2/orders?id=17&dry_run=true",
    "a very long support message that keeps going " * 60,  # beyond 256 word pieces: truncated
    "ok",
]


@pytest.fixture(scope="module")
def torch_embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(runtime="torch")


def test_onnx_vectors_match_torch_vectors_single_and_batched(torch_embedder):
    onnx = SentenceTransformerEmbedder(runtime="onnx")
    expected = torch_embedder.embed(TEXTS)
    batched = onnx.embed(TEXTS)
    single = np.stack([onnx._forward([text])[0] for text in TEXTS])
    assert onnx.info().runtime == "onnx"
    np.testing.assert_allclose(batched, expected, atol=1e-5)
    np.testing.assert_allclose(single, expected, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)


def test_the_exported_file_is_named_by_the_model_checksum_and_reused():
    embedder = get_embedder()
    embedder.embed_one("load the model")
    path = Path(settings.DATA_DIR) / ONNX_FOLDER / f"{folder_checksum(Path(embedder.model_path()))}.onnx"
    assert embedder._onnx is not None and embedder._onnx.path == path
    before = path.stat().st_mtime_ns
    again = OnnxEncoder(embedder._load(), key=path.stem, folder=path.parent)
    assert path.stat().st_mtime_ns == before  # loaded, not exported again
    np.testing.assert_allclose(again.encode(["reuse"]), embedder._forward(["reuse"]), atol=1e-6)


def test_a_damaged_file_is_exported_again(tmp_path, torch_embedder):
    model = torch_embedder._load()
    (tmp_path / "k.onnx").write_bytes(b"not an onnx graph")
    encoder = OnnxEncoder(model, key="k", folder=tmp_path)
    assert (tmp_path / "k.onnx").stat().st_size > 1_000_000
    np.testing.assert_allclose(encoder.encode(["damaged"]), torch_embedder._forward(["damaged"]), atol=1e-5)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".export-")]  # no temp file left


def test_a_model_with_other_pooling_is_refused_and_torch_runs_it(tmp_path, torch_embedder):
    from sentence_transformers import SentenceTransformer

    model = torch_embedder._load()
    cls_model = SentenceTransformer(modules=[model[0], type(model[1])(384, pooling_mode="cls")], device="cpu")
    with pytest.raises(OnnxUnsupported, match="pooling mode 'cls'"):
        OnnxEncoder(cls_model, key="cls", folder=tmp_path)
    assert not (tmp_path / "cls.onnx").exists()


def test_runtime_setting_chooses_torch(settings):
    settings.EMBEDDER_RUNTIME = "torch"
    assert SentenceTransformerEmbedder().runtime == "torch"
    settings.EMBEDDER_RUNTIME = "onnx"
    assert SentenceTransformerEmbedder().runtime == "onnx"


def test_use_threads_remakes_the_session_with_that_pool(torch_embedder):
    import torch

    embedder = SentenceTransformerEmbedder(runtime="onnx")
    before = embedder.embed(["threads"])
    session = embedder._onnx.session
    previous = torch.get_num_threads()
    try:
        embedder.use_threads(2)
        assert embedder._onnx.session is not session
        assert embedder._onnx.session.get_session_options().intra_op_num_threads == 2
        np.testing.assert_allclose(embedder._forward(["threads"]), before, atol=1e-5)
    finally:
        torch.set_num_threads(previous)
