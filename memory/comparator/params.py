"""The vocabulary of a comparator decision.

* ``Verdict`` — the three answers on one pair: SAME (the incoming fact is evidence of the candidate
  InfoUnit), DIFFERENT (it is not), UNSURE (staged for a reviewer);
* ``Method`` — how a verdict was reached (§2.10.5.10, plus the rule-based and exact variants);
* ``RegistryParams`` — the tuned thresholds of the uniqueness decision and its switches (learned model,
  promotions, cross-encoder, WordNet, the identity gate); ``DEFAULT_PARAMS`` is what the registry runs
  with (a project's merge bar, ``memory.models.MergeBar``, replaces its ``identity_slack``:
  ``memory.selectors.registry_params``), ``RULES_ONLY`` and ``LEARNED`` are the two presets the
  benchmarks compare;
* ``Comparison`` — the verdict on one (incoming fact, candidate InfoUnit) pair, with its method and the
  reasons behind it.
"""

from __future__ import annotations

from dataclasses import dataclass


class Verdict:
    """The comparator's answer on one pair."""

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
    learned: bool | None = None  # the learned grey-zone model; None: ``decision.LEARNED_DEFAULT``
    # promote a trivial edit / a number in words / a clean grey zone from UNSURE to SAME (``_promotion``).
    # Off by default: on the v7 held-out pairs (docs/benchmarks.md) it gave +12 recall points, but
    # +3.6 false-merge points, and a false merge silently corrupts what the platform knows.
    promote: bool = False
    promote_edit: float = 0.70  # cosine bar of a trivial minimal-pair edit
    promote_number: float = 0.70  # cosine bar of a number stated in digits on one side only
    promote_grey: float = 0.70  # cosine bar of a grey-zone pair nothing discriminates (no soft reason)
    # the pair cross-encoder of the grey zone (``memory.cross_encoder``, ``cross_decide``);
    # None: ``decision.CROSS_DEFAULT``
    cross: bool | None = None
    # bars chosen leave-one-file-out over v1–v5 (``bench.registry.train_cross_encoder``)
    cross_demote: float = 0.25  # the rules' SAME with P(same) under this → UNSURE (0: never)
    cross_promote: float = 1.01  # the rules' UNSURE with P(same) at or over this → SAME (> 1: never)
    cross_folder: str | None = None  # trained weights to use; None: the default (trained on DEV_FILES)
    # WordNet relations (``memory.lexicon``): antonyms as a hard reason, synonyms explaining an edit
    lexicon: bool = True
    # merge on its own only on evidence close to identity (``memory.comparator.identity``): a SAME whose
    # two wordings leave more than ``identity_slack`` content words unexplained is staged (UNSURE).
    # Slack 2 is the highest development recall with pooled development FMR ≤ 1 % (v1–v8,
    # docs/benchmarks.md); the LLM compare, which reads both statements, is not gated.
    identity: bool = True
    identity_slack: int = 2


DEFAULT_PARAMS = RegistryParams()
RULES_ONLY = RegistryParams(learned=False, cross=False, promote=True)  # the rules with their promotions
# the rules, then the learned model on what they leave open
LEARNED = RegistryParams(learned=True, cross=False)


@dataclass(frozen=True)
class Comparison:
    """The comparator's verdict on one (incoming fact, candidate InfoUnit) pair."""

    verdict: str
    method: str
    reasons: tuple[str, ...] = ()  # the discriminators that fired, e.g. ("numbers: 200 ≠ 500",)
    anchored: bool = False
