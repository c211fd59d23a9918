"""The per-release text index of the Info answer step.

* a *token* is a content word of a text, lower-cased and lightly stemmed (``tokens``);
* a *sentence* is a piece of a node's chunk that ends a sentence ("e.g." and other abbreviations do
  not end one; ``sentences``);
* the *sentence vectors* of a node are the embeddings of its sentences, in order. A release computes
  them once at publication for every content node (``info_sentences_hook``) and freezes them with its
  documents; a release without them has them embedded on first use, or all at once by
  ``info_warm_up``;
* ``InfoIndex`` is what the step precomputes once per release snapshot: the label phrases C_info's
  lexical component matches, label names, statuses and clusters, typology budgets and the sentence
  vectors (``info_index_for`` keeps one per snapshot).
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ontology.graph_arrays import NODE_TYPE_NAMES
from ontology.graph_snapshot import GraphSnapshot

from .params import DEFAULT_PARAMS, InfoParams

STOPWORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "in"}
    | {"is", "it", "its", "me", "my", "of", "on", "or", "our", "so", "that", "the", "this", "to", "up"}
    | {"was", "we", "what", "when", "where", "which", "who", "why", "will", "with", "you", "your"}
)
ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "approx.", "incl.", "no.")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'“(])")


def tokens(text: str) -> frozenset[str]:
    """Content words, lower-cased, with a light plural stemming (invoices → invoice)."""
    out = set()
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word in STOPWORDS:
            continue
        if len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return frozenset(out)


def sentences(text: str) -> tuple[str, ...]:
    """A chunk split into sentences (abbreviations such as "e.g." do not end one)."""
    pieces = [p.strip() for p in _SENTENCE_END.split(text.strip()) if p.strip()]
    merged: list[str] = []
    for piece in pieces:
        if merged and merged[-1].lower().endswith(ABBREVIATIONS):
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    return tuple(merged)


SENTENCE_MATRIX = "info_sentence_vectors"
SENTENCE_DOCUMENT = "info_sentences"


def info_sentences_hook(arrays: Any, documents: dict[str, Any], embedder: Any) -> tuple[dict, dict]:
    """``ontology.releases.GRAPH_HOOKS`` entry: the sentence vectors of every content node, computed
    once at publication with the release's encoder and frozen with the release (``counts[i]`` sentences
    of node ``i``, in node order, rows of ``info_sentence_vectors``), so that no serving process embeds
    the release's chunks itself — at 100k nodes that is tens of minutes of CPU per process."""
    wanted = DEFAULT_PARAMS.context_node_types
    counts: list[int] = []
    texts: list[str] = []
    for code, chunk in zip(arrays.node_type.tolist(), arrays.chunks, strict=True):
        found = sentences(chunk) if NODE_TYPE_NAMES[code] in wanted else ()
        counts.append(len(found))
        texts.extend(found)
    vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dim), dtype=np.float32)
    return {SENTENCE_MATRIX: vectors}, {SENTENCE_DOCUMENT: {"counts": counts, "node_types": sorted(wanted)}}


@dataclass(frozen=True, eq=False)
class InfoIndex:
    """What step 9 precomputes once per release snapshot. Sentence vectors come from the release
    (``info_sentences_hook``) when it carries them, else they are embedded on first use
    (``info_warm_up`` fills them all at once)."""

    label_phrases: Mapping[str, tuple[tuple[frozenset[str], float], ...]]  # LabelID → (tokens, weight)
    label_names: Mapping[str, str]
    active_labels: frozenset[str]
    label_cluster: Mapping[str, str]
    budgets: Mapping[str, int]  # typology key → complexity budget
    default_typology: str | None
    node_sentences: dict[int, tuple[str, ...]] = field(default_factory=dict)
    node_vectors: dict[int, np.ndarray] = field(default_factory=dict)  # position → sentences × dim
    frozen_ptr: np.ndarray | None = None  # the release's sentence rows of node i: ptr[i]:ptr[i + 1]
    frozen_vectors: np.ndarray | None = None

    @classmethod
    def build(cls, snapshot: GraphSnapshot, params: InfoParams = DEFAULT_PARAMS) -> InfoIndex:
        labels = {label["id"]: label for label in snapshot.documents.get("labels", [])}
        typologies = snapshot.documents.get("typologies", [])

        def phrases(label_id: str) -> tuple[tuple[frozenset[str], float], ...]:
            # the label's own name and synonyms, then its ancestors' (a weaker match)
            out, weight, current, seen = [], 1.0, labels.get(label_id), set()
            while current is not None and current["id"] not in seen:
                seen.add(current["id"])
                for text in [current["name"], *current.get("synonyms", [])]:
                    if found := tokens(text):
                        out.append((found, weight))
                weight = params.ancestor_weight
                current = labels.get(current.get("parent") or "")
            return tuple(out)

        frozen_ptr = frozen_vectors = None
        counts = (snapshot.documents.get(SENTENCE_DOCUMENT) or {}).get("counts")
        matrix = snapshot.documents.get(f"matrix:{SENTENCE_MATRIX}")
        if counts is not None and matrix is not None and len(counts) == snapshot.node_count:
            frozen_ptr = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=frozen_ptr[1:])
            if int(frozen_ptr[-1]) == matrix.shape[0]:
                frozen_vectors = np.asarray(matrix, dtype=np.float32)
                frozen_vectors.setflags(write=False)
            else:
                frozen_ptr = None
        return cls(
            label_phrases={label_id: phrases(label_id) for label_id in labels},
            label_names={label_id: label["name"] for label_id, label in labels.items()},
            active_labels=frozenset(
                label_id for label_id, label in labels.items() if label.get("status", "ACTIVE") == "ACTIVE"
            ),
            label_cluster={label_id: label["cluster"] for label_id, label in labels.items()},
            budgets={t["key"]: int(t.get("complexity_budget") or 0) for t in typologies},
            default_typology=next((t["key"] for t in typologies if t.get("is_default")), None),
            frozen_ptr=frozen_ptr,
            frozen_vectors=frozen_vectors,
        )

    def sentences_of(self, snapshot: GraphSnapshot, position: int) -> tuple[str, ...]:
        found = self.node_sentences.get(position)
        if found is None:
            found = self.node_sentences[position] = sentences(snapshot.chunks[position])
        return found

    def vectors_of(self, snapshot: GraphSnapshot, positions: Sequence[int]) -> list[np.ndarray]:
        """The sentence vectors of each node (embedded in one batch for the nodes not seen yet)."""
        missing = [p for p in dict.fromkeys(positions) if p not in self.node_vectors]
        if missing and self.frozen_vectors is not None and self.frozen_ptr is not None:
            unfrozen = []
            for p in missing:
                start, end = int(self.frozen_ptr[p]), int(self.frozen_ptr[p + 1])
                if end - start == len(self.sentences_of(snapshot, p)):
                    self.node_vectors[p] = self.frozen_vectors[start:end]  # a read-only view
                else:  # a node type the release did not embed
                    unfrozen.append(p)
            missing = unfrozen
        if missing:
            # late: a rare path (a node type the release did not freeze) into the fine-tuning module
            from inference.learning.encoder_finetune import encoder_for_documents

            texts = [text for p in missing for text in self.sentences_of(snapshot, p)]
            embedder = encoder_for_documents(snapshot.documents)  # the release's encoder
            vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dim), dtype=np.float32)
            start = 0
            for p in missing:
                count = len(self.sentences_of(snapshot, p))
                block = np.ascontiguousarray(vectors[start : start + count])
                block.setflags(write=False)
                self.node_vectors[p] = block
                start += count
        return [self.node_vectors[p] for p in positions]


_indexes: weakref.WeakKeyDictionary[GraphSnapshot, InfoIndex] = weakref.WeakKeyDictionary()
_indexes_lock = threading.Lock()


def info_index_for(snapshot: GraphSnapshot) -> InfoIndex:
    index = _indexes.get(snapshot)
    if index is None:
        with _indexes_lock:
            index = _indexes.get(snapshot)
            if index is None:
                index = _indexes[snapshot] = InfoIndex.build(snapshot)
    return index


def info_warm_up(snapshot: GraphSnapshot, params: InfoParams = DEFAULT_PARAMS) -> int:
    """Embed the sentences of every content node of the release now, not on the first request that
    reads them; returns the number of nodes. Call it where a new release is loaded. A release that
    carries its sentence vectors needs no embedding: they are read from it on demand."""
    index = info_index_for(snapshot)
    if index.frozen_ptr is not None:
        return int(np.count_nonzero(np.diff(index.frozen_ptr)))
    codes = [i for i in range(snapshot.node_count) if snapshot.node(i).type in params.context_node_types]
    index.vectors_of(snapshot, codes)
    return len(codes)
