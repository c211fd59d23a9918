"""Word order and roles: the same words saying another fact because they stand elsewhere.

* a *directional* word ("to", "from", "over", "before", "instead", …) gives the words on either side a
  role: "from A to B" is not "from B to A";
* a *swap* is the same entities on the other sides of a directional word of the same kind, or two
  entities exchanging the words they follow (``_swaps``), two spans of the wording exchanged
  (``_exchanged``: "payment down, login up" / "login down, payment up"), or two words exchanged with
  everything else in place (``_transposed``);
* a *converse* is a relation whose antonym tells the same order of events the other way round ("A
  before B" / "B after A", ``_converse``): not a polarity flip;
* what a statement *sets aside* (``_contrasted``) follows "instead of".
"""

from __future__ import annotations

from ..canonical import STOPWORDS, words
from .wording import DIRECTIONAL, _content, _same_stem, _stem

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
