"""The discriminators: deterministic reasons why two canonical facts worded alike are not one fact.

``discriminators(a, b)`` returns (hard reasons, soft reasons, anchored). A *hard* reason says DIFFERENT
on its own:

* ``numbers`` / ``versions`` — the multisets of numbers (with units) or versions differ;
* ``antonyms`` / ``negation`` — negation cues and antonym flips ("enabled" ↔ "disabled", "before" ↔
  "after", WordNet antonyms) leave the two statements with opposite polarity ("disabled" vs "not
  enabled" is the *same* polarity; antonyms are compared on stems; negation cues and WordNet antonyms
  are counted only between statements worded alike, see ``edits._reworded``);
* ``identifiers`` / ``names`` — key identifiers (``inv-2024-001``, ``eu-west-1``) or names differ on
  both sides;
* ``contrast`` — one side sets aside ("instead of …") what the other states;
* ``values`` — both name a value of the same closed category (channel, language, weekday, month,
  environment, region, plan, role, vendor, …) and the values differ;
* ``swap`` — the same entities or words in other roles (``order``).

A *soft* reason is not enough to say DIFFERENT and too much to say SAME: ``missing_number`` /
``missing_version`` (one side states a number or version the other does not), ``edited`` /
``replaced`` (a minimal-pair edit or a replaced span no WordNet synonym explains) and a condition on one
side only (``edits``). A pair is *anchored* when the facts share an anchor — a number, version,
identifier or category value, all equal — and no hard reason fires.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..canonical import ANTONYM_PAIRS, ANTONYM_PHRASES, ORDINAL_PREFIX, STOPWORDS, Canonical, words
from .edits import _replaced_span, _restricted, _reworded, _substitutions
from .order import CONVERSES, _contrasted, _converse, _exchanged, _swaps, _transposed
from .params import DEFAULT_PARAMS, RegistryParams
from .wording import DIRECTIONAL, _content, _originals, _stem, _wording

if TYPE_CHECKING:
    from ..lexicon import Lexicon

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
    # on stems: "locked" / "unlock", "weekends" / "weekdays"
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
    from ..lexicon import lexicon

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
