"""Words as the comparator's rules see them.

* a *stem* is a token with its inflection cut off by a light stemmer (``_stem``: "invoices" → "invoic",
  "regenerated" → "regenerat"); two stems are of one *word family* when ``_same_stem`` says so;
* a statement's *wording* (``_wording``) is its stemmed content words in order — negations kept,
  stopwords and discourse *fillers* ("please remember that …") dropped; its *content* (``_content``)
  is its tokens without stopwords but with the *directional* words that give the words around them a
  role ("from A to B");
* ``_edit`` is the word diff of two wordings: the words removed, the words added, the share kept;
* *generic* words say how a statement is phrased (wanting, sending, happening), not what it states.
"""

from __future__ import annotations

import difflib

from ..canonical import NEGATION_CUES, STOPWORDS, words


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
    return [_stem(t) for t in tokens if (t not in STOPWORDS or t in NEGATION_CUES) and t not in FILLERS]


# Words whose order around them carries meaning: "A before B", "from A to B", "A over B".
DIRECTIONAL = frozenset(
    words(
        """
        to from over than instead into before after vs versus replaced replaces
        """
    )
)


def _content(tokens: tuple[str, ...]) -> list[str]:
    return [t for t in tokens if t not in STOPWORDS or t in DIRECTIONAL]


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
# "use" among the generic words, where it is the fact ("used" / "bypassed", ``edits._specific``)
USE_STEMS = frozenset(_stem(w) for w in ("use", "uses", "used", "using"))


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


def _originals(tokens: tuple[str, ...]) -> dict[str, str]:
    """stem → the word it was read from (the lexicon needs words, the wording holds stems)."""
    return {_stem(t): t for t in tokens}
