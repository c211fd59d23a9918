"""The learned grey-zone model: P(same) for a pair the discriminators leave open.

The discriminators say DIFFERENT with high precision; what they cannot say is SAME for a paraphrase
that rewords a few words ("send" / "want", "went on" / "lasted") without also saying SAME for a hard
negative that substitutes one key term ("web" / "mobile", "shared secret" / "public key").
``pair_features`` measures the *alignment* of the two wordings: which content words only one side has
(bag of stems, not a diff, so a moved word is not an edit), how many of those carry meaning (not generic
verbs of wanting, sending, happening), how well each unmatched word finds a counterpart on the other
side (MiniLM word vectors), and the substitution's own similarity. ``LearnedModel`` is a logistic model
over these features (``FEATURE_NAMES``), trained at build time on the development pairs only
(``bench/registry/train_comparator.py``; weights in ``memory/resources/comparator_model.json``), that
turns them into P(same); its two thresholds make it three-way.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arg_platform.embedder import get_embedder

from ..canonical import NEGATION_CUES, ORDINAL_PREFIX, STOPWORDS, Canonical
from .discriminators import discriminators
from .edits import _substitutions
from .wording import FILLERS, GENERIC_STEMS, _same_stem, _stem, _wording

logger = logging.getLogger(__name__)

FEATURE_NAMES = (
    "cosine",
    "unmatched",
    "specific_replaced",
    "specific_unmatched",
    "jaccard",
    "worst_alignment",
    "mean_alignment",
    "substitution_similarity",
    "missing_quantity",
    "minimal_pair",
    "anchored",
    "length_ratio",
)


def _content_words(tokens: tuple[str, ...]) -> dict[str, str]:
    """Stem → the first surface word with that stem: the content words (negations kept, fillers,
    placeholders and bare numbers out; numbers are the quantity rules' business)."""
    out: dict[str, str] = {}
    for token in tokens:
        if (token in STOPWORDS and token not in NEGATION_CUES) or token in FILLERS or token.startswith("<"):
            continue
        if re.fullmatch(r"[\d.:%]+", token):
            continue
        out.setdefault(_stem(token), token.removeprefix(ORDINAL_PREFIX))
    return out


def _word_vectors(surfaces: list[str]) -> dict[str, np.ndarray]:
    unique = sorted(set(surfaces))
    if not unique:
        return {}
    vectors = get_embedder().embed(unique)
    return {w: np.asarray(v, dtype=np.float32) for w, v in zip(unique, vectors, strict=True)}


def pair_features(a: Canonical, b: Canonical, cosine: float) -> dict[str, float]:
    """The learned model's inputs for two canonical facts (symmetric in ``a`` and ``b``)."""
    ca, cb = _content_words(a.features.tokens), _content_words(b.features.tokens)
    only_a = [s for s in ca if not any(_same_stem(s, t) for t in cb)]
    only_b = [s for s in cb if not any(_same_stem(s, t) for t in ca)]
    spec_a = [s for s in only_a if s not in GENERIC_STEMS]
    spec_b = [s for s in only_b if s not in GENERIC_STEMS]
    vectors = _word_vectors(
        [ca[s] for s in only_a] + [cb[s] for s in only_b] + list(ca.values()) + list(cb.values())
    )

    def best(word: str, others: dict[str, str]) -> float:
        return max((float(vectors[word] @ vectors[o]) for o in others.values()), default=0.0)

    # each meaningful unmatched word's best counterpart among all the other side's words
    alignments = [best(ca[s], cb) for s in spec_a] + [best(cb[s], ca) for s in spec_b]
    substitution = max((float(vectors[ca[x]] @ vectors[cb[y]]) for x in spec_a for y in spec_b), default=0.0)
    union = len(ca) + len(only_b)
    hard, soft, anchored = discriminators(a, b)
    wa, wb = _wording(a.features.tokens), _wording(b.features.tokens)
    return {
        "cosine": float(cosine),
        "unmatched": float(len(only_a) + len(only_b)),
        "specific_replaced": float(min(len(spec_a), len(spec_b))),
        "specific_unmatched": float(len(spec_a) + len(spec_b)),
        "jaccard": (len(ca) - len(only_a)) / union if union else 1.0,
        "worst_alignment": min(alignments, default=1.0),
        "mean_alignment": float(np.mean(alignments)) if alignments else 1.0,
        "substitution_similarity": substitution,
        "missing_quantity": float(any(r in ("missing_number", "missing_version") for r in soft)),
        "minimal_pair": float(bool(_substitutions(wa, wb))),
        "anchored": float(anchored),
        "length_ratio": min(len(ca), len(cb)) / max(len(ca), len(cb), 1),
    }


MODEL_PATH = Path(__file__).resolve().parents[1] / "resources" / "comparator_model.json"


@dataclass(frozen=True)
class LearnedModel:
    """A logistic P(same) over ``FEATURE_NAMES`` (standardized) and its two decision thresholds."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    same: float  # P ≥ same → SAME
    new: float  # P < new → DIFFERENT; in between → UNSURE (review, or the LLM compare when configured)

    def probability(self, features: dict[str, float]) -> float:
        x = np.array([features[name] for name in FEATURE_NAMES], dtype=np.float64)
        z = float(((x - self.mean) / self.scale) @ self.weights + self.bias)
        return 1.0 / (1.0 + math.exp(-z))


@functools.cache
def learned_model() -> LearnedModel | None:
    """The checked-in model, or None when the file is missing or was trained on other features."""
    try:
        data = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    except OSError:
        logger.warning("comparator model %s missing: the rules decide alone", MODEL_PATH)
        return None
    if data.get("features") != list(FEATURE_NAMES):
        logger.warning("comparator model %s has other features: the rules decide alone", MODEL_PATH)
        return None
    return LearnedModel(
        mean=np.array(data["mean"], dtype=np.float64),
        scale=np.array(data["scale"], dtype=np.float64),
        weights=np.array(data["weights"], dtype=np.float64),
        bias=float(data["bias"]),
        same=float(data["same"]),
        new=float(data["new"]),
    )
