"""Soft reasons: one wording is the other with a few words edited, or with a condition added.

* a *minimal pair* is the same sentence with a few words replaced, added or removed
  (``_substitutions``): the edit is what the statement is about;
* a *replaced span* is one span of up to three meaningful words replaced by others, however short the
  sentence (``_replaced_span``: "a shared secret" / "a public key");
* an edited word is *specific* when it carries meaning: not a generic verb, not a word of the same family
  on the other side (a moved or re-inflected word, ``_specific``);
* two statements are *reworded* when they differ well beyond a negation cue (``_reworded``): polarity
  is then carried by the words, and counting negation cues would misread it;
* a *restricted* fact holds only under a condition ("only if the client asks", "unless …") the other
  side does not state at all (``_restricted``).

An ``Explain`` callback returns the edited words no synonym on the other side accounts for.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

from ..canonical import DATA_UNITS, NEGATION_CUES, TIME_UNITS, words
from .wording import GENERIC_STEMS, USE_STEMS, _edit, _same_stem, _stem

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
    units = {_stem(w) for w in (*TIME_UNITS, *DATA_UNITS)}
    return [w for w in stems if not re.fullmatch(r"[\d.:%]+", w) and w not in units]


REWORDED_EDITS = 4  # words edited besides negation cues for a statement to count as reworded
REWORDED_SHARE = 0.6  # … keeping less than this share of the wording


def _reworded(a: list[str], b: list[str]) -> bool:
    """The two wordings differ well beyond a negation cue: the negation test compares polarity only
    between statements worded alike ("X" / "not X"); in a rewording polarity moves into the words
    ("not expanded" / "disabled", "without any error" / "silently", "no longer sent" / "stop sending"),
    where counting cues would call a paraphrase a contradiction."""
    removed, added, share = _edit(a, b)
    edits = [w for w in (*removed, *added) if w not in NEGATION_CUES]
    return len(edits) >= REWORDED_EDITS and share < REWORDED_SHARE


def _specific(edited: list[str], other_edit: list[str]) -> list[str]:
    """The edited stems that carry meaning: not a generic verb of wanting/sending/happening, and not a
    word of the same family on the other side of the edit (a moved or re-inflected word). "use" is not
    generic here: "used" / "bypassed" is the fact."""
    return [
        w
        for w in edited
        if (w not in GENERIC_STEMS or w in USE_STEMS) and not any(_same_stem(w, t) for t in other_edit)
    ]


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
