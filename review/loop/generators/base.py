"""What every candidate generator shares (ARG §3.2, step B): the candidate value, the context, helpers.

A generator is a function ``(context) -> list[Candidate]``. A ``Candidate`` is a typed proposal before
it is stored: its kind, a changeset against the base (active) release, the evidence (counts, examples,
log references), the generator's name and parameters, and what the replay needs to know — which logged
interactions make up its *zone* and where new nodes come from (*lineage*).

Generators only read: the base release (``BaseRelease``), the window's ``Collection`` and the embedder.
Nothing is written until the loop stores the candidates as ``Proposal`` rows.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arg_platform.embedder import get_embedder
from review.changeset import Op
from review.loop.collection import Collection
from review.loop.params import LoopParams
from review.loop.shadow import BaseRelease

_STOPWORDS_TEXT = """a about after again all also am an and any are as at be because been before being but by
can could did do does doing don down during each few for from further get got had has have having he her
here hers him his how i if in into is it its just me more most my no nor not now of off on once only or
other our out over own please same she should so some such than that the their them then there these
they this those through to too under until up very was we were what when where which while who why will
with would you your yours need want help hi hello thanks thank can't cannot i'm im it's dont doesnt isnt
hey yo ok okay pls plz thx every anyone someone something anything really actually still even like know
tell let lets ask guys"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
MAX_LOG_REFS = 30


@dataclass(frozen=True)
class Candidate:
    """A proposal before storage: kind, changeset, evidence and what the replay needs."""

    kind: str
    title: str
    summary: str
    ops: tuple[Op, ...]
    evidence: dict[str, Any]
    generator: dict[str, Any]
    zone_rows: tuple[int, ...] = ()  # collection rows the change is about (replay samples them first)
    lineage: dict[str, tuple[str, ...]] = field(default_factory=dict)  # new/changed node → origin nodes
    subgroups: dict[str, tuple[int, ...]] = field(default_factory=dict)  # split child → its rows
    guard: dict[str, Any] = field(default_factory=dict)  # poisoning / support facts the bins read


@dataclass
class GeneratorContext:
    """Everything a generator reads."""

    project: Any
    base: BaseRelease
    collection: Collection
    params: LoopParams
    seed: int
    _vectors: dict[int, np.ndarray] = field(default_factory=dict)

    def rng(self, salt: str) -> np.random.Generator:
        """A generator-specific seeded RNG (the same night always draws the same samples)."""
        digest = sum((i + 1) * ord(c) for i, c in enumerate(salt))
        return np.random.default_rng([self.seed, digest])

    def prompt_vectors(self, rows: Sequence[int]) -> np.ndarray:
        """Unit embeddings of the prompts of ``rows`` (embedded once per night, cached by text)."""
        missing = [r for r in rows if r not in self._vectors]
        if missing:
            vectors = get_embedder().embed([self.collection.prompts[r] for r in missing])
            for r, v in zip(missing, vectors, strict=True):
                self._vectors[r] = v
        if not rows:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self._vectors[r] for r in rows])

    def sample(self, rows: np.ndarray, limit: int, salt: str) -> np.ndarray:
        """At most ``limit`` of ``rows``, drawn with the night's seed (sorted)."""
        if rows.shape[0] <= limit:
            return rows
        return np.sort(self.rng(salt).choice(rows, size=limit, replace=False))

    def log_refs(self, rows: Iterable[int]) -> list[int]:
        return [int(self.collection.log_ids[r]) for r in list(rows)[:MAX_LOG_REFS]]


def words(text: str) -> list[str]:
    out = []
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word in STOPWORDS or len(word) < 3 or word.isdigit():
            continue
        if len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


def distinctive_words(
    texts: Sequence[str], others: Sequence[str], *, top: int = 3, exclude: Iterable[str] = ()
) -> list[str]:
    """Words frequent in ``texts`` and rare in ``others`` (document frequency ratio), best first."""
    excluded = set(exclude)
    mine = Counter(w for t in texts for w in set(words(t)))
    theirs = Counter(w for t in others for w in set(words(t)))
    n_mine, n_theirs = max(1, len(texts)), max(1, len(others))
    scored = [
        ((count / n_mine) - 0.7 * (theirs.get(word, 0) / n_theirs), word)
        for word, count in mine.items()
        if word not in excluded and count / n_mine >= 0.15
    ]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [w for s, w in scored[:top] if s > 0]


def request_phrase(texts: Sequence[str], medoid: str, *, min_share: float = 0.5, top: int = 4) -> list[str]:
    """The words of ``medoid`` (in its order, stopwords out) that at least ``min_share`` of ``texts`` use:
    a name that reads like the requests ("export invoice bulk accounting"), not a bag of rare words."""
    share = Counter(w for t in texts for w in set(words(t)))
    n = max(1, len(texts))
    out: list[str] = []
    for word in words(medoid):
        if word not in out and share[word] / n >= min_share:
            out.append(word)
    return out[:top]


def sentences(text: str) -> list[str]:
    """A chunk split into sentences (keeps the punctuation)."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])", text.strip())
    return [p.strip() for p in parts if p.strip()]


def sentence_key(sentence: str) -> str:
    """A sentence compared as content: case, spacing and the final punctuation ignored."""
    return " ".join(sentence.casefold().split()).rstrip(".!?")


def keeps_content(whole: str, part: str) -> bool:
    """Every sentence of ``part`` is a sentence of ``whole`` (``sentence_key``): a node with content
    ``whole`` still gives every answer a node with content ``part`` gave (the merged AB and its A, B)."""
    kept = {sentence_key(x) for x in sentences(whole)}
    keys = [k for k in (sentence_key(x) for x in sentences(part)) if k]
    return bool(keys) and all(k in kept for k in keys)


def kmeans(
    x: np.ndarray, k: int, rng: np.random.Generator, *, iterations: int = 30, restarts: int = 4
) -> np.ndarray:
    """Seeded k-means++ (squared Euclidean), best of ``restarts``; returns the assignment."""
    best, best_inertia = np.zeros(x.shape[0], dtype=np.int64), np.inf
    for _ in range(restarts):
        centers = [x[rng.integers(x.shape[0])]]
        for _ in range(1, k):
            d2 = np.min(((x[:, None, :] - np.array(centers)[None, :, :]) ** 2).sum(-1), axis=1)
            total = d2.sum()
            probs = d2 / total if total > 0 else np.full(x.shape[0], 1.0 / x.shape[0])
            centers.append(x[rng.choice(x.shape[0], p=probs)])
        c = np.array(centers)
        assign = np.zeros(x.shape[0], dtype=np.int64)
        for _ in range(iterations):
            d2 = ((x[:, None, :] - c[None, :, :]) ** 2).sum(-1)
            new = d2.argmin(axis=1)
            if np.array_equal(new, assign) and _ > 0:
                break
            assign = new
            for j in range(k):
                members = x[assign == j]
                if members.shape[0]:
                    c[j] = members.mean(axis=0)
        inertia = float(((x - c[assign]) ** 2).sum())
        if inertia < best_inertia:
            best, best_inertia = assign.copy(), inertia
    return best


def silhouette(x: np.ndarray, assign: np.ndarray) -> float:
    """Mean silhouette with cosine distance (x rows unit-norm); 0 for a single cluster."""
    labels = np.unique(assign)
    if labels.shape[0] < 2:
        return 0.0
    dist = 1.0 - np.clip(x @ x.T, -1.0, 1.0)
    scores = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        own = assign == assign[i]
        n_own = own.sum() - 1
        a = dist[i, own].sum() / n_own if n_own > 0 else 0.0
        b = min(dist[i, assign == other].mean() for other in labels if other != assign[i])
        scores[i] = (b - a) / max(a, b) if max(a, b) > 0 else 0.0
    return float(scores.mean())


def unit(v: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def _wilson(successes: int, n: int, z: float) -> tuple[float, float]:
    """The one-sided Wilson score bounds ``(lower, upper)`` of a binomial proportion (``n`` > 0)."""
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - margin) / denominator), min(1.0, (centre + margin) / denominator)


def wilson_lower(successes: int, n: int, z: float) -> float:
    """One-sided Wilson score lower bound of a proportion (0 with no observations)."""
    return _wilson(successes, n, z)[0] if n > 0 else 0.0


def wilson_upper(successes: int, n: int, z: float) -> float:
    """One-sided Wilson score upper bound of a proportion (1 with no observations)."""
    return _wilson(successes, n, z)[1] if n > 0 else 1.0


def derived_node_id(source_id: str, suffix: str, taken: set[str]) -> str:
    """The id of a node made from ``source_id`` (a split child ``.s1``, a merged node ``.m1``): its first
    120 characters + ``suffix``, then ``a``, ``b``… and ``-28``… while the id is ``taken`` (by a node or
    an alias source)."""
    base = f"{source_id[:120]}{suffix}"
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}{chr(ord('a') + n - 2)}" if n <= 27 else f"{base}-{n}"
    return candidate
