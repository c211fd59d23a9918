"""Step 2 of the online loop (ARG §2.2): lexical-first label candidates under policy constraints.

BM25 (``rank_bm25.BM25Okapi``, k1 = 1.5, b = 0.75) over one document per indexed label (ACTIVE and
SHADOW, as in the release's label index): name, synonyms, description, examples and the names of
its ancestors, tokenized like the prompt (``envelope.matching_tokens``). The index is built once per
release; at request time each query token adds its precomputed per-label BM25 weight (identical to
``BM25Okapi.get_scores``, without its Python loop over every document).

Scores are normalized into [0, 1] by the best score the query could reach: the sum over its tokens
of the token's best weight in any label (an unknown token counts as a word seen once in one label),
so 1.0 means one label holds the strongest match for every word of the prompt, and a prompt whose
words the index does not know scores low everywhere.

``lexical_candidates`` returns ``L_raw`` (top-k labels with a positive score), ``L_raw`` filtered
by the policy constraints, and for the log each dropped label with the constraint type that dropped
it: ``forbidden_label``, ``not_in_allow_list``, or ``shadow`` (SHADOW labels are scored for
evaluation but never routed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from rank_bm25 import BM25Okapi

from inference.contracts import Envelope, LexicalCandidates, PolicyConstraints, PolicyDecision, PolicyState
from inference.steps.envelope import matching_tokens

if TYPE_CHECKING:
    from inference.runtime import ReleaseRuntime

DEFAULT_TOP_K = 20
SCORE_DECIMALS = 6


def label_document(label: Mapping[str, Any], labels: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The BM25 tokens of one label: name, synonyms, description, examples, ancestor names."""
    texts = [label.get("name", ""), *label.get("synonyms", []), label.get("description", "")]
    texts.extend(label.get("examples", []))
    seen = {label["id"]}
    parent = label.get("parent")
    while parent and parent in labels and parent not in seen:
        seen.add(parent)
        texts.append(labels[parent].get("name", ""))
        parent = labels[parent].get("parent")
    return [token for text in texts for token in matching_tokens(text)]


@dataclass(frozen=True, eq=False)
class LexicalIndex:
    """BM25 over the release's indexed labels, as per-token postings ready to add up."""

    label_ids: tuple[str, ...]
    shadow: frozenset[str]
    bm25: BM25Okapi | None
    postings: Mapping[str, tuple[np.ndarray, np.ndarray]]  # token → (label positions, weights)
    best_weight: Mapping[str, float]  # token → its highest weight in any label
    unknown_token_weight: float

    @classmethod
    def build(cls, labels: Mapping[str, Mapping[str, Any]], indexed: Mapping[str, str]) -> LexicalIndex:
        """``indexed`` maps the LabelIDs of the release's label index to their status."""
        label_ids = tuple(sorted(indexed))
        shadow = frozenset(lid for lid in label_ids if indexed[lid] == "SHADOW")
        corpus = [label_document(labels[lid], labels) for lid in label_ids]
        if not any(corpus):
            return cls(label_ids, shadow, None, {}, {}, 0.0)
        bm25 = BM25Okapi(corpus)
        doc_len = np.asarray(bm25.doc_len, dtype=np.float64)
        norm = bm25.k1 * (1 - bm25.b + bm25.b * doc_len / bm25.avgdl)
        positions: dict[str, list[int]] = {}
        for i, frequencies in enumerate(bm25.doc_freqs):
            for token in frequencies:
                positions.setdefault(token, []).append(i)
        postings, best = {}, {}
        for token, where in positions.items():
            idx = np.asarray(where, dtype=np.intp)
            tf = np.asarray([bm25.doc_freqs[i][token] for i in where], dtype=np.float64)
            weights = np.maximum(bm25.idf[token] * tf * (bm25.k1 + 1) / (tf + norm[idx]), 0.0)
            idx.setflags(write=False)
            weights.setflags(write=False)
            postings[token] = (idx, weights)
            best[token] = float(weights.max())
        n = bm25.corpus_size
        unknown = max(math.log(n - 1 + 0.5) - math.log(1 + 0.5), 0.0) if n > 1 else 0.0
        return cls(label_ids, shadow, bm25, postings, best, unknown)

    def raw_scores(self, tokens: tuple[str, ...]) -> np.ndarray:
        """BM25 scores of every indexed label (equal to ``BM25Okapi.get_scores(tokens)``)."""
        scores = np.zeros(len(self.label_ids), dtype=np.float64)
        for token in tokens:
            posting = self.postings.get(token)
            if posting is not None:
                scores[posting[0]] += posting[1]
        return scores

    def scores(self, tokens: tuple[str, ...]) -> np.ndarray:
        """Scores normalized into [0, 1] by the best score the query could reach."""
        reachable = sum(self.best_weight.get(token, self.unknown_token_weight) for token in tokens)
        if reachable <= 0:
            return np.zeros(len(self.label_ids), dtype=np.float64)
        return np.minimum(self.raw_scores(tokens) / reachable, 1.0)

    def top(self, tokens: tuple[str, ...], top_k: int) -> list[tuple[str, float]]:
        """The ``top_k`` best-scored labels with a positive score, ties broken by LabelID."""
        scores = self.scores(tokens)
        hits = np.flatnonzero(scores > 0)
        order = hits[np.argsort(-scores[hits], kind="stable")][:top_k]
        return [(self.label_ids[i], round(float(scores[i]), SCORE_DECIMALS)) for i in order]


def blocking_constraint(label_id: str, constraints: PolicyConstraints, shadow: frozenset[str]) -> str | None:
    """Why a candidate may not be routed to, or None when it may."""
    if label_id in constraints.forbidden_labels:
        return "forbidden_label"
    if constraints.allowed_labels is not None and label_id not in constraints.allowed_labels:
        return "not_in_allow_list"
    if label_id in shadow:
        return "shadow"
    return None


def lexical_candidates(
    envelope: Envelope, decision: PolicyDecision, runtime: ReleaseRuntime, *, top_k: int = DEFAULT_TOP_K
) -> LexicalCandidates:
    """``L_raw``, ``L_raw_policy_filtered`` and the blocked labels with their constraint type.

    A BLOCKed request never reaches retrieval: calling this for one is a programming error.
    """
    if decision.state is PolicyState.BLOCK:
        raise ValueError("lexical candidates requested for a request the Policy Manager blocked")
    index = runtime.lexical
    raw = dict(index.top(matching_tokens(envelope.prompt), top_k))
    filtered: dict[str, float] = {}
    blocked: list[tuple[str, str]] = []
    for label_id, score in raw.items():
        constraint = blocking_constraint(label_id, decision.constraints, index.shadow)
        if constraint is None:
            filtered[label_id] = score
        else:
            blocked.append((label_id, constraint))
    return LexicalCandidates(raw=raw, filtered=filtered, blocked=tuple(blocked))
