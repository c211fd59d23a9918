"""Term distinctions: what a reviewer taught the Info Registry when a merge was wrong.

A **term distinction** is a project's rule "these two terms name different things" — ``wool`` ≠
``linen``, ``window seat`` ≠ ``aisle seat``, ``food bank`` ≠ ``bin`` — stated by a reviewer while
undoing a false merge (Detach on an InfoUnit page) or resolving an UNSURE pair as DIFFERENT. The
comparator's rules cannot know that two ordinary words of one category are different facts; a
person can, once, and the registry then applies it to every later pair of the project,
in every InfoKey and scope.

*Mentions*: a term is normalized like a canonical statement (``memory.canonical.normalize``, without
label synonyms) and is mentioned by a statement when its words occur there in order, as whole words,
the last one optionally with a plural ``s``/``es``.

*Fires*: a distinction separates two statements when one mentions the first term and not the second,
and the other mentions the second and not the first. The registry then judges the pair DIFFERENT
(method ``VECTOR+RULES``, reason ``distinction: <term> ≠ <term>``), whatever the cosine and the other
rules said: the reviewer's word outranks the rules, never the other way round. A pair that mentions
both terms on one side, or neither, is left to the rules.

A term is a word or a short phrase (≤ 4 words, ≤ 60 characters normalized) and never personal data:
a distinction is shared by the whole project, so the Memory Guard's detector refuses a term in which it
finds any (``term_problem``), as it refuses PII in a GLOBAL memory.

A distinction only ever keeps facts apart, so a wrong one costs duplicates (two units for one fact,
which the staging list and Detach can mend), never a silent false merge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from .canonical import STOPWORDS, normalize

TERM_MAX_CHARS = 60
TERM_MAX_WORDS = 4
SET_MAX_TERMS = 20  # terms of one declared set: at most 190 distinctions
_WORD_RE = re.compile(r"[a-z0-9]+(?:[.:/_-][a-z0-9]+)*%?")


@dataclass(frozen=True)
class Distinction:
    """One rule: ``first`` and ``second`` name different things (stored in sorted order)."""

    first: str
    second: str
    pk: int | None = None

    @property
    def reason(self) -> str:
        return f"distinction: {self.first} ≠ {self.second}"


def term_normalize(text: str) -> str:
    """The normalized form of a reviewer's term ("Window Seats" → "window seats"); "" without words."""
    return " ".join(_WORD_RE.findall(normalize(text or "")))


def term_problem(term: str, given: str = "") -> str:
    """Why ``term`` (normalized from ``given``) cannot be a distinction's term, or "" when it can."""
    if len(given) > 200:
        return "a term is at most 200 characters as typed"
    if not term:
        return "give a word or a short phrase"
    if len(term) > TERM_MAX_CHARS:
        return f"a term is at most {TERM_MAX_CHARS} characters"
    if len(term.split()) > TERM_MAX_WORDS:
        return f"a term is at most {TERM_MAX_WORDS} words: the words that differ, not the sentence"
    from .pii import detect  # a distinction is shared by the whole project, like a GLOBAL memory

    if found := sorted({f.type for f in detect(given or term)}):
        return f"a term may not hold personal data ({', '.join(found)} found)"
    return ""


@lru_cache(maxsize=4096)
def _pattern(term: str) -> re.Pattern[str]:
    parts = [re.escape(word) for word in term.split()]
    parts[-1] += "(?:e?s)?"
    return re.compile(r"(?<![a-z0-9])" + r"\s+".join(parts) + r"(?![a-z0-9])")


def mentions(statement: str, term: str) -> bool:
    """Does the (normalized) ``statement`` mention the (normalized) ``term``? See the module doc."""
    return bool(term) and _pattern(term).search(statement) is not None


def separates(distinction: Distinction, one: str, other: str) -> bool:
    """Does ``distinction`` keep the statements ``one`` and ``other`` apart? See the module doc."""
    a, b = distinction.first, distinction.second
    one_a, one_b = mentions(one, a), mentions(one, b)
    other_a, other_b = mentions(other, a), mentions(other, b)
    return (one_a and not one_b and other_b and not other_a) or (
        one_b and not one_a and other_a and not other_b
    )


def term_set(given: Iterable[object]) -> tuple[list[str], list[str]]:
    """A declared set of mutually distinct terms (the Distinctions page, the review API, a pack's
    ``distinct_terms``): its normalized terms, duplicates and blanks dropped, and the problems that
    refuse it — a term that is not a word or a short phrase (``term_problem``), or fewer than 2 or more
    than ``SET_MAX_TERMS`` different terms."""
    terms: list[str] = []
    problems: list[str] = []
    for raw in given:
        if not isinstance(raw, str):
            problems.append(f"{raw!r}: a term is text")
            continue
        if not raw.strip():
            continue
        term = term_normalize(raw)
        if problem := term_problem(term, raw.strip()):
            problems.append(f"“{raw.strip()}”: {problem}")
        elif term not in terms:
            terms.append(term)
    if not problems and not 2 <= len(terms) <= SET_MAX_TERMS:
        problems.append(f"give 2 to {SET_MAX_TERMS} different terms ({len(terms)} given)")
    return terms, problems


def term_pairs(terms: list[str]) -> list[Distinction]:
    """Every pair of ``terms`` as a distinction (each pair in sorted order)."""
    return [Distinction(min(a, b), max(a, b)) for i, a in enumerate(terms) for b in terms[i + 1 :]]


class Distinctions:
    """A project's distinctions, indexed by the first word of each term: a write looks up only the rules
    whose terms start with a word of its two statements, so a project with thousands of them pays a few
    dictionary lookups per compared pair, not a regex per rule."""

    def __init__(self, rules: Iterable[Distinction] = ()) -> None:
        self.rules = tuple(rules)
        self._order = {rule: i for i, rule in reversed(list(enumerate(self.rules)))}
        self._by_head: dict[str, list[Distinction]] = {}
        for rule in self.rules:
            for term in (rule.first, rule.second):
                bucket = self._by_head.setdefault(term.split()[0], [])
                if rule not in bucket:
                    bucket.append(rule)

    def __len__(self) -> int:
        return len(self.rules)

    def firing(self, one: str, other: str) -> Distinction | None:
        """The first rule (in the order given) that separates the two statements, or ``None``."""
        if not self.rules:
            return None
        relevant: set[Distinction] = set()
        for word in set(_WORD_RE.findall(one)) | set(_WORD_RE.findall(other)):
            for form in _singulars(word):
                relevant.update(self._by_head.get(form, ()))
        for rule in sorted(relevant, key=self._order.__getitem__):
            if separates(rule, one, other):
                return rule
        return None


NO_DISTINCTIONS = Distinctions()


def _singulars(word: str) -> tuple[str, ...]:
    """``word`` and the forms a term's plural ``s``/``es`` could have been added to."""
    forms = [word]
    if word.endswith("s") and len(word) > 1:
        forms.append(word[:-1])
        if word.endswith("es") and len(word) > 2:
            forms.append(word[:-2])
    return tuple(forms)


def term_suggestions(statement: str, other: str) -> list[str]:
    """Words of ``statement`` that ``other`` does not have (in order, no stopwords): what a reviewer is
    offered as the term that differs."""
    theirs = set(_WORD_RE.findall(other))
    out: list[str] = []
    for word in _WORD_RE.findall(statement):
        if word not in theirs and word not in STOPWORDS and word not in out:
            out.append(word)
    return out


def suggestions(unit_statement: str, fact_text: str) -> tuple[list[str], list[str]]:
    """The words a reviewer is offered on each side: (the unit's words the fact lacks, the fact's words
    the unit lacks); ``fact_text`` is normalized here."""
    fact = normalize(fact_text or "")
    return term_suggestions(unit_statement, fact)[:12], term_suggestions(fact, unit_statement)[:12]
