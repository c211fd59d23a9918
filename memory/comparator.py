"""The grey-zone comparator of the Info Registry (ARG §2.10.5.7): is fact B the same InfoUnit as A?

Cosine similarity of MiniLM embeddings is high for "same wording, different fact" — a changed number,
an added "not", two swapped entities, an antonym — so the decision never rests on the cosine alone.
``compare`` combines it with deterministic **discriminators** over the canonical forms:

* ``numbers`` / ``versions`` — the multisets of numbers (with units) or versions differ;
* ``polarity`` — negation cues and antonym flips ("enabled" ↔ "disabled", "before" ↔ "after") leave the
  two statements with opposite polarity ("disabled" vs "not enabled" is the *same* polarity; antonyms are
  compared on stems; negation cues are counted only between statements worded alike, see ``_reworded``);
* ``identifiers`` — key identifiers (``inv-2024-001``, ``eu-west-1``) differ on both sides;
* ``values`` — both name a value of the same closed category (channel, language, weekday, month,
  environment, region, plan, role, vendor, …) and the values differ;
* ``swap`` — the same entities appear in a different order around a directional word ("from A to B"
  vs "from B to A", "A over B" vs "B over A"), or exchange the words they follow (their roles), or the
  same content words come in another order that is not a mere rotation of the sentence;
* ``missing_number`` (soft) — one side states a number the other does not: not enough to say DIFFERENT,
  too much to say SAME;
* ``edited`` / ``replaced`` (soft) — the same sentence with a few words edited (the minimal pair), or
  with one span of meaningful words replaced by another however short the sentence ("a shared secret" /
  "a public key").

Decision, for a candidate of cosine ``c`` (``RegistryParams`` holds the tuned thresholds):

* a hard discriminator fires → DIFFERENT (method ``VECTOR+RULES``);
* ``c ≥ strong`` and nothing fires → SAME (``VECTOR_ONLY``);
* ``c ≥ anchored`` and the facts share an anchor (a number, version, identifier or category value, all
  equal) and nothing fires → SAME (``VECTOR+RULES``);
* ``c ≥ grey`` otherwise, when switched on (``RegistryParams.promote``, off by default), a *promotion*
  (``_promotion``) → SAME
  (``VECTOR+RULES``, reason ``promoted: …``): no soft reason at all and ``c ≥ promote_grey``; a minimal-pair
  edit whose words carry no meaning of their own (generic verbs, a moved or re-inflected word, never one
  meaningful word for another nor a critical short word such as "off"/"other") and ``c ≥ promote_edit``;
  a number only one side states in digits while the other says an amount in words ("half a minute") and
  ``c ≥ promote_number``. A promotion never overrides a hard discriminator;
* otherwise → the bounded LLM compare when one is configured ("SAME / DIFFERENT /
  UNSURE" only; ``VECTOR+LLM_COMPARE``), else UNSURE (staged for review);
* below ``grey`` → DIFFERENT (no match).

Then, when the pair cross-encoder is on (``RegistryParams.cross``, default ``CROSS_DEFAULT``; weights
from ``memory.cross_encoder``), its P(same) checks the rules' grey-zone verdicts (``cross_decide``): a SAME
under ``cross_demote`` is staged (UNSURE), an UNSURE at or over ``cross_promote`` without a missing
number or version is merged (``VECTOR+NLI``). Hard discriminators are never overridden; missing weights
leave the rules' verdict (logged).
"""

from __future__ import annotations

import difflib
import functools
import json
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from django.conf import settings

from arg_platform.llm import LlmError, chat_complete

from .canonical import ORDINAL_PREFIX, STOPWORDS, Canonical, words

if TYPE_CHECKING:
    from .lexicon import Lexicon

logger = logging.getLogger(__name__)


class Verdict:
    SAME = "SAME"
    DIFFERENT = "DIFFERENT"
    UNSURE = "UNSURE"


class Method:
    """How a registry decision was reached (§2.10.5.10, plus the rule-based and exact variants)."""

    VECTOR_ONLY = "VECTOR_ONLY"
    VECTOR_RULES = "VECTOR+RULES"
    VECTOR_NLI = "VECTOR+NLI"
    VECTOR_LLM = "VECTOR+LLM_COMPARE"
    VECTOR_LEARNED = "VECTOR+LEARNED"
    SIMHASH_ASSIST = "SIMHASH_ASSIST"
    CANONICAL_EXACT = "CANONICAL_EXACT"
    REVIEW = "REVIEW"

    ALL = (
        VECTOR_ONLY,
        VECTOR_RULES,
        VECTOR_NLI,
        VECTOR_LLM,
        VECTOR_LEARNED,
        SIMHASH_ASSIST,
        CANONICAL_EXACT,
        REVIEW,
    )


@dataclass(frozen=True)
class RegistryParams:
    """Thresholds of the uniqueness decision, tuned on the development pairs (``pairs_v1_tuning``,
    ``pairs_v1_heldout``, ``pairs_v2_heldout``; the promotion bars on v1–v4, leave-one-file-out);
    ``pairs_v5_heldout`` is only measured (docs/benchmarks.md)."""

    strong: float = 0.78  # cosine of a strong match (SAME when no discriminator fires)
    anchored: float = 0.60  # cosine of an anchored match (shared numbers/identifiers/values, all equal)
    grey: float = 0.55  # below: no match
    top_k: int = 5  # candidates kept from the soft recall
    simhash_max_distance: int = 6  # a SimHash neighbour this close joins the candidates
    learned: bool | None = None  # the learned grey-zone model; None: ``LEARNED_DEFAULT``
    # promote a trivial edit / a number in words / a clean grey zone from UNSURE to SAME (``_promotion``).
    # Off by default: on the v7 held-out pairs (docs/benchmarks.md) it gave +12 recall points, but
    # +3.6 false-merge points, and a false merge silently corrupts what the platform knows.
    promote: bool = False
    promote_edit: float = 0.70  # cosine bar of a trivial minimal-pair edit
    promote_number: float = 0.70  # cosine bar of a number stated in digits on one side only
    promote_grey: float = 0.70  # cosine bar of a grey-zone pair nothing discriminates (no soft reason)
    # the pair cross-encoder of the grey zone (``memory.cross_encoder``, ``cross_decide``); None: CROSS_DEFAULT
    cross: bool | None = None
    # bars chosen leave-one-file-out over v1–v5 (``bench.registry.train_cross_encoder``)
    cross_demote: float = 0.25  # the rules' SAME with P(same) under this → UNSURE (0: never)
    cross_promote: float = 1.01  # the rules' UNSURE with P(same) at or over this → SAME (> 1: never)
    cross_folder: str | None = None  # trained weights to use; None: the default (trained on DEV_FILES)
    # WordNet relations (``memory.lexicon``): antonyms as a hard reason, synonyms explaining an edit
    lexicon: bool = True


DEFAULT_PARAMS = RegistryParams()

# The surface forms of each category of values, by canonical value.
VALUE_SURFACES: dict[str, dict[str, tuple[str, ...]]] = {
    "channel": {"email": ("email", "e-mail", "emails", "emailed"), "chat": ("chat",), "slack": ("slack",),
                "sms": ("sms",), "phone": ("phone", "phoned", "telephone"), "teams": ("teams",),
                "pagerduty": ("pagerduty",)},
    "language": {w: (w,) for w in words("english french german spanish italian portuguese dutch japanese")},
    "weekday": {w: (w, w + "s") for w in words("monday tuesday wednesday thursday friday saturday sunday")},
    "month": {**{w: (w,) for w in words("january february march april june july august september "
                                         "october november december")}, "may": ("month-may",)},
    "environment": {"production": ("production", "prod"), "staging": ("staging",),
                    "development": ("development", "dev"), "sandbox": ("sandbox",)},
    "region": {w: (w,) for w in words("eu us uk apac emea frankfurt dublin virginia oregon toronto vancouver")},
    "plan": {w: (w,) for w in words("hobby pro team enterprise")},
    "role": {"owner": ("owner", "owners"), "admin": ("admin", "admins"), "viewer": ("viewer", "viewers"),
             "cto": ("cto",), "member": ("member", "members")},
    "currency": {"usd": ("usd", "dollars"), "eur": ("eur", "euros"), "gbp": ("gbp", "pounds")},
    "timezone": {w: (w,) for w in words("cet utc pacific eastern central gmt pst est")},
    "vendor": {w: (w,) for w in words("okta azure github gitlab bitbucket jira datadog splunk stripe paypal "
                                       "sentry pgbouncer")},
    "format": {"pdf": ("pdf",), "csv": ("csv",), "link": ("link", "links"),
               "attachment": ("attachment", "attachments", "attached")},
    "severity": {w: (w,) for w in words("sev1 sev2 sev3 sev4 p1 p2 p3")},
    "mode": {w: (w,) for w in words("transaction session statement read-only read-write")},
    "ordinal": {},
}  # fmt: skip
VALUE_CATEGORIES: dict[str, dict[str, str]] = {
    category: {surface: canonical for canonical, surfaces in groups.items() for surface in surfaces}
    for category, groups in VALUE_SURFACES.items()
}
# Words whose order around them carries meaning: "A before B", "from A to B", "A over B".
DIRECTIONAL = frozenset(
    words(
        """
        to from over than instead into before after vs versus replaced replaces
        """
    )
)


@dataclass(frozen=True)
class Comparison:
    """The comparator's verdict on one (incoming fact, candidate InfoUnit) pair."""

    verdict: str
    method: str
    reasons: tuple[str, ...] = ()  # the discriminators that fired, e.g. ("numbers: 200 ≠ 500",)
    anchored: bool = False


def _unmatched(
    mine: tuple[tuple[float, str, float], ...], theirs: tuple[tuple[float, str, float], ...]
) -> list[str]:
    """Quantities of ``mine`` with no equal one in ``theirs``; a bare number matches the same number
    written with any unit ("net 30" and "30 days")."""

    def same(x: float, y: float, tolerance: float = 1e-6) -> bool:
        return abs(x - y) <= tolerance * max(1.0, abs(y))

    out = []
    for value, dim, raw in mine:
        # durations agree within 3 %: "30 days" is "a month", "12 months" is "a year"
        tolerance = 0.03 if dim == "time" else 1e-6
        if not any(
            (dim == d and same(value, v, tolerance)) or ((not dim or not d) and same(raw, r))
            for v, d, r in theirs
        ):
            out.append(f"{raw:g} {dim}".strip())
    return out


def _polarity_flips(a: tuple[str, ...], b: tuple[str, ...]) -> list[str]:
    from .canonical import ANTONYM_PAIRS, ANTONYM_PHRASES

    # on stems: "locked" / "unlock", "weekends" / "weekdays" (``_stem`` is defined below)
    sa, sb = {_stem(t) for t in a}, {_stem(t) for t in b}
    flips = []
    for pos, neg in ANTONYM_PAIRS:
        for word, opposite in ((pos, neg), (neg, pos)):
            w, o = _stem(word), _stem(opposite)
            if w != o and w in sa and w not in sb and o in sb and o not in sa:
                if word in CONVERSES and _converse(a, b, word, opposite):
                    continue  # "A before B" / "B after A": the same order of events, told the other way
                flips.append(f"{word} ↔ {opposite}")
    ja, jb = " ".join(a), " ".join(b)
    for pos, neg in ANTONYM_PHRASES:
        for x, y in ((pos, neg), (neg, pos)):
            if x in ja and x not in jb and y in jb and y not in ja:
                flips.append(f"{x} ↔ {y}")
    return flips


# Relations whose antonym is their converse: "A before B" is "B after A", "A more than B" is "B less
# than A".
CONVERSES = frozenset(words("before after more less higher lower greater fewer larger smaller"))


def _converse(a: tuple[str, ...], b: tuple[str, ...], word: str, opposite: str) -> bool:
    """``b`` states ``a`` the other way round: the words on the left of ``word`` in ``a`` stand on the
    right of ``opposite`` in ``b`` and the other way round."""

    def sides(tokens: tuple[str, ...], pivot: str) -> tuple[list[str], list[str]]:
        content = [t for t in tokens if t not in STOPWORDS or t == pivot]
        if pivot not in content:
            return [], []
        i = content.index(pivot)
        return [_stem(t) for t in content[:i][-3:]], [_stem(t) for t in content[i + 1 :][:3]]

    def meet(x: list[str], y: list[str]) -> bool:
        return any(_same_stem(s, t) for s in x for t in y)

    left_a, right_a = sides(a, word)
    left_b, right_b = sides(b, opposite)
    return meet(left_a, right_b) and meet(right_a, left_b)


def _category_values(tokens: tuple[str, ...]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for token in tokens:
        if token.startswith(ORDINAL_PREFIX):
            found.setdefault("ordinal", []).append(token)
            continue
        for category, surfaces in VALUE_CATEGORIES.items():
            if token in surfaces:
                found.setdefault(category, []).append(surfaces[token])
    return found


def _content(tokens: tuple[str, ...]) -> list[str]:
    return [t for t in tokens if t not in STOPWORDS or t in DIRECTIONAL]


COMPARATIVES = frozenset(
    [
        "more",
        "less",
        "higher",
        "lower",
        "greater",
        "fewer",
        "better",
        "worse",
        "larger",
        "smaller",
        "longer",
        "shorter",
    ]
)
DIRECTION_GROUPS = {
    "over": "contrast", "instead": "contrast", "than": "contrast", "to": "to", "into": "to", "from": "from",
    "before": "before", "after": "after", "vs": "vs", "versus": "vs", "replaced": "replaced",
    "replaces": "replaced",
}  # fmt: skip


def _windows(tokens: tuple[str, ...], size: int = 2) -> list[tuple[str, set[str], set[str]]]:
    """(group, left words, right words) around each directional word: up to ``size`` content words."""
    content = _content(tokens)
    out = []
    for i, token in enumerate(content):
        if token in DIRECTIONAL:
            left = [t for t in content[:i] if t not in DIRECTIONAL][-size:]
            right = [t for t in content[i + 1 :] if t not in DIRECTIONAL][:size]
            group = DIRECTION_GROUPS[token]
            if group == "contrast" and (
                (right and right[0][0].isdigit()) or (i > 0 and content[i - 1] in COMPARATIVES)
            ):
                group = "compare"  # "over 1000 usd", "more than 512 mb": a bound, not a contrast
            out.append((group, set(left), set(right)))
    return out


def _contrasted(tokens: tuple[str, ...]) -> set[str]:
    """Words a statement explicitly sets aside: what follows "instead of", "rather than", ", not"."""
    content = _content(tokens)
    out: set[str] = set()
    for i, token in enumerate(content):
        if token == "instead":
            out |= {t for t in content[i + 1 :] if t not in DIRECTIONAL}.intersection(content[i + 1 : i + 3])
    return out


def _bindings(tokens: tuple[str, ...], entities: set[str]) -> dict[str, str]:
    """Each entity → the content word just before it (its role in the sentence)."""
    content = [t for t in _content(tokens) if t not in DIRECTIONAL]
    out: dict[str, str] = {}
    for i, token in enumerate(content):
        if token in entities and token not in out and i > 0:
            out[token] = content[i - 1]
    return out


def _swaps(a: tuple[str, ...], b: tuple[str, ...], entities: set[str]) -> list[str]:
    for group_a, left_a, right_a in _windows(a):
        for group_b, left_b, right_b in _windows(b):
            if group_a != group_b:
                continue
            moved_right, moved_left = (left_a & right_b) - right_a, (right_a & left_b) - left_a
            if moved_right and moved_left:
                return [f"swap: {', '.join(sorted(moved_right))} ⇄ {', '.join(sorted(moved_left))}"]
    if len(entities) >= 2:
        ba, bb = _bindings(a, entities), _bindings(b, entities)
        for x in sorted(entities):
            for y in sorted(entities - {x}):
                if x in bb and y in ba and x in ba and bb[x] == ba[y] and bb[x] != ba[x]:
                    return [f"swap: {x} and {y} exchanged roles"]
    return []


def _stem(token: str) -> str:
    """A light stemmer for comparing wordings: "invoices" / "invoice", "regenerated" / "regenerate"."""
    if len(token) > 4 and token.endswith("ies"):
        token = token[:-3] + "y"
    elif len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        token = token[:-1]
    for suffix in ("ing", "ed"):
        if len(token) > len(suffix) + 3 and token.endswith(suffix):
            token = token[: -len(suffix)]
            break
    return token[:-1] if len(token) > 4 and token.endswith("e") else token


# Discourse words that carry no fact: "Please remember that …" states what "… " states.
FILLERS = frozenset(
    words(
        """
        please remember note noted kindly actually really just keep mind fyi
        """
    )
)


def _wording(tokens: tuple[str, ...]) -> list[str]:
    """Content words (negations kept, fillers dropped), stemmed, in order."""
    from .canonical import NEGATION_CUES

    return [_stem(t) for t in tokens if (t not in STOPWORDS or t in NEGATION_CUES) and t not in FILLERS]


def _exchanged(
    a: list[str], b: list[str], raw_a: tuple[str, ...] = (), raw_b: tuple[str, ...] = ()
) -> list[str]:
    """``b`` is ``a`` with two spans exchanged (roles swapped): "payment down, login up" vs
    "login down, payment up", "account credit over card refund" vs "card refund over account credit".
    ``raw_a`` / ``raw_b`` are the full token sequences (stopwords included), used when the two spans are
    adjacent in the wording."""
    if len(a) != len(b) or sorted(a) != sorted(b) or a == b:
        return []
    first = next(i for i in range(len(a)) if a[i] != b[i])
    last = max(i for i in range(len(a)) if a[i] != b[i])
    region_a, region_b = a[first : last + 1], b[first : last + 1]
    n = len(region_a)
    for x in range(1, n):
        for y in range(1, n - x + 1):
            middle = region_a[x : n - y]
            if region_b != region_a[n - y :] + middle + region_a[:x]:
                continue
            # two spans adjacent in the wording (no middle) are mostly a phrase moved to the front or the
            # back ("every 15 minutes the job runs"); they are two roles swapped only when exchanging them
            # in place in the full sentence gives the other sentence ("by the head, then by finance")
            if middle or _exchanged_in_place(raw_a, raw_b, region_a[:x], region_a[n - y :]):
                return [f"swap: {' '.join(region_a[:x])} ⇄ {' '.join(region_a[n - y :])}"]
    return []


ARTICLES = frozenset(("a", "an", "the"))


def _exchanged_in_place(raw_a: tuple[str, ...], raw_b: tuple[str, ...], x: list[str], y: list[str]) -> bool:
    """Exchanging the spans ``x`` and ``y`` (stems) where they stand in ``raw_a`` gives ``raw_b``
    (articles aside)."""
    ra = [_stem(t) for t in raw_a if t not in ARTICLES]
    rb = [_stem(t) for t in raw_b if t not in ARTICLES]

    def find(span: list[str], start: int = 0) -> int:
        return next((i for i in range(start, len(ra) - len(span) + 1) if ra[i : i + len(span)] == span), -1)

    ix = find(x)
    iy = find(y, ix + len(x)) if ix >= 0 else -1
    if ix < 0 or iy < 0:
        return False
    swapped = ra[:ix] + y + ra[ix + len(x) : iy] + x + ra[iy + len(y) :]
    return swapped == rb


MINIMAL_PAIR_SHARE = 0.65  # share of the wording two statements keep for one to be "the other, edited"
MINIMAL_PAIR_EDITS = 4  # at most this many words changed


Explain = Callable[[list[str], list[str]], tuple[list[str], list[str]]]  # edited words left unexplained


def _substitutions(a: list[str], b: list[str], explain: Explain | None = None) -> list[str]:
    """The same sentence with a few words replaced, added or removed ("blocked writes" vs "blocked
    reads", "the mobile app" vs "the web app"): the edit is what the statement is about, so it is not
    a paraphrase the cosine may vouch for. Empty when the wordings only differ by stopwords, inflection
    or order."""
    if sorted(a) == sorted(b):
        return []
    removed, added, share = _edit(a, b)
    if share >= MINIMAL_PAIR_SHARE and 0 < len(removed) + len(added) <= MINIMAL_PAIR_EDITS:
        if explain is not None and removed and added and explain(removed, added) == ([], []):
            return []  # each edited word has a synonym on the other side
        return [f"edited: {' '.join(removed) or '∅'} → {' '.join(added) or '∅'}"]
    return []


def _replaced_span(a: list[str], b: list[str], explain: Explain | None = None) -> list[str]:
    """The same sentence with one span of up to three meaningful words replaced by other meaningful
    words ("a shared secret" / "a public key", "batch jobs" / "web servers"), however short the
    sentence: one entity for another, which the minimal-pair share misses in short statements. Numbers
    and units are left to the quantity rules."""
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if len(changes) != 1 or changes[0][0] != "replace":
        return []
    _, i1, i2, j1, j2 = changes[0]
    if len(a) - (i2 - i1) < 2:  # at least two words kept
        return []
    removed, added = _no_quantities(a[i1:i2]), _no_quantities(b[j1:j2])
    if explain is not None:
        removed, added = explain(removed, added)
    if (
        0 < len(removed) <= 3
        and 0 < len(added) <= 3
        and _specific(removed, added)
        and _specific(added, removed)
    ):
        return [f"replaced: {' '.join(removed)} → {' '.join(added)}"]
    return []


def _no_quantities(stems: list[str]) -> list[str]:
    from .canonical import DATA_UNITS, TIME_UNITS

    units = {_stem(w) for w in (*TIME_UNITS, *DATA_UNITS)}
    return [w for w in stems if not re.fullmatch(r"[\d.:%]+", w) and w not in units]


REWORDED_EDITS = 4  # words edited besides negation cues for a statement to count as reworded
REWORDED_SHARE = 0.6  # … keeping less than this share of the wording


def _reworded(a: list[str], b: list[str]) -> bool:
    """The two wordings differ well beyond a negation cue: the negation test compares polarity only
    between statements worded alike ("X" / "not X"); in a rewording polarity moves into the words
    ("not expanded" / "disabled", "without any error" / "silently", "no longer sent" / "stop sending"),
    where counting cues would call a paraphrase a contradiction."""
    from .canonical import NEGATION_CUES

    removed, added, share = _edit(a, b)
    edits = [w for w in (*removed, *added) if w not in NEGATION_CUES]
    return len(edits) >= REWORDED_EDITS and share < REWORDED_SHARE


def _edit(a: list[str], b: list[str]) -> tuple[list[str], list[str], float]:
    """(words of ``a`` removed, words of ``b`` added, share of the wording kept) by a word diff."""
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    kept = sum(block.size for block in matcher.get_matching_blocks())
    removed = [
        w for tag, i1, i2, _, _ in matcher.get_opcodes() if tag in ("replace", "delete") for w in a[i1:i2]
    ]
    added = [
        w for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("replace", "insert") for w in b[j1:j2]
    ]
    return removed, added, 2 * kept / max(len(a) + len(b), 1)


# Short words that change a fact on their own ("every other Thursday", "turning off"): an edit that adds
# or removes one is never trivial.
CRITICAL_WORDS = frozenset(
    words(
        """
        off on other only half double extra same different new old least most first last next previous
        again already yet still without except unless
        """
    )
)


def _specific(edited: list[str], other_edit: list[str]) -> list[str]:
    """The edited stems that carry meaning: not a generic verb of wanting/sending/happening, and not a
    word of the same family on the other side of the edit (a moved or re-inflected word). "use" is not
    generic here: "used" / "bypassed" is the fact."""
    return [
        w
        for w in edited
        if (w not in GENERIC_STEMS or w in USE_STEMS) and not any(_same_stem(w, t) for t in other_edit)
    ]


USE_STEMS = frozenset(_stem(w) for w in ("use", "uses", "used", "using"))


def _promotion(a: Canonical, b: Canonical, cosine: float, soft: list[str], params: RegistryParams) -> str:
    """Why a pair the rules would stage (UNSURE) is promoted to SAME, or "" (see ``compare``).

    Only two grey-zone cases, each behind its own cosine bar: a *trivial* minimal-pair edit (the words
    added or removed carry no meaning of their own, or only one side has a meaningful word: never one
    meaningful word replaced by another, never a critical short word), and a number only one side
    states in digits ("half off" / "50 percent") when nothing else differs."""
    if not params.promote or any(r.startswith("missing_version") for r in soft):
        return ""
    if not soft and cosine >= params.promote_grey:
        return "promoted: clean grey zone"
    edits = [r for r in soft if r.startswith("edited:")]
    numbers = [r for r in soft if r == "missing_number"]
    if edits and not numbers and cosine >= params.promote_edit:
        wa, wb = _wording(a.features.tokens), _wording(b.features.tokens)
        removed, added = _edit(wa, wb)[:2]
        critical = {_stem(w) for w in CRITICAL_WORDS}
        lone = [w for w in removed if not any(_same_stem(w, t) for t in added)]
        lone += [w for w in added if not any(_same_stem(w, t) for t in removed)]
        if critical & set(lone):
            return ""
        # a value (weekday, month, channel, …) or a name edited in or out is the fact, however short
        values = {_stem(w) for surfaces in VALUE_CATEGORIES.values() for w in surfaces}
        values |= {_stem(n) for n in (*a.features.names, *b.features.names)}
        if values & set(lone) or any(w.startswith(ORDINAL_PREFIX) for w in lone):
            return ""
        if not (_specific(removed, added) and _specific(added, removed)):
            return "promoted: trivial edit"
    if numbers and not edits and cosine >= params.promote_number:
        fa, fb = a.features, b.features
        # the side without the number must say a quantity in words ("a full day", "half off", "twice")
        for mine, theirs, tokens in ((fa, fb, fb.tokens), (fb, fa, fa.tokens)):
            if _unmatched(mine.quantities, theirs.quantities) and not _quantity_words(tokens):
                return ""
        return "promoted: number in words"
    return ""


def _quantity_words(tokens: tuple[str, ...]) -> set[str]:
    """The words of a statement that state an amount, a unit or a frequency without digits."""
    from .canonical import DATA_UNITS, TIME_UNITS

    units = {_stem(w) for w in (*TIME_UNITS, *DATA_UNITS) if len(w) > 1}
    parts = [p for t in tokens for p in t.split("-")]  # "30-day", "double-counted"
    return {p for p in parts if _stem(p) in units or _stem(p) in QUANTITY_STEMS}


QUANTITY_STEMS = frozenset(
    _stem(w)
    for w in words(
        """
        half halves quarter third double doubles doubled twice triple single one dozen daily weekly monthly
        yearly annual annually hourly nightly fortnight percent gigabyte gigabytes megabyte terabyte
        duplicate duplicated
        """
    )
)


def _transposed(a: tuple[str, ...], b: tuple[str, ...]) -> list[str]:
    """The same sentence with two words exchanged, everything else in place ("nap after lunch, not
    before" / "nap before lunch, not after", "keep purchases but lose access" / "lose purchases but
    keep access"): the two words trade roles. Adjacent words are left alone ("report monthly")."""
    if len(a) != len(b):
        return []
    sa, sb = [_stem(t) for t in a], [_stem(t) for t in b]
    differ = [i for i in range(len(sa)) if sa[i] != sb[i]]
    if len(differ) != 2:
        return []
    i, j = differ
    if j - i > 1 and sa[i] == sb[j] and sa[j] == sb[i]:
        return [f"swap: {a[i]} ⇄ {a[j]}"]
    return []


CONDITION_WORDS = frozenset(words("if when whenever unless"))


def _condition(tokens: tuple[str, ...]) -> str:
    """The condition a statement restricts its fact to: "unless …", or "only" followed by "if" /
    "when" within the next eight words ("only if the client asks", "only mention injuries when parents
    ask")."""
    for i, token in enumerate(tokens):
        if token == "unless":
            return "unless"
        if token == "only":
            for word in tokens[i + 1 : i + 9]:
                if word in ("if", "when"):
                    return f"only … {word}"
    return ""


def _restricted(a: tuple[str, ...], b: tuple[str, ...]) -> list[str]:
    """One side limits the fact to a condition the other does not state at all ("always checked by a
    second translator" / "… only if the client asks", "told about every minor injury" / "only
    mentioned when parents ask"): the condition is the fact, so the pair waits for a reviewer."""
    for mine, theirs in ((a, b), (b, a)):
        condition = _condition(mine)
        if condition and not CONDITION_WORDS & set(theirs):
            return [f"condition on one side only: {condition}"]
    return []


def _originals(tokens: tuple[str, ...]) -> dict[str, str]:
    """stem → the word it was read from (the lexicon needs words, the wording holds stems)."""
    return {_stem(t): t for t in tokens}


def _lexical_flips(a: Canonical, b: Canonical, params: RegistryParams) -> list[str]:
    """Words on one side only that WordNet states as antonyms ("keep" / "lose", "approve" / "reject").
    ``discriminators`` asks only between statements worded alike (as for negations: in a rewording a
    converse verb tells the same event from the other side, "sold through brokers" / "bought via a
    broker", "borrow" / "on loan"); here the two must also have the same polarity (a negation with an
    antonym restates: "not approved" / "rejected"), and a converse relation told the other way round is
    not a flip ("A better than B" / "B worse than A")."""
    lex = _lexicon(params)
    fa, fb = a.features, b.features
    if lex is None or fa.negations % 2 != fb.negations % 2:
        return []
    wa = {_stem(t) for t in fa.tokens if t not in STOPWORDS}
    wb = {_stem(t) for t in fb.tokens if t not in STOPWORDS}
    only_a = [t for t in dict.fromkeys(fa.tokens) if t.isalpha() and _stem(t) in wa - wb]
    only_b = [t for t in dict.fromkeys(fb.tokens) if t.isalpha() and _stem(t) in wb - wa]
    flips = []
    for x in only_a:
        for y in only_b:
            if lex.antonyms(x, y) and not _converse(fa.tokens, fb.tokens, x, y):
                flips.append(f"antonyms (WordNet): {x} ↔ {y}")
    return flips


def _unexplained(
    removed: list[str], added: list[str], a: Canonical, b: Canonical, params: RegistryParams
) -> tuple[list[str], list[str]]:
    """The edited stems no WordNet synonym on the other side of the edit accounts for ("renewed" /
    "extended" explain each other; "archived" / "deleted" do not)."""
    lex = _lexicon(params)
    if lex is None:
        return removed, added
    words_a, words_b = _originals(a.features.tokens), _originals(b.features.tokens)
    x = [words_a.get(w, w) for w in removed]
    y = [words_b.get(w, w) for w in added]
    keep_x = [w for w, word in zip(removed, x, strict=True) if not any(lex.synonyms(word, o) for o in y)]
    keep_y = [w for w, word in zip(added, y, strict=True) if not any(lex.synonyms(word, o) for o in x)]
    return keep_x, keep_y


def _lexicon(params: RegistryParams) -> Lexicon | None:
    if not params.lexicon:
        return None
    from .lexicon import lexicon

    return lexicon()


def discriminators(
    a: Canonical, b: Canonical, params: RegistryParams = DEFAULT_PARAMS
) -> tuple[list[str], list[str], bool]:
    """(hard reasons, soft reasons, anchored) for two canonical facts."""
    fa, fb = a.features, b.features
    hard: list[str] = []
    soft: list[str] = []
    anchors = 0
    only_a, only_b = _unmatched(fa.quantities, fb.quantities), _unmatched(fb.quantities, fa.quantities)
    if only_a and only_b:
        hard.append(f"numbers: {', '.join(only_a)} ≠ {', '.join(only_b)}")
    elif only_a or only_b:
        soft.append("missing_number")
    elif fa.quantities:
        anchors += 1
    if fa.versions != fb.versions:
        if fa.versions and fb.versions:
            hard.append(f"versions: {', '.join(fa.versions)} ≠ {', '.join(fb.versions)}")
        else:
            soft.append("missing_version")
    elif fa.versions:
        anchors += 1
    wa, wb = _wording(fa.tokens), _wording(fb.tokens)
    alike = not _reworded(wa, wb)  # worded alike: polarity and antonyms are compared only then
    flips = _polarity_flips(fa.tokens, fb.tokens) or (_lexical_flips(a, b, params) if alike else [])
    if flips:
        hard.append("antonyms: " + ", ".join(flips))
    if fa.negations % 2 != fb.negations % 2 and alike:
        hard.append(f"negation: {fa.negations} vs {fb.negations}")
    ia, ib = set(fa.identifiers), set(fb.identifiers)
    compact_a, compact_b = (
        re.sub(r"[\W_]", "", " ".join(fa.tokens)),
        re.sub(r"[\W_]", "", " ".join(fb.tokens)),
    )
    lost_a = {x for x in ia if re.sub(r"[\W_]", "", x) not in compact_b}
    lost_b = {x for x in ib if re.sub(r"[\W_]", "", x) not in compact_a}
    if lost_a and lost_b:
        hard.append(f"identifiers: {', '.join(sorted(lost_a))} ≠ {', '.join(sorted(lost_b))}")
    elif ia & ib:
        anchors += 1
    na, nb = set(fa.names), set(fb.names)
    names_lost_a = {x for x in na - nb if re.sub(r"[\W_]", "", x) not in compact_b}
    names_lost_b = {x for x in nb - na if re.sub(r"[\W_]", "", x) not in compact_a}
    if names_lost_a and names_lost_b:
        hard.append(f"names: {', '.join(sorted(names_lost_a))} ≠ {', '.join(sorted(names_lost_b))}")
    ca, cb = _contrasted(fa.tokens), _contrasted(fb.tokens)
    set_aside = (cb & (set(_content(fa.tokens)) - ca)) | (ca & (set(_content(fb.tokens)) - cb))
    if set_aside - DIRECTIONAL:
        hard.append(f"contrast: {', '.join(sorted(set_aside - DIRECTIONAL))} set aside on one side only")
    va, vb = _category_values(fa.tokens), _category_values(fb.tokens)
    entities = (ia & ib) | (na & nb)
    for category in sorted(set(va) & set(vb)):
        xa, xb = set(va[category]), set(vb[category])
        if xa - xb and xb - xa:
            hard.append(f"values ({category}): {', '.join(sorted(xa))} ≠ {', '.join(sorted(xb))}")
        elif xa == xb:
            anchors += 1
            entities |= xa
    hard.extend(
        _swaps(fa.tokens, fb.tokens, entities)
        or _exchanged(wa, wb, fa.tokens, fb.tokens)
        or _transposed(fa.tokens, fb.tokens)
    )
    if not hard:

        def explain(removed: list[str], added: list[str]) -> tuple[list[str], list[str]]:
            return _unexplained(removed, added, a, b, params)

        soft.extend(_substitutions(wa, wb, explain) or _replaced_span(wa, wb, explain))
        soft.extend(_restricted(fa.tokens, fb.tokens))
    return hard, soft, anchors > 0 and not hard


def compare(a: Canonical, b: Canonical, cosine: float, params: RegistryParams = DEFAULT_PARAMS) -> Comparison:
    """SAME / DIFFERENT / UNSURE for the incoming fact ``a`` against candidate ``b`` (see the module doc),
    then, when the cross-encoder is on, its grey-zone check (``cross_decide``)."""
    result = _rules_compare(a, b, cosine, params)
    if result.verdict == Verdict.DIFFERENT or result.method not in (Method.VECTOR_ONLY, Method.VECTOR_RULES):
        return result
    if not (CROSS_DEFAULT if params.cross is None else params.cross):
        return result
    from . import cross_encoder

    if params.cross_folder:
        scorer = cross_encoder.scorer_for(Path(params.cross_folder))
    else:
        scorer = cross_encoder.default_scorer()
    if scorer is None:  # not trained: logged once by the loader; the rules decide alone
        return result
    return cross_decide(result, scorer.probability(a.statement, b.statement), params)


def cross_decide(result: Comparison, p: float, params: RegistryParams) -> Comparison:
    """The cross-encoder's grey-zone check of a rules verdict (hard discriminators have already said
    DIFFERENT and are never overridden): a SAME with ``p < cross_demote`` is staged (UNSURE), an UNSURE
    with ``p ≥ cross_promote`` and no missing number or version is merged (SAME); method ``VECTOR+NLI``
    when the score changed the verdict. The score is kept in the reasons either way."""
    said = f"cross p={p:.3f}"
    if result.verdict == Verdict.SAME and p < params.cross_demote:
        return Comparison(
            Verdict.UNSURE, Method.VECTOR_NLI, (*result.reasons, said, "cross: demoted"), result.anchored
        )
    if (
        result.verdict == Verdict.UNSURE
        and p >= params.cross_promote
        and not any(r.startswith("missing_") for r in result.reasons)
    ):
        return Comparison(
            Verdict.SAME, Method.VECTOR_NLI, (*result.reasons, said, "cross: promoted"), result.anchored
        )
    return Comparison(result.verdict, result.method, (*result.reasons, said), result.anchored)


def _rules_compare(a: Canonical, b: Canonical, cosine: float, params: RegistryParams) -> Comparison:
    """The rules (and the optional learned model / LLM compare) without the cross-encoder."""
    if cosine < params.grey:
        return Comparison(Verdict.DIFFERENT, Method.VECTOR_ONLY, ("below_grey_zone",))
    hard, soft, anchored = discriminators(a, b, params)
    if hard:
        return Comparison(Verdict.DIFFERENT, Method.VECTOR_RULES, tuple(hard))
    use_model = LEARNED_DEFAULT if params.learned is None else params.learned
    model = learned_model() if use_model else None
    if model is not None:
        p = model.probability(pair_features(a, b, cosine))
        said = f"learned p={p:.3f}"
        if p >= model.same:
            # the rules' strong match keeps its name; a match only the model vouches for is VECTOR+LEARNED
            method = Method.VECTOR_ONLY if cosine >= params.strong and not soft else Method.VECTOR_LEARNED
            return Comparison(Verdict.SAME, method, (said,), anchored)
        if p < model.new:
            return Comparison(Verdict.DIFFERENT, Method.VECTOR_LEARNED, (*soft, said), anchored)
        if llm_compare_enabled():
            verdict = llm_compare(a.statement, b.statement)
            return Comparison(verdict, Method.VECTOR_LLM, (*soft, said, "llm"), anchored)
        return Comparison(Verdict.UNSURE, Method.VECTOR_LEARNED, (*soft, said), anchored)
    if cosine >= params.strong and not soft:
        return Comparison(Verdict.SAME, Method.VECTOR_ONLY, (), anchored)
    if cosine >= params.anchored and anchored and not soft:
        return Comparison(Verdict.SAME, Method.VECTOR_RULES, ("anchored",), anchored)
    promoted = _promotion(a, b, cosine, soft, params)
    if promoted:
        return Comparison(Verdict.SAME, Method.VECTOR_RULES, (*soft, promoted), anchored)
    if llm_compare_enabled():
        verdict = llm_compare(a.statement, b.statement)
        return Comparison(verdict, Method.VECTOR_LLM, tuple(soft) + ("llm",), anchored)
    return Comparison(Verdict.UNSURE, Method.VECTOR_RULES, tuple(soft) or ("grey_zone",), anchored)


# --- the optional bounded LLM compare ----------------------------------------------------------------

LLM_COMPARE_INSTRUCTIONS = (
    "Compare this chunk with the canonical description of InfoUnit X. They are the SAME only if they state "
    "the same fact (same numbers, same polarity, same entities in the same roles). "
    "Respond only with: SAME / DIFFERENT / UNSURE."
)


def llm_compare_enabled() -> bool:
    return bool(settings.LLM_URL) and bool(getattr(settings, "MEMORY_LLM_COMPARE", False))


def llm_compare(chunk: str, canonical: str) -> str:
    """The bounded task of §2.10.5.7.2 on the configured OpenAI-compatible endpoint; any error or any
    answer other than the three words is UNSURE."""
    try:
        answer = chat_complete(
            [
                {"role": "system", "content": LLM_COMPARE_INSTRUCTIONS},
                {"role": "user", "content": f"Chunk: {chunk}\nInfoUnit X: {canonical}"},
            ],
            max_tokens=3,
            max_reply_bytes=100_000,
        ).upper()
    except LlmError as exc:
        logger.warning("LLM compare failed, staging as UNSURE: %s", exc)
        return Verdict.UNSURE
    word = re.sub(r"[^A-Z]", "", answer.split()[0]) if answer else ""
    return word if word in (Verdict.SAME, Verdict.DIFFERENT, Verdict.UNSURE) else Verdict.UNSURE


# --- the learned grey-zone model -------------------------------------------------------------------
#
# The rules above say DIFFERENT with high precision; what they cannot say is SAME for a paraphrase that
# rewords a few words ("send" / "want", "went on" / "lasted") without also saying SAME for a hard negative
# that substitutes one key term ("web" / "mobile", "shared secret" / "public key"). ``pair_features``
# measures the *alignment* of the two wordings: which content words only one side has (bag of stems,
# not a diff, so a moved word is not an edit), how many of those carry meaning (not generic verbs of
# wanting, sending, happening), how well each unmatched word finds a counterpart on the other side
# (MiniLM word vectors), and the substitution's own similarity. A logistic model over these features,
# trained at build time on the development pairs only (``bench/registry/train_comparator.py``; weights in
# ``memory/resources/comparator_model.json``), turns them into P(same); two thresholds make it three-way.

# Words whose presence on one side only says little about the fact: how a statement is phrased.
GENERIC_WORDS = frozenset(
    words(
        """
        want wants wanted like likes liked prefer prefers preferred would wish send sends sent go goes went
        gone get gets got use uses used using happen happens happened done make makes made run runs ran
        sit sits live lives based named own owns has have having take takes took come comes came should
        need needs needed ask asked set way thing things case currently usually typically
        """
    )
)
GENERIC_STEMS = frozenset(_stem(w) for w in GENERIC_WORDS)
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


def _same_stem(x: str, y: str) -> bool:
    """Two stems of one word family: equal, one a prefix of the other (≥ 4 letters), or a shared
    prefix of ≥ 6 letters ("paginat" / "pagination", "automat" / "automatically")."""
    if x == y:
        return True
    short, long_ = (x, y) if len(x) <= len(y) else (y, x)
    if len(short) >= 4 and long_.startswith(short):
        return True
    common = 0
    for cx, cy in zip(x, y, strict=False):
        if cx != cy:
            break
        common += 1
    return common >= 6


def _content_words(tokens: tuple[str, ...]) -> dict[str, str]:
    """Stem → the first surface word with that stem: the content words (negations kept, fillers,
    placeholders and bare numbers out; numbers are the quantity rules' business)."""
    from .canonical import NEGATION_CUES

    out: dict[str, str] = {}
    for token in tokens:
        if (token in STOPWORDS and token not in NEGATION_CUES) or token in FILLERS or token.startswith("<"):
            continue
        if re.fullmatch(r"[\d.:%]+", token):
            continue
        out.setdefault(_stem(token), token.removeprefix(ORDINAL_PREFIX))
    return out


def _word_vectors(surfaces: list[str]) -> dict[str, np.ndarray]:
    from arg_platform.embedder import get_embedder

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


RULES_ONLY = RegistryParams(learned=False, cross=False, promote=True)  # the rules with their promotions
LEARNED = RegistryParams(
    learned=True, cross=False
)  # the rules, then the learned model on what they leave open
# Off by default: on the frozen held-out file pairs_v4_heldout.json the learned model gave FMR 2.00 % /
# recall 45.79 % against 1.54 % / 59.81 % for the rules alone (docs/benchmarks.md). ``bench_registry
# --learned`` switches it on for a run.
LEARNED_DEFAULT = False
# The pair cross-encoder's grey-zone check (``memory.cross_encoder``), off by default (docs/benchmarks.md).
CROSS_DEFAULT = False


MODEL_PATH = Path(__file__).resolve().parent / "resources" / "comparator_model.json"


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
