"""The ONNX runtime of a sentence-transformers encoder: the same network, run by onnxruntime.

Why: a request embeds one short prompt. In PyTorch that forward pass is dominated by the Python and
dispatcher overhead of ~100 small operators, not by arithmetic (≈ 8 ms for a 15-token prompt on one
core of this machine); onnxruntime runs the same graph, fused, in ≈ 3.5 ms and gives the same vectors
(cosine to PyTorch ≥ 0.99999; tests/platform/test_onnx_encoder.py holds it to 1e-5).

*Export*: the encoder's transformer plus mean pooling plus L2 normalization — the modules of
all-MiniLM-L6-v2 and of the release encoders fine-tuned from it — is traced once per model
(``torch.onnx.export``, TorchScript exporter, dynamic batch and sequence axes) into
``ARG_DATA_DIR/encoders/onnx/<model key>.onnx``; the key is the model folder's content checksum, so a
file is never served for other weights. Concurrent processes may export at once: each writes a temp
file and renames it into place (same bytes either way). A model of another shape (other pooling, extra
modules) is not exported: ``OnnxUnsupported`` and the caller keeps PyTorch.

*Run*: tokenization is the model's own tokenizer (same truncation length), so the input ids are the
ones PyTorch would see. One intra-op thread by default — web workers, not threads, use the cores (see
``gunicorn_conf``).
"""

from __future__ import annotations

import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

ONNX_FOLDER = "encoders/onnx"
OPSET = 17


class OnnxUnsupported(RuntimeError):
    """The model cannot be run by onnxruntime here (package missing, unsupported modules, failed export)."""


def _check_modules(model: Any) -> None:
    """The exported graph is transformer → mean pooling → (normalize): refuse anything else."""
    names = [type(module).__name__ for module in model]
    if not names or names[0] != "Transformer" or names[1:2] != ["Pooling"]:
        raise OnnxUnsupported(f"modules {names}: expected Transformer, Pooling[, Normalize]")
    if any(name != "Normalize" for name in names[2:]):
        raise OnnxUnsupported(f"modules {names}: expected Transformer, Pooling[, Normalize]")
    pooling = model[1]
    mode = getattr(pooling, "pooling_mode", None)  # sentence-transformers 5
    if not isinstance(mode, str):
        mode = getattr(pooling, "get_pooling_mode_str", lambda: "?")()  # 3–4
    if mode != "mean":
        raise OnnxUnsupported(f"pooling mode {mode!r}: only mean pooling is exported")


def _export(model: Any, target: Path) -> None:
    import torch

    _check_modules(model)
    transformer = model[0].auto_model

    class MeanPooledEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    sample = model[0].tokenizer(["an example sentence"], return_tensors="pt")
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=".export-", suffix=".onnx", dir=target.parent)
    os.close(handle)
    try:
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                MeanPooledEncoder().eval(),
                (sample["input_ids"], sample["attention_mask"]),
                temp_name,
                input_names=["input_ids", "attention_mask"],
                output_names=["embedding"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "tokens"},
                    "attention_mask": {0: "batch", 1: "tokens"},
                    "embedding": {0: "batch"},
                },
                opset_version=OPSET,
                dynamo=False,
            )
        os.replace(temp_name, target)
    except Exception as exc:
        raise OnnxUnsupported(f"export failed: {exc}") from exc
    finally:
        if os.path.exists(temp_name):
            os.unlink(temp_name)


class OnnxEncoder:
    """Texts → unit vectors through an onnxruntime session of one sentence-transformers model."""

    def __init__(self, model: Any, *, key: str, folder: Path, threads: int = 1) -> None:
        try:
            import onnxruntime
        except ImportError as exc:
            raise OnnxUnsupported("onnxruntime is not installed") from exc
        _check_modules(model)
        self.path = folder / f"{key}.onnx"
        if not self.path.is_file():
            _export(model, self.path)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        try:
            self.session = onnxruntime.InferenceSession(
                str(self.path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # a damaged file: export again once
            logger.warning("onnx encoder %s unreadable (%s); exporting again", self.path.name, exc)
            self.path.unlink(missing_ok=True)
            _export(model, self.path)
            self.session = onnxruntime.InferenceSession(
                str(self.path), options, providers=["CPUExecutionProvider"]
            )
        self.tokenizer = model[0].tokenizer
        self.max_length = int(model.max_seq_length or 256)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (float32, one row per text) of one padded batch."""
        batch = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="np"
        )
        feeds = {
            "input_ids": batch["input_ids"].astype(np.int64, copy=False),
            "attention_mask": batch["attention_mask"].astype(np.int64, copy=False),
        }
        (vectors,) = self.session.run(None, feeds)
        return vectors.astype(np.float32, copy=False)
