"""The comparator's decision: SAME, DIFFERENT or UNSURE for an incoming fact against one candidate
InfoUnit of cosine ``c`` (``RegistryParams`` holds the tuned thresholds):

* below ``grey`` → DIFFERENT (no match);
* a hard discriminator fires → DIFFERENT (method ``VECTOR+RULES``);
* ``c ≥ strong`` and nothing fires → SAME (``VECTOR_ONLY``);
* ``c ≥ anchored`` and the facts are anchored (a shared number, version, identifier or category value,
  all equal) and nothing fires → SAME (``VECTOR+RULES``);
* ``c ≥ grey`` otherwise, when switched on (``RegistryParams.promote``, off by default), a *promotion*
  (``_promotion``) → SAME (``VECTOR+RULES``, reason ``promoted: …``): no soft reason at all and
  ``c ≥ promote_grey``; a minimal-pair edit whose words carry no meaning of their own (generic verbs, a
  moved or re-inflected word, never one meaningful word for another nor a *critical* short word such as
  "off"/"other") and ``c ≥ promote_edit``; a number only one side states in digits while the other says
  an amount in words ("half a minute") and ``c ≥ promote_number``. A promotion never overrides a hard
  discriminator;
* otherwise → the bounded LLM compare when one is configured (``llm``; ``VECTOR+LLM_COMPARE``), else
  UNSURE (staged for review).

With the learned grey-zone model on (``RegistryParams.learned``, default ``LEARNED_DEFAULT``;
``learned``), its P(same) decides what the hard discriminators leave open instead of the thresholds
(``VECTOR+LEARNED``).

Then, when the pair cross-encoder is on (``RegistryParams.cross``, default ``CROSS_DEFAULT``; weights
from ``memory.cross_encoder``), its P(same) checks the rules' grey-zone verdicts (``cross_decide``): a SAME
under ``cross_demote`` is staged (UNSURE), an UNSURE at or over ``cross_promote`` without a missing
number or version is merged (``VECTOR+NLI``). Hard discriminators are never overridden; missing weights
leave the rules' verdict (logged).

Last, the *identity gate* (``RegistryParams.identity``, on by default): a SAME not decided by the LLM
compare is kept only when the two wordings are close to identical (``memory.comparator.identity``:
at most ``identity_slack`` content words unexplained); otherwise it is staged (UNSURE) for a reviewer.

``LEARNED_DEFAULT`` and ``CROSS_DEFAULT`` are read at each decision, so a benchmark run may switch them
on here (``bench_registry --learned`` / ``--cross``).
"""

from __future__ import annotations

from pathlib import Path

from ..canonical import DATA_UNITS, ORDINAL_PREFIX, TIME_UNITS, Canonical, words
from .discriminators import VALUE_CATEGORIES, _unmatched, discriminators
from .edits import _specific
from .identity import close_to_identity
from .learned import learned_model, pair_features
from .llm import llm_compare, llm_compare_enabled
from .params import DEFAULT_PARAMS, Comparison, Method, RegistryParams, Verdict
from .wording import _edit, _same_stem, _stem, _wording

# Off by default: on the frozen held-out file pairs_v4_heldout.json the learned model gave FMR 2.00 % /
# recall 45.79 % against 1.54 % / 59.81 % for the rules alone (docs/benchmarks.md). ``bench_registry
# --learned`` switches it on for a run.
LEARNED_DEFAULT = False
# The pair cross-encoder's grey-zone check (``memory.cross_encoder``), off by default (docs/benchmarks.md).
CROSS_DEFAULT = False


def compare(a: Canonical, b: Canonical, cosine: float, params: RegistryParams = DEFAULT_PARAMS) -> Comparison:
    """SAME / DIFFERENT / UNSURE for the incoming fact ``a`` against candidate ``b`` (see the module doc),
    then, when the cross-encoder is on, its grey-zone check (``cross_decide``), then the identity gate
    (``identity_gate``)."""
    return identity_gate(a, b, _cross_compare(a, b, cosine, params), params)


def identity_gate(a: Canonical, b: Canonical, result: Comparison, params: RegistryParams) -> Comparison:
    """A SAME not decided by the LLM compare is kept only on evidence close to identity
    (``memory.comparator.identity``); otherwise it is staged (UNSURE) with the unexplained words as
    its reason."""
    if not params.identity or result.verdict != Verdict.SAME or result.method == Method.VECTOR_LLM:
        return result
    close, reason = close_to_identity(a, b, params)
    if close:
        return result
    return Comparison(Verdict.UNSURE, result.method, (*result.reasons, reason), result.anchored)


def _cross_compare(a: Canonical, b: Canonical, cosine: float, params: RegistryParams) -> Comparison:
    """The rules' verdict, checked by the cross-encoder when it is on."""
    result = _rules_compare(a, b, cosine, params)
    if result.verdict == Verdict.DIFFERENT or result.method not in (Method.VECTOR_ONLY, Method.VECTOR_RULES):
        return result
    if not (CROSS_DEFAULT if params.cross is None else params.cross):
        return result
    from .. import cross_encoder

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
