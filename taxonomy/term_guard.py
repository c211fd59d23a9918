"""Curation guard-rails: terms of one label that collide with another label's.

A *term* is what a label routes on besides its description: its name, each synonym and each example
utterance. Two labels *collide* when a term of one is identical or very close to a term of the other:
the label index then scores both labels alike for the prompts the term covers, so the Context Weaver's
confidence falls (and routing may flip) for prompts that one label alone covered before.

* **identical** — equal after ``normalize_term`` (Unicode NFKC, case-folded, punctuation and runs of
  whitespace collapsed to one space): "Outage!" and "outage" are identical. A write that adds an
  identical term is refused (rule ``taxonomy.term_duplicate``); no flag overrides it, because one text
  cannot route to two labels.
* **similar** — cosine similarity of the platform encoder's embeddings (``arg_platform.embedder``,
  all-MiniLM-L6-v2, unit vectors) at or above ``settings.TERM_SIMILARITY_THRESHOLD`` (0.90 by default:
  near-paraphrases such as "app keeps restarting" / "my app keeps restarting every few minutes").
  A write that adds a similar term is refused (rule ``taxonomy.term_similar``) unless the writer
  confirms it (``accept_similar``); the accepted collision is then reported back as a warning.

Only DEPRECATED labels are left out of the comparison (they route nothing). A *competing label* of a
label is another label whose term centroid (the mean of the unit vectors of its name, synonyms and
examples) is close to this label's; the closest pair of terms shows why.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings

from arg_platform.embedder import EmbedderUnavailable, get_embedder
from arg_platform.errors import RuleViolation, Violation
from projects.models import Project

from .models import LabelStatus
from .selectors import taxonomy_view
from .validator import LabelRecord, TaxonomyView

logger = logging.getLogger(__name__)

RULE_DUPLICATE = "taxonomy.term_duplicate"
RULE_SIMILAR = "taxonomy.term_similar"
TERM_FIELDS = ("synonyms", "examples")
NOUN = {"synonyms": "synonym", "examples": "example", "name": "name"}
_PUNCT = re.compile(r"[^\w\s]+")


def normalize_term(text: str) -> str:
    """The form two terms are compared in for identity: NFKC, case-folded, punctuation → space,
    whitespace runs collapsed."""
    return " ".join(_PUNCT.sub(" ", unicodedata.normalize("NFKC", text).casefold()).split())


@dataclass(frozen=True)
class Term:
    """One routing term of a label: ``kind`` is ``name``, ``synonyms`` or ``examples``."""

    label_id: str
    label_name: str
    kind: str
    text: str

    @property
    def noun(self) -> str:
        """ "name", "synonym" or "example"."""
        return NOUN[self.kind]


@dataclass(frozen=True)
class TermConflict:
    """A new term (``field``, ``text``) of one label and the closest term of another label."""

    field: str  # "synonyms" or "examples": where the new term goes
    text: str
    other: Term
    similarity: float  # cosine in [-1, 1]; 1.0 for identical terms
    identical: bool

    @property
    def rule(self) -> str:
        return RULE_DUPLICATE if self.identical else RULE_SIMILAR

    def message(self) -> str:
        other = self.other
        noun = NOUN[other.kind]
        where = f"{other.label_id} “{other.label_name}”"
        head = (
            f"“{self.text}” is identical to the {noun} “{other.text}” of {where}"
            if self.identical
            else f"“{self.text}” is very close to the {noun} “{other.text}” of {where}"
        )
        tail = (
            "; a text routes to one label — remove it there or word this one differently"
            if self.identical
            else "; both labels would compete for the same prompts — confirm to save it anyway"
        )
        return f"{head} (similarity {self.similarity:.2f}){tail}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "field": self.field,
            "text": self.text,
            "label_id": self.other.label_id,
            "label_name": self.other.label_name,
            "kind": NOUN[self.other.kind],
            "other_text": self.other.text,
            "similarity": round(self.similarity, 4),
            "identical": self.identical,
            "message": self.message(),
        }


class TermConflicts(RuleViolation):
    """A write refused because a new term collides with another label's; the body lists the conflicts."""

    def __init__(self, conflicts: Sequence[TermConflict]) -> None:
        self.conflicts = list(conflicts)
        super().__init__([Violation(c.rule, c.message(), c.field) for c in self.conflicts])

    @property
    def confirmable(self) -> bool:
        """Every conflict is only *similar*: confirming (``accept_similar``) would save the write."""
        return all(not c.identical for c in self.conflicts)

    def as_dict(self) -> dict[str, object]:
        return {**super().as_dict(), "conflicts": [c.as_dict() for c in self.conflicts]}


def similarity_threshold() -> float:
    return float(settings.TERM_SIMILARITY_THRESHOLD)


def label_terms(record: LabelRecord) -> list[Term]:
    """A label's routing terms: its name, synonyms and examples (in that order)."""
    terms = [Term(record.label_id, record.name, "name", record.name)]
    terms += [Term(record.label_id, record.name, "synonyms", s) for s in record.synonyms]
    terms += [Term(record.label_id, record.name, "examples", e) for e in record.examples]
    return terms


def _routing_records(view: TaxonomyView) -> list[LabelRecord]:
    return [r for r in view.labels.values() if r.status != LabelStatus.DEPRECATED]


def routing_term_texts(project: Project) -> list[str]:
    """The distinct texts of every routing term of the project's draft taxonomy: what the checks embed.

    A serving process embeds them at warm-up (``inference.runtime.warm_up_steps``), so the encoder's
    cache already holds them when a curator's first write or label preview is checked."""
    texts = {t.text for r in _routing_records(taxonomy_view(project=project)) for t in label_terms(r)}
    return sorted(texts)


def _vectors(texts: Sequence[str]) -> np.ndarray | None:
    """Unit vectors of ``texts`` from the platform encoder, or None when the encoder cannot load (the
    checks then fall back to identity alone, and say so in the log)."""
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    try:
        return get_embedder().embed(list(texts))
    except EmbedderUnavailable:
        logger.warning("term guard: the encoder is unavailable; only identical terms are checked")
        return None


def term_conflicts(
    view: TaxonomyView,
    *,
    label_id: str,
    new_terms: Mapping[str, Iterable[str]],
    threshold: float | None = None,
) -> list[TermConflict]:
    """The closest colliding term of another label for each new term (``{"synonyms": [...], ...}``).

    ``label_id`` is the label the terms are added to (its own terms never collide with it). A new term
    gets at most one conflict: an identical term if any, else the most similar term at or above the
    threshold."""
    threshold = similarity_threshold() if threshold is None else threshold
    pending = [(f, t) for f in TERM_FIELDS for t in dict.fromkeys(new_terms.get(f, ())) if t.strip()]
    if not pending:
        return []
    others = [t for r in _routing_records(view) if r.label_id != label_id for t in label_terms(r)]
    if not others:
        return []
    by_norm: dict[str, Term] = {}
    for term in others:
        by_norm.setdefault(normalize_term(term.text), term)
    out: list[TermConflict] = []
    similar_needed: list[tuple[str, str]] = []
    for fname, text in pending:
        same = by_norm.get(normalize_term(text))
        if same is not None:
            out.append(TermConflict(fname, text, same, 1.0, True))
        else:
            similar_needed.append((fname, text))
    if similar_needed:
        vectors = _vectors([t.text for t in others] + [t for _, t in similar_needed])
        if vectors is not None:
            other_vecs, new_vecs = vectors[: len(others)], vectors[len(others) :]
            sims = new_vecs @ other_vecs.T
            for (fname, text), row in zip(similar_needed, sims, strict=True):
                best = int(np.argmax(row))
                if float(row[best]) >= threshold:
                    out.append(TermConflict(fname, text, others[best], float(row[best]), False))
    order = {(f, t): i for i, (f, t) in enumerate(pending)}
    return sorted(out, key=lambda c: order[(c.field, c.text)])


@dataclass(frozen=True)
class CrossLabelDuplicate:
    """Two labels sharing an identical or very close term (what the release validator reports)."""

    a: Term
    b: Term
    similarity: float
    identical: bool

    def message(self) -> str:
        how = "the same term" if self.identical else f"very close terms (similarity {self.similarity:.2f})"
        return (
            f"{self.a.label_id} “{self.a.label_name}” and {self.b.label_id} “{self.b.label_name}” share {how}: "
            f"{NOUN[self.a.kind]} “{self.a.text}” / {NOUN[self.b.kind]} “{self.b.text}”"
        )

    def violation(self) -> Violation:
        rule = RULE_DUPLICATE if self.identical else RULE_SIMILAR
        return Violation(rule, self.message(), self.a.kind, f"label:{self.a.label_id}")


def cross_label_duplicates(
    view: TaxonomyView, *, threshold: float | None = None, limit: int = 50
) -> list[CrossLabelDuplicate]:
    """Every pair of labels with an identical or very close term, the closest pair of terms per pair of
    labels, identical ones first, then by decreasing similarity (at most ``limit``)."""
    threshold = similarity_threshold() if threshold is None else threshold
    terms = [t for r in _routing_records(view) for t in label_terms(r)]
    best: dict[tuple[str, str], CrossLabelDuplicate] = {}

    def keep(a: Term, b: Term, sim: float, identical: bool) -> None:
        if a.label_id == b.label_id:
            return
        if a.label_id > b.label_id:
            a, b = b, a
        key = (a.label_id, b.label_id)
        current = best.get(key)
        if current is None or (identical, sim) > (current.identical, current.similarity):
            best[key] = CrossLabelDuplicate(a, b, sim, identical)

    groups: dict[str, list[Term]] = {}
    for term in terms:
        groups.setdefault(normalize_term(term.text), []).append(term)
    for group in groups.values():
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                keep(a, b, 1.0, True)
    vectors = _vectors([t.text for t in terms]) if terms else None
    if vectors is not None and len(terms) > 1:
        ids = np.array([t.label_id for t in terms])
        sims = vectors @ vectors.T
        sims[ids[:, None] == ids[None, :]] = -1.0
        rows, cols = np.nonzero(np.triu(sims >= threshold, k=1))
        for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
            keep(terms[i], terms[j], float(sims[i, j]), False)
    found = sorted(best.values(), key=lambda d: (not d.identical, -d.similarity, d.a.label_id, d.b.label_id))
    return found[:limit]


@dataclass(frozen=True)
class CompetingLabel:
    """Another label close to a given one: centroid cosine and the closest pair of their terms."""

    label_id: str
    name: str
    centroid_similarity: float
    closest_own: Term
    closest_other: Term
    closest_similarity: float


def competing_labels(view: TaxonomyView, *, label_id: str, limit: int = 5) -> list[CompetingLabel]:
    """The ``limit`` labels whose term centroid is closest to ``label_id``'s (highest cosine first).

    Empty when the label is unknown or DEPRECATED, or when the encoder cannot load."""
    records = _routing_records(view)
    own = view.labels.get(label_id)
    if own is None or own.status == LabelStatus.DEPRECATED:
        return []
    others = [r for r in records if r.label_id != label_id]
    if not others:
        return []
    own_terms = label_terms(own)
    other_terms = [label_terms(r) for r in others]
    flat = own_terms + [t for ts in other_terms for t in ts]
    vectors = _vectors([t.text for t in flat])
    if vectors is None:
        return []
    own_vecs = vectors[: len(own_terms)]
    own_centroid = _unit(own_vecs.mean(axis=0))
    out: list[CompetingLabel] = []
    start = len(own_terms)
    for record, terms in zip(others, other_terms, strict=True):
        vecs = vectors[start : start + len(terms)]
        start += len(terms)
        pair = own_vecs @ vecs.T
        i, j = np.unravel_index(int(np.argmax(pair)), pair.shape)
        out.append(
            CompetingLabel(
                label_id=record.label_id,
                name=record.name,
                centroid_similarity=float(own_centroid @ _unit(vecs.mean(axis=0))),
                closest_own=own_terms[int(i)],
                closest_other=terms[int(j)],
                closest_similarity=float(pair[i, j]),
            )
        )
    out.sort(key=lambda c: (-c.centroid_similarity, c.label_id))
    return out[:limit]


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def nearest_other_examples(view: TaxonomyView, *, label_id: str, limit: int = 6) -> list[tuple[Term, float]]:
    """Other labels' examples closest to ``label_id``'s terms: (term, best cosine with one of its
    terms), highest first — the prompts most likely to be confused with this label's."""
    own = view.labels.get(label_id)
    if own is None:
        return []
    own_terms = label_terms(own)
    others = [
        t
        for r in _routing_records(view)
        if r.label_id != label_id
        for t in label_terms(r)
        if t.kind == "examples"
    ]
    if not others:
        return []
    vectors = _vectors([t.text for t in own_terms] + [t.text for t in others])
    if vectors is None:
        return []
    best = (vectors[len(own_terms) :] @ vectors[: len(own_terms)].T).max(axis=1)
    order = sorted(range(len(others)), key=lambda i: (-float(best[i]), others[i].label_id, others[i].text))
    return [(others[i], float(best[i])) for i in order[:limit]]


def draft_term_warnings(*, project: Project) -> list[Violation]:
    """The release validator's report on the project's draft taxonomy: one warning per pair of labels
    sharing an identical or very close term (``cross_label_duplicates``). Publication is not refused:
    a pack may carry such pairs on purpose, and the curator decides."""
    return [d.violation() for d in cross_label_duplicates(taxonomy_view(project=project))]


def examples_at_risk(view: TaxonomyView, *, label_id: str, limit: int = 6) -> list[tuple[Term, float]]:
    """``label_id``'s own examples (its name when it has none) closest to another label's terms: (term,
    best cosine with another label's name, synonym or example), highest first — the ones most likely
    to be routed elsewhere."""
    own = view.labels.get(label_id)
    if own is None:
        return []
    mine = [t for t in label_terms(own) if t.kind == "examples"] or [label_terms(own)[0]]
    others = [t for r in _routing_records(view) if r.label_id != label_id for t in label_terms(r)]
    if not others:
        return [(t, 0.0) for t in mine[:limit]]
    vectors = _vectors([t.text for t in mine] + [t.text for t in others])
    if vectors is None:
        return [(t, 0.0) for t in mine[:limit]]
    best = (vectors[: len(mine)] @ vectors[len(mine) :].T).max(axis=1)
    order = sorted(range(len(mine)), key=lambda i: (-float(best[i]), i))
    return [(mine[i], float(best[i])) for i in order[:limit]]
